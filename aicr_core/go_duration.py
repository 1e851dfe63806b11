"""Go's `time.ParseDuration`, exactly: the syntax kubectl and the upstream plugin accept.

`--expires` (and kubectl's `--request-timeout`) take Go durations. Close is not
enough: a string Go refuses must be refused here, a string Go accepts must mean
the same number of nanoseconds, and the error must read like Go's. So this is a
line-by-line port of Go 1.26's `src/time/format.go` (ParseDuration,
leadingInt, leadingFraction, quote), working on the UTF-8 bytes as Go does:
`١h` is not a number, `1 h` has an unknown unit, and nothing is trimmed. Go's
uint64 arithmetic is kept, wrap-around included. tests/unit/test_duration.py
compares this module with the real Go function on a few hundred strings.
"""
from __future__ import annotations

import argparse
from datetime import timedelta
from typing import NamedTuple

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS: dict[bytes, int] = {
    b"ns": NANOSECOND,
    b"us": MICROSECOND,
    "µs".encode(): MICROSECOND,  # U+00B5 micro sign
    "μs".encode(): MICROSECOND,  # U+03BC Greek small letter mu
    b"ms": MILLISECOND,
    b"s": SECOND,
    b"m": MINUTE,
    b"h": HOUR,
}
_UINT64 = (1 << 64) - 1
_TWO63 = 1 << 63
_DIGITS = b"0123456789"


def parse(text: str) -> int:
    """The duration `text` in nanoseconds (negative allowed), or ValueError with Go's message."""
    s = _bytes(text)
    orig = s
    d = 0
    neg = False
    if s and s[:1] in (b"-", b"+"):
        neg = s[:1] == b"-"
        s = s[1:]
    if s == b"0":
        return 0
    if not s:
        raise ValueError("time: invalid duration " + quote(orig))
    while s:
        scale = 1.0
        if not (s[0] == ord(".") or s[0] in _DIGITS):
            raise ValueError("time: invalid duration " + quote(orig))
        before = len(s)
        v, s, ok = _leading_int(s)
        if not ok:
            raise ValueError("time: invalid duration " + quote(orig))
        pre = before != len(s)
        post, f = False, 0
        if s and s[0] == ord("."):
            s = s[1:]
            before = len(s)
            f, scale, s = _leading_fraction(s)
            post = before != len(s)
        if not pre and not post:
            raise ValueError("time: invalid duration " + quote(orig))
        i = 0
        while i < len(s) and not (s[i] == ord(".") or s[i] in _DIGITS):
            i += 1
        if i == 0:
            raise ValueError("time: missing unit in duration " + quote(orig))
        name, s = s[:i], s[i:]
        unit = _UNITS.get(name)
        if unit is None:
            raise ValueError("time: unknown unit " + quote(name) + " in duration " + quote(orig))
        if v > _TWO63 // unit:
            raise ValueError("time: invalid duration " + quote(orig))
        v *= unit
        if f > 0:
            # float64, as Go: nanosecond-accurate for fractions of hours.
            v += int(float(f) * (float(unit) / scale))
            if v > _TWO63:
                raise ValueError("time: invalid duration " + quote(orig))
        d = (d + v) & _UINT64  # uint64: Go wraps around here
        if d > _TWO63:
            raise ValueError("time: invalid duration " + quote(orig))
    if neg:
        return -d
    if d > _TWO63 - 1:
        raise ValueError("time: invalid duration " + quote(orig))
    return d


def _bytes(text: str) -> bytes:
    """The bytes Go would see: UTF-8, with undecodable argv bytes restored (surrogateescape)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _leading_int(s: bytes) -> tuple[int, bytes, bool]:
    x, i = 0, 0
    while i < len(s) and s[i] in _DIGITS:
        if x > _TWO63 // 10:
            return 0, s, False
        x = x * 10 + s[i] - ord("0")
        if x > _TWO63:
            return 0, s, False
        i += 1
    return x, s[i:], True


def _leading_fraction(s: bytes) -> tuple[int, float, bytes]:
    """Digits after the point; past uint64 precision they are consumed and ignored, as in Go."""
    x, scale, i, overflow = 0, 1.0, 0, False
    while i < len(s) and s[i] in _DIGITS:
        if not overflow:
            if x > (_TWO63 - 1) // 10:
                overflow = True
            else:
                y = x * 10 + s[i] - ord("0")
                if y > _TWO63:
                    overflow = True
                else:
                    x = y
                    scale *= 10
        i += 1
    return x, scale, s[i:]


QUOTED_BYTES = 80


def quote(s: bytes) -> str:
    """Go's time.quote: double quotes; bytes outside printable ASCII as \\xNN.

    Unlike Go, only the first QUOTED_BYTES bytes, then `...`: a 1 MB `soak:` of a waves file would
    otherwise become a 1 MB error line (every real duration is far shorter).
    """
    cut = len(s) > QUOTED_BYTES
    out = ['"']
    for byte in s[:QUOTED_BYTES]:
        if byte >= 0x80 or byte < 0x20:
            out.append(f"\\x{byte:02x}")
        else:
            if byte in (ord('"'), ord("\\")):
                out.append("\\")
            out.append(chr(byte))
    out.append('"...' if cut else '"')
    return "".join(out)


class ParsedDuration(NamedTuple):
    """A parsed Go duration: what was typed, and what it means."""

    text: str
    nanoseconds: int

    @property
    def delta(self) -> timedelta:
        return timedelta(microseconds=self.nanoseconds // 1000)

    def total_seconds(self) -> float:
        return self.nanoseconds / 1e9


def parse_duration(text: str) -> ParsedDuration:
    """Go's duration syntax (`90m`, `2h`, `1h30m`, `45s`, `-0s`), exactly as Go's time.ParseDuration.

    Only the syntax: a negative duration parses here (approve refuses it, see `check_expires`).
    """
    try:
        return ParsedDuration(text, parse(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
