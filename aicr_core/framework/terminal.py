"""Keep cluster data from steering the terminal or disguising itself.

A rollout message, a release name or a server error is data written by
someone else. Printed raw, an ESC or a carriage return could rewrite what the
approver sees (escape-sequence injection), and a bidirectional override
(U+202E), a zero-width character or a line separator could make text read
differently from what it is (Trojan Source). Everything printed as text passes
through `safe()`, which shows every character of the Unicode categories Cc
(controls), Cf (format: bidi controls, zero-width characters, U+FEFF, ...), Zl
and Zp (line and paragraph separators) as a visible escape, and lone
surrogates (Cs), which no terminal encoding can carry. TAB stays, and LF where
newlines are allowed.
"""
from __future__ import annotations

import re
import unicodedata

ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})

# Printable ASCII, TAB and LF never need a look-up; only the other characters are checked one by one.
_SUSPECT = re.compile("[^\t\n\x20-\x7e]")


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    return _escape(char) if unicodedata.category(char) in ESCAPED_CATEGORIES else char


def safe(text: str, *, allow_newlines: bool = True) -> str:
    """Return `text` with every control, format and separator character made visible."""
    cleaned = _SUSPECT.sub(_visible, text)
    if not allow_newlines:
        cleaned = cleaned.replace("\n", "\\n")
    return cleaned
