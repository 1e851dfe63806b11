"""Pure flag logic: Go durations, reasons, kubectl's value-flag rule."""
from __future__ import annotations

import argparse
from datetime import timedelta

import pytest
from testfixtures import ShouldRaise, compare

from aicr_core.errors import UsageError
from aicr_core.flags import FlagParser, add_common_flags, parse_duration, parse_reason


@pytest.mark.parametrize("text,expected", [
    ("90m", timedelta(minutes=90)), ("2h", timedelta(hours=2)), ("1h30m", timedelta(minutes=90)),
    ("45s", timedelta(seconds=45)), ("1.5h", timedelta(minutes=90)), ("0", timedelta(0)),
    ("500ms", timedelta(milliseconds=500)), ("+2h", timedelta(hours=2)),
])
def test_go_durations(text: str, expected: timedelta) -> None:
    compare(parse_duration(text), expected=expected)


@pytest.mark.parametrize("text", ["-1h", "soon", "", "2", "h", "1d", "1h 30m", "2hours", "1h-30m"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration(text)


def test_reason_bounds() -> None:
    compare(parse_reason("x" * 1024), expected="x" * 1024)
    with ShouldRaise(argparse.ArgumentTypeError("--reason is 1025 characters; at most 1024 are allowed")):
        parse_reason("x" * 1025)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_reason("   ")


def parser() -> FlagParser:
    p = FlagParser(prog="t")
    p.add_argument("rollout")
    add_common_flags(p)
    return p


def test_a_value_flag_takes_the_next_word_even_with_a_dash() -> None:
    args = parser().parse_args(["r1", "--reason", "-starts with a dash", "-o", "json"])
    compare((args.rollout, args.reason, args.output), expected=("r1", "-starts with a dash", "json"))


def test_abbreviations_are_unknown_flags() -> None:
    with ShouldRaise(UsageError):
        parser().parse_args(["r1", "--reas", "x"])


def test_negative_expiry_is_a_usage_error_not_a_missing_value() -> None:
    with pytest.raises(UsageError, match="must not be negative"):
        parser().parse_args(["r1", "--expires", "-1h"])
