"""The pages, from Jinja2 templates with autoescape on: every value escaped as the CLI escapes it, then as HTML.

Text from clusters is untrusted: a rollout's message or reason may hold `<script>`, an escape
sequence or a bidirectional override. Every `{{ value }}` of a template goes through the CLI's
escaping of control, format and separator characters (`aicr_core.framework.terminal.safe`, one
line) by the environment's `finalize`, and then through HTML's (autoescape, for every template).
No template marks anything safe; no script or style is inline (the CSP allows neither).
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from aicr_core import clock
from aicr_core.framework.terminal import safe

TEMPLATES = Path(__file__).resolve().parent / "templates"
SAFE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~-")


def segment(text: str) -> str:
    """One path segment: every byte outside [A-Za-z0-9_~-] percent-encoded (`/` as %2F, `.` as %2E)."""
    return "".join(chr(b) if b in SAFE_BYTES else f"%{b:02X}" for b in text.encode("utf-8"))


def rollout_path(context: str, name: str, *tail: str) -> str:
    return "/".join(["", "c", segment(context), "r", segment(name), *tail])


def shown(value: Any) -> Any:
    """Every value a template prints: `-` for none, else one safe line (the CLI's escaping)."""
    if isinstance(value, Markup):
        return value
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return safe(str(value), allow_newlines=False)


def _span(seconds: float) -> str:
    seconds = int(abs(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def relative(moment: Any, now: datetime | None = None) -> str:
    """A document's time as the time left (`in 2h5m`) or gone (`3m10s ago`)."""
    if not isinstance(moment, str) or not moment:
        return "-"
    try:
        when = clock.parse_time(moment)
    except ValueError:
        return "-"
    left = (when - (now or clock.now())).total_seconds()
    return f"in {_span(left)}" if left >= 0 else f"{_span(left)} ago"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, finalize=shown, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(rollout_path=rollout_path, relative=relative)
    return env


_ENV: jinja2.Environment | None = None


def render(template: str, **values: Any) -> str:
    global _ENV
    if _ENV is None:
        _ENV = environment()
    return _ENV.get_template(template).render(**values)
