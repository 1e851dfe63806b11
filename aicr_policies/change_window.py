"""`change-window`: approve only inside a weekly change window, never inside a blackout.

Settings (policy file, `policies.change-window`):

    timeZone: Europe/Berlin          # IANA name (default UTC); windows and blackout dates are in it
    windows:                         # an approval is allowed inside any of them
      - days: [Mon, Tue, Wed, Thu]   # the days the window opens on
        from: "09:00"                # HH:MM; quote it (YAML reads 17:00 as the number 1020)
        to: "17:00"                  # HH:MM after `from`; "24:00" is the end of the day
    blackouts:                       # never inside one of these, window or not
      - name: year-end freeze
        from: "2026-12-20"           # dates: whole days in timeZone, both included;
        to: "2027-01-04"             # or RFC 3339 times (with an offset): from inclusive, to exclusive
    expiryWithinWindow: false        # true: the approval must also expire before its window closes

Without `windows`, every time outside a blackout is allowed. A window that
spans midnight is two windows (`Mon 22:00-24:00` and `Tue 00:00-06:00`):
windows that touch or overlap count as one, for `expiryWithinWindow` too.

Wall times are read in `timeZone` as Python's zoneinfo reads them (fold 0):
on the autumn day a time occurs twice, a window opens or closes at its first
occurrence; on the spring day a skipped time is read with the offset before
the change (02:30 in Europe/Berlin on that day is 03:30 summer time).
Only approvals are checked: a revocation or an acknowledgement must never
wait for a window.
"""
from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BeforeValidator, Field, PlainValidator, field_validator, model_validator

from aicr_core.plugin import Approval, PolicyContext, SettingsModel, Violation, hookimpl, shown
from aicr_policies._phrasing import duration, listing, local_time

NAME = "change-window"
INACTIVE_UNTIL_CONFIGURED = True
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_FULL_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_FULL_DAYS = {d.lower(): d for d in DAYS} | {full.lower(): d for full, d in zip(_FULL_NAMES, DAYS, strict=True)}
_HHMM = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")
END_OF_DAY = 24 * 60


def _day(value: Any) -> str:
    if isinstance(value, str) and value.strip().lower() in _FULL_DAYS:
        return _FULL_DAYS[value.strip().lower()]
    raise ValueError(f"{shown(value)} is not a day: use {', '.join(DAYS)}")


def _minute_of_day(value: Any) -> int:
    """'09:30' -> 570; '24:00' -> 1440 (the end of the day)."""
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError(f"{value} is a number: quote times (\"17:00\"), since YAML reads an unquoted "
                         "17:00 as the number 1020")
    if value == "24:00":
        return END_OF_DAY
    match = _HHMM.fullmatch(value) if isinstance(value, str) else None
    if not match:
        raise ValueError(f"{shown(value)} is not a time of day HH:MM (00:00 to 24:00)")
    return int(match.group(1)) * 60 + int(match.group(2))


def _moment(value: Any) -> date:
    """A blackout bound: a date (a whole day) or an RFC 3339 time with an offset (YAML may hand either)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"{value.isoformat()} has no offset: write it as RFC 3339 (2026-12-20T18:00:00Z)")
        return value.astimezone(timezone.utc)
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        raise ValueError(f"{shown(value)} is neither a date (2026-12-20) nor an RFC 3339 time")
    text = value.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{shown(value)} is not a date") from None
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})", text):
        raise ValueError(f"{shown(value)} is neither a date (2026-12-20) nor an RFC 3339 time with an offset "
                         "(2026-12-20T18:00:00Z)")
    try:
        return datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        raise ValueError(f"{shown(value)} is not a valid time") from None


def _zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{shown(name)} is not an IANA time zone (such as Europe/Berlin or UTC)") from None
    return name


Day = Annotated[str, BeforeValidator(_day)]
MinuteOfDay = Annotated[int, BeforeValidator(_minute_of_day)]
Moment = Annotated[date, PlainValidator(_moment)]  # a date, or a datetime (a subclass)


class Window(SettingsModel):
    days: list[Day] = Field(min_length=1)
    start: MinuteOfDay = Field(alias="from")
    end: MinuteOfDay = Field(alias="to")

    @field_validator("start")
    @classmethod
    def _opens_within_the_day(cls, start: int) -> int:
        if start == END_OF_DAY:
            raise ValueError("a window cannot open at 24:00; use 00:00 of the next day")
        return start

    @field_validator("end")
    @classmethod
    def _after_from(cls, end: int, info: Any) -> int:
        start = info.data.get("start")
        if start is not None and end <= start:
            raise ValueError(f"{_hhmm(end)} is not after from ({_hhmm(start)}); a window across midnight "
                             "is two windows (to \"24:00\", then from \"00:00\" the next day)")
        return end

    def text(self) -> str:
        return f"{','.join(self.days)} {_hhmm(self.start)}-{_hhmm(self.end)}"


class Blackout(SettingsModel):
    name: Annotated[str, AfterValidator(lambda s: s if s.strip() else _fail("must not be empty"))]
    start: Moment = Field(alias="from")
    end: Moment = Field(alias="to")

    @field_validator("end")
    @classmethod
    def _not_before_from(cls, end: date, info: Any) -> date:
        start = info.data.get("start")
        if start is None:
            return end
        if isinstance(start, datetime) != isinstance(end, datetime):
            raise ValueError("from and to must both be dates or both be RFC 3339 times")
        if end < start or (isinstance(end, datetime) and end == start):
            raise ValueError(f"{_moment_text(end)} is before from ({_moment_text(start)})")
        return end

    def interval(self, zone: ZoneInfo) -> tuple[datetime, datetime]:
        """[start, end) in UTC; dates are whole days in `zone`, `to` included."""
        if isinstance(self.start, datetime) and isinstance(self.end, datetime):
            return self.start, self.end
        return _instant(self.start, 0, zone), _instant(self.end + timedelta(days=1), 0, zone)

    def text(self) -> str:
        return f"{self.name!r} ({_moment_text(self.start)} to {_moment_text(self.end)})"


class Settings(SettingsModel):
    time_zone: Annotated[str, AfterValidator(_zone)] = Field(default="UTC", alias="timeZone")
    windows: list[Window] = []
    blackouts: list[Blackout] = []
    expiry_within_window: bool = Field(default=False, alias="expiryWithinWindow", strict=True)

    @model_validator(mode="after")
    def _says_something(self) -> Settings:
        if not self.windows and not self.blackouts:
            raise ValueError("set windows, blackouts or both (an empty change-window allows everything)")
        return self

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)


SETTINGS_MODEL = Settings


@hookimpl
def aicr_pre_approve(approval: Approval, context: PolicyContext) -> Violation | None:
    settings: Settings = context.settings
    now = context.now or datetime.now(timezone.utc)
    zone = settings.zone
    facts = {"now": local_time(now, zone), "timeZone": settings.time_zone,
             "windows": "; ".join(w.text() for w in settings.windows) or "(any time)"}
    blackout = blackout_at(settings, now)
    if blackout is not None:
        return Violation(NAME, f"it is {local_time(now, zone)}, inside the blackout {blackout.text()}",
                         {**facts, "blackout": blackout.text()})
    if settings.windows and window_end(settings, now, limit=now) is None:
        return Violation(NAME, f"it is {local_time(now, zone)}, outside every change window "
                               f"({listing(w.text() for w in settings.windows)} {settings.time_zone})", facts)
    if not settings.expiry_within_window:
        return None
    closes, why = open_until(settings, now, approval.expires)
    if closes is not None and approval.expires > closes:
        return Violation(NAME, f"the approval would expire at {local_time(approval.expires, zone)}, after {why} "
                               f"at {local_time(closes, zone)}; pass --expires {duration(closes - now)} or less",
                         {**facts, "expires": local_time(approval.expires, zone), "closes": local_time(closes, zone)})
    return None


def blackout_at(settings: Settings, moment: datetime) -> Blackout | None:
    for blackout in settings.blackouts:
        start, end = blackout.interval(settings.zone)
        if start <= moment < end:
            return blackout
    return None


def window_end(settings: Settings, moment: datetime, limit: datetime) -> datetime | None:
    """When the windows open at `moment` close (touching or overlapping windows are one); None if closed.

    Follows the windows no further than `limit` (windows around the clock never
    close): a result after `limit` means "not before `limit`".
    """
    end = None
    for start, stop in _instances_around(settings, moment):
        if start <= moment < stop:
            end = max(end or stop, stop)
    while end is not None and end <= limit:
        later = [stop for start, stop in _instances_around(settings, end) if start <= end < stop]
        if not later:
            break
        end = max(later)
    return end


def open_until(settings: Settings, moment: datetime, limit: datetime) -> tuple[datetime | None, str]:
    """When approving stops being allowed after `moment`, and why: its window closes or a blackout starts.

    (None, "") when neither happens before `limit`.
    """
    ends = [(start, f"the blackout {b.text()} starts") for b in settings.blackouts
            for start, _ in [b.interval(settings.zone)] if moment < start]
    if settings.windows:
        closes = window_end(settings, moment, limit)
        ends.append((closes if closes is not None else moment, "its window closes"))
    first = min(ends, default=None, key=lambda end: end[0])
    return first if first is not None and first[0] <= limit else (None, "")


def _instances_around(settings: Settings, moment: datetime) -> list[tuple[datetime, datetime]]:
    """[open, close) in UTC of every window opening on the local day of `moment` or the day before."""
    today = moment.astimezone(settings.zone).date()
    instances = []
    for day in (today - timedelta(days=1), today):
        name = DAYS[day.weekday()]
        instances += [(_instant(day, w.start, settings.zone), _instant(day, w.end, settings.zone))
                      for w in settings.windows if name in w.days]
    return instances


def _instant(day: date, minute: int, zone: ZoneInfo) -> datetime:
    """The UTC instant of wall time `minute` on `day` in `zone` (fold 0, as documented above)."""
    if minute >= END_OF_DAY:
        day, minute = day + timedelta(days=minute // END_OF_DAY), minute % END_OF_DAY
    local = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=zone)
    return local.astimezone(timezone.utc)


def _hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def _moment_text(moment: date) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(moment, datetime) else moment.isoformat()


def _fail(message: str) -> str:
    raise ValueError(message)
