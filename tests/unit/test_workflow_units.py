"""Pure logic of list, wait, the watch, the stream rendering and the policy instant, with fakes (the real thing
is tested e2e)."""
from __future__ import annotations

import datetime as dt
import io
import math
from collections.abc import Iterator
from typing import Any

import pytest
from testfixtures import LogCapture, Replacer, ShouldRaise, compare, mock_datetime

from aicr_commands import wait
from aicr_core import clock
from aicr_core import testing as kit
from aicr_core.domain import assessments, rollouts
from aicr_core.domain import operator_api as api
from aicr_core.domain.actions import APPROVE
from aicr_core.domain.hookspecs import PolicyContext
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.domain.write_decision import decide_write
from aicr_core.errors import AicrError, Code
from aicr_core.framework.app import CLEAR_SCREEN, AicrApp
from aicr_core.framework.result import Progress, Result, Stream
from aicr_core.session import watch
from aicr_core.session.deadline import Deadline
from aicr_renderers import human_durations as durations
from aicr_renderers.json import JsonRenderer
from aicr_renderers.text import TextRenderer

from support.samples import rollout

NOW = dt.datetime(2026, 11, 30, 3, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("seconds,text", [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (125, "2m5s"), (600, "10m"),
    (130 * 60, "130m"), (3 * 3600, "3h"), (3 * 3600 + 300, "3h5m"), (8 * 3600, "8h"), (47 * 3600, "47h"),
    (48 * 3600, "2d"), (49 * 3600, "2d1h"), (8 * 86400, "8d"), (400 * 86400, "400d"),
    (2 * 365 * 86400 + 10 * 86400, "2y10d"), (9 * 365 * 86400, "9y"),
])
def test_age_reads_as_kubectl_prints_it(seconds: int, text: str) -> None:
    compare(durations.age(seconds), expected=text)


@pytest.mark.parametrize("seconds,text", [
    (2 * 3600 + 10 * 60 + 30, "2h10m"), (3 * 86400 + 4 * 3600 + 300, "3d4h"), (45 * 60, "45m"), (30, "30s"),
    (7200, "2h"), (0, "0s"), (-3, "0s"), (86400 + 59, "1d"),
])
def test_countdown(seconds: int, text: str) -> None:
    compare(durations.countdown(seconds), expected=text)


def test_worst_verdict() -> None:
    compare(assessments.worst_verdict(["safe", "manual", "unversioned"]), expected="manual")
    compare(assessments.worst_verdict(["safe", "blocked", "unknown"]), expected="blocked")
    compare(assessments.worst_verdict(["safe", "made-up"]), expected="unknown")  # not AICR's: counts as unknown
    compare(assessments.worst_verdict([]), expected="unknown")  # assesses nothing: shows nothing is safe


@pytest.mark.parametrize("text,phase", [("approval", None), ("ended", None), ("phase=Validating", "Validating")])
def test_conditions_parse(text: str, phase: str | None) -> None:
    compare((wait.parse_condition(text).name, wait.parse_condition(text).phase), expected=(text, phase))


def test_conditions() -> None:
    approval = {"user": "bob", "expires": "2026-11-30T06:00:00Z", "reason": "r"}
    pending = parse_rollout(rollout())
    approved = parse_rollout(rollout(approval=approval))
    revoked = parse_rollout(rollout(approval=approval, revocation={
        "user": "alice", "time": "2026-11-30T02:00:00Z", "reason": "r"}))
    later = NOW + dt.timedelta(hours=4)  # the approval has expired by then
    for name, r, when, holds, never in [
        ("approval", pending, NOW, False, None),
        ("approval", revoked, NOW, True, None),
        ("approved", approved, NOW, True, None),
        ("approved", approved, later, False, "was approved by bob until 2026-11-30T06:00:00Z, which has passed"),
        ("approved", revoked, NOW, False, "was revoked by alice at 2026-11-30T02:00:00Z"),
    ]:
        condition = wait.parse_condition(name)
        compare((condition.holds(r, when), condition.never(r, when)), expected=(holds, never), prefix=name)
    not_required = parse_rollout(rollout(approvalRequired=False))
    compare(wait.parse_condition("approval").never(not_required, NOW), expected="needs no approval")


def test_acknowledgement_means_the_awaited_release_was_acknowledged() -> None:
    condition = wait.parse_condition("acknowledgement")
    awaiting = parse_rollout(rollout(status={"phase": "AwaitingAcknowledgement", "awaitingRelease": "nvsentinel"}))
    compare(condition.holds(awaiting, NOW), expected=False)
    done = parse_rollout(rollout(
        acknowledgements=[{"release": "nvsentinel", "user": "alice", "time": "2026-11-30T02:00:00Z"}],
        status={"phase": "Progressing", "awaitingRelease": ""}))
    compare(condition.holds(done, NOW), expected=True)  # it was awaited while we waited
    compare(wait.parse_condition("acknowledgement").holds(done, NOW), expected=False)  # never seen awaited


def test_go_duration() -> None:
    compare([wait.go_duration(dt.timedelta(seconds=s)) for s in (0, 2, 1.5, 600, 3600, 5400, 3661)],
            expected=["0s", "2s", "1.5s", "10m0s", "1h0m0s", "1h30m0s", "1h1m1s"])


# -- the watch, against a scripted session ----------------------------------------------------------------

def obj(version: str, phase: str = "AwaitingApproval") -> dict[str, Any]:
    return {"metadata": {"name": "r", "resourceVersion": version}, "status": {"phase": phase}}


class Scripted:
    """A session whose GETs and watch streams follow a script; each watch entry is a list of events or an error."""

    def __init__(self, reads: list[Any], streams: list[Any], seconds: float = 30) -> None:
        self.reads, self.streams = list(reads), list(streams)
        self.deadline = Deadline(seconds)
        self.watched_from: list[str] = []

    def get(self, path: str, params: Any = None) -> dict[str, Any]:
        item = self.reads.pop(0)
        if isinstance(item, Exception):
            raise item
        return item  # type: ignore[no-any-return]

    def watch(self, path: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
        self.watched_from.append(params["resourceVersion"])
        if not self.streams:
            raise AssertionError("watched more often than scripted")
        script = self.streams.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            if isinstance(event, Exception):
                raise event
            yield event


def test_resumes_from_the_last_version_and_bookmark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch.time, "monotonic", iter(range(0, 1000, 5)).__next__)  # streams last a while
    session = Scripted([obj("1")], [
        [{"type": "MODIFIED", "object": obj("2", "Progressing")}],
        [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}}],
        [{"type": "MODIFIED", "object": obj("9", "Ended")}],
    ], seconds=math.inf)
    seen = watch.follow(session, "/things", "r")  # type: ignore[arg-type]
    compare([next(seen)["status"]["phase"] for _ in range(3)], expected=["AwaitingApproval", "Progressing", "Ended"])
    compare(session.watched_from, expected=["1", "2", "7"])


def test_410_gone_reads_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_core.session import kube

    session = Scripted([obj("1"), obj("5", "Progressing")], [kube.Gone("too old"), [
        {"type": "MODIFIED", "object": obj("6", "Ended")}]])
    seen = watch.follow(session, "/things", "r")  # type: ignore[arg-type]
    compare([next(seen)["metadata"]["resourceVersion"] for _ in range(3)], expected=["1", "5", "6"])
    compare(session.watched_from, expected=["1", "5"])


def test_a_re_read_object_without_metadata_is_handed_on_not_a_crash() -> None:
    from aicr_core.session import kube

    session = Scripted([obj("1"), {"metadata": "junk"}], [kube.Gone("too old")])
    seen = watch.follow(session, "/things", "r")  # type: ignore[arg-type]
    compare([next(seen), next(seen)], expected=[obj("1"), {"metadata": "junk"}])  # the caller's parser judges it


def test_a_dropped_stream_reads_again_after_a_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(watch.time, "sleep", pauses.append)
    dropped = AicrError(Code.UNAVAILABLE, "connection reset")
    session = Scripted([obj("1"), obj("1"), obj("4", "Progressing")], [[dropped], dropped, []])
    seen = watch.follow(session, "/things", "r")  # type: ignore[arg-type]
    compare([next(seen)["metadata"]["resourceVersion"] for _ in range(2)], expected=["1", "4"])
    # The first failure reads again at once; the watch after it that fails again waits 0.8 s plus jitter.
    compare(len(pauses), expected=1)
    assert 0.8 <= pauses[0] <= 1.6, pauses


def test_a_watch_that_is_gone_again_and_again_backs_off_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """As client-go's reflector: 0.8 s doubling to 30 s, each with up to as much again of jitter."""
    from aicr_core.session import kube

    pauses: list[float] = []
    monkeypatch.setattr(watch.time, "sleep", pauses.append)
    monkeypatch.setattr(watch.random, "uniform", lambda low, high: high)  # the most jitter
    gone = kube.Gone("too old resource version")
    session = Scripted([obj("1")] * 12 + [obj("2", "Ended")], [gone] * 12, seconds=math.inf)
    with LogCapture("aicr.watch") as log:
        seen = watch.follow(session, "/things", "r", "rollout r")  # type: ignore[arg-type]
        compare([next(seen)["metadata"]["resourceVersion"] for _ in range(2)], expected=["1", "2"])
    compare(pauses, expected=[1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0, 30.0, 30.0, 30.0])
    compare([r.getMessage() for r in log.records], expected=[
        "the watch of rollout r keeps failing (3 times in a row: 410 Gone: too old resource version); reading it "
        "again in 3.2s"])  # once a minute at most (the clock did not move)


def test_one_follower_sends_at_most_30_requests_in_any_10_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever makes it retry (here streams that each bring one change and end at once), the cap holds."""
    now = [0.0]
    sent: list[float] = []
    monkeypatch.setattr(watch.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(watch.time, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))
    session = Scripted([obj("1")], [[{"type": "MODIFIED", "object": obj(str(v))}] for v in range(2, 100)],
                       seconds=math.inf)
    original = session.watch
    session.watch = lambda path, params: (sent.append(now[0]), original(path, params))[1]  # type: ignore[method-assign]
    seen = watch.follow(session, "/things", "r")  # type: ignore[arg-type]
    for _ in range(90):
        next(seen)
    busiest = max(sum(1 for t in sent[i:] if t < start + 10) for i, start in enumerate(sent))
    compare(busiest, expected=30)  # the first 10 s: the GET and 29 watches


def test_an_unreachable_server_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch.time, "sleep", lambda s: None)
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(watch.time, "monotonic", lambda: next(clock))
    down = AicrError(Code.UNAVAILABLE, "cannot connect")
    session = Scripted([obj("1"), down, down, down, down], [down, down, down, down, down],
                       seconds=math.inf)  # the clock is faked for the deadline too
    seen = watch.follow(session, "/things", "r")  # type: ignore[arg-type]
    next(seen)
    with ShouldRaise(AicrError(Code.UNAVAILABLE, "cannot connect")):
        next(seen)


def test_deleted_and_forbidden_are_not_retried() -> None:
    session = Scripted([obj("1")], [[{"type": "DELETED", "object": obj("2")}]])
    seen = watch.follow(session, "/things", "r", "rollout r")  # type: ignore[arg-type]
    next(seen)
    with ShouldRaise(AicrError(Code.NOT_FOUND, "rollout r was deleted")):
        next(seen)
    session = Scripted([obj("1")], [AicrError(Code.FORBIDDEN, "no watch for you")])
    seen = watch.follow(session, "/things", "r")  # type: ignore[arg-type]
    next(seen)
    with ShouldRaise(AicrError(Code.FORBIDDEN, "no watch for you")):
        next(seen)


# -- a stream of results through the core -------------------------------------------------------------

class Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty", [False, True])
def test_the_core_renders_a_stream_as_it_comes(tty: bool) -> None:
    out, err = Terminal(tty), io.StringIO()
    app = AicrApp(stdout=out, stderr=err)
    items = [Result("X", {"n": 1}), Progress("12:00:00 A -> B\x1b[2J"), Result("X", {"n": 2}, warnings=("w",))]
    app.render_stream(Stream(items), TextRenderer(), "text")
    compare(out.getvalue(), expected="n: 1\n" + (CLEAR_SCREEN if tty else "---\n") + "n: 2\n")
    compare(err.getvalue(), expected="12:00:00 A -> B\\x1b[2J\nwarning: w\n")


def test_a_json_stream_is_a_sequence_of_documents() -> None:
    out = Terminal(False)
    AicrApp(stdout=out, stderr=io.StringIO()).render_stream(Stream([Result("X", {"n": 1}), Result("X", {"n": 2})]),
                                                              JsonRenderer(), "json")
    compare(out.getvalue(), expected='{\n  "kind": "X",\n  "n": 1\n}\n{\n  "kind": "X",\n  "n": 2\n}\n')


def test_a_stream_result_that_cannot_be_printed_is_a_plugin_error() -> None:
    out = Terminal(False)
    app = AicrApp(stdout=out, stderr=io.StringIO())
    with ShouldRaise(AicrError(Code.PLUGIN_ERROR, "a streaming command's result cannot be printed: "
                                                  "data.when is a datetime.datetime")):
        app.render_stream(Stream([Result("X", {"n": 1}), Result("X", {"when": NOW})]), TextRenderer(), "text")
    compare(out.getvalue(), expected="n: 1\n")  # what came before stays printed, nothing half-written after


def test_an_empty_list_says_so_in_text_only() -> None:
    out = io.StringIO()
    TextRenderer().render(Result("RolloutList", {"items": []}), out)
    compare(out.getvalue(), expected="No rollouts found.\n")
    out = io.StringIO()
    JsonRenderer().render(Result("RolloutList", {"items": []}), out)
    compare(out.getvalue(), expected='{\n  "kind": "RolloutList",\n  "items": []\n}\n')


def test_the_policies_decide_at_the_instant_the_write_was_built() -> None:
    """`--expires 2h` is an approval of 2h to max-approval, even when the clock ticks before the policies run."""
    text = "apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\npolicies:\n  max-approval: {max: 1h}\n"
    with Replacer() as replace:
        replace("aicr_core.clock.datetime", mock_datetime(NOW, delta=1))  # each now() a second after the last
        now = clock.now()
        approval = api.Approval("alice", now + dt.timedelta(hours=2), "r")
        decision = decide_write(
            APPROVE, approval, engine=rollouts.engine_for(rollouts.PolicyFile(text, "test")), rollout=kit.rollout(),
            user=kit.identity(), context=PolicyContext("approve", {}, now=now), overrides=(),
            assessment=kit.assessment())
    compare([(o.policy, o.messages) for o in decision.outcomes], expected=[
        ("max-approval", ["an approval of 2h is longer than the 1h allowed; pass --expires 1h or less"])])
