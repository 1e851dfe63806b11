"""The output options any renderer or text layout may honour, and colour that never changes the text.

`--no-headers`, `--color` (with NO_COLOR) and `--allow-missing-template-keys`
are flags of every command; the core turns them into one `OutputOptions`, hands
it to the renderer (`Renderer.configure`) and makes it `current()` while a
result is rendered, so a text layout (a plain function of the data) can ask too.

Colour is marked, not written: a layout wraps a word in `paint(text, role)`,
and the text renderer, after escaping everything else with `safe()`, turns
each mark into ANSI colour or into the bare text. So colour never changes the
text (strip the escapes and the bytes are those of `--color=never`), and no
escape sequence from the cluster reaches the terminal: the painted text is
escaped like the rest, and the only sequences written are the fixed ones of
`ROLES`.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re
from collections.abc import Iterator
from typing import NamedTuple

from aicr_core.framework.terminal import safe

COLOR_CHOICES = ("auto", "always", "never")


class OutputOptions(NamedTuple):
    """The output options of one rendering (a NamedTuple: a frozen dataclass costs every start;
    docs/performance.md, "What the code's shape saves")."""

    no_headers: bool = False          # leave out the header line of a table (kubectl's --no-headers)
    color: bool = False               # colour phases, outcomes and verdicts (settled from --color and NO_COLOR)
    allow_missing_template_keys: bool = True  # a template's missing key prints nothing, else an error


def use_color(choice: str, is_terminal: bool, environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """--color: `always` (even with NO_COLOR, as the convention says a flag should override it), `never`,
    or `auto`: on a terminal, unless NO_COLOR is set to anything but the empty string."""
    env = os.environ if environ is None else environ
    if choice == "always":
        return True
    if choice == "never":
        return False
    return is_terminal and not env.get("NO_COLOR")


DEFAULTS = OutputOptions()  # frozen: one shared value is safe
_current: contextvars.ContextVar[OutputOptions] = contextvars.ContextVar("aicr_output_options", default=DEFAULTS)


def current() -> OutputOptions:
    """The options of the output being rendered now (the defaults outside a rendering)."""
    return _current.get()


@contextlib.contextmanager
def rendering(options: OutputOptions) -> Iterator[None]:
    token = _current.set(options)
    try:
        yield
    finally:
        _current.reset(token)


# -- colour --------------------------------------------------------------------------------------------

# What a word means, and its colour (SGR parameters). Layouts name the meaning, never a colour.
ROLES = {
    "good": "32",     # green: succeeded, safe, allowed
    "waiting": "33",  # yellow: waits for a person, manual, warned, overridden
    "bad": "31",      # red: failed, blocked, denied, refused
    "active": "36",   # cyan: in progress
    "muted": "2",     # dim: ended without success or failure (expired, revoked), unknown
}
_OPEN, _SPLIT, _CLOSE = "\x0e", "\x1f", "\x0f"  # controls: cluster text reaching a layout is escaped already
# Patterns, not compiled here: `re` compiles them on first use (most runs print no colour mark at all).
_MARK = f"{_OPEN}([a-z]+){_SPLIT}([^{_OPEN}{_SPLIT}{_CLOSE}]*){_CLOSE}"
_RESET = "\x1b[0m"
_KNOWN_MARK = f"{_OPEN}(?:{'|'.join(ROLES)}){_SPLIT}([^{_OPEN}{_SPLIT}{_CLOSE}]*){_CLOSE}"


def paint(text: str, role: str | None) -> str:
    """`text` marked to be shown in the colour of `role` (one of ROLES); unmarked when role is None."""
    if role is None or not text:
        return text
    if role not in ROLES:
        raise ValueError(f"unknown colour role {role!r}")
    return f"{_OPEN}{role}{_SPLIT}{text}{_CLOSE}"


def finish(text: str, color: bool) -> str:
    """The text to write: everything escaped by `safe()`, each mark made colour (or bare text)."""
    if _OPEN not in text:
        return safe(text)
    if not color:  # safe() works character by character: unmark, then escape the whole (one C-level pass)
        return safe(re.sub(_KNOWN_MARK, r"\1", text))
    out, last = [], 0
    for match in re.finditer(_MARK, text):
        role, inner = match.group(1), match.group(2)
        if role not in ROLES:
            continue  # not one of ours: escaped below with the plain text around it
        out.append(safe(text[last:match.start()]))
        shown = safe(inner)
        out.append(f"\x1b[{ROLES[role]}m{shown}{_RESET}" if color else shown)
        last = match.end()
    out.append(safe(text[last:]))
    return "".join(out)


def strip_marks(text: str) -> str:
    """The text without its colour marks (for a layout's text used where no colour goes)."""
    return re.sub(_KNOWN_MARK, r"\1", text)
