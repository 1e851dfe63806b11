"""Pure flag logic: Go durations, reasons, kubectl's value-flag rule, syntax versus bounds."""
from __future__ import annotations

import argparse
import datetime as dt
from datetime import timedelta

import pytest
from testfixtures import ShouldRaise, compare

from aicr_core.domain.write_limits import MAX_API_TIME, check_expires, check_reason
from aicr_core.errors import UsageError
from aicr_core.framework.common_flags import (
    FlagParser,
    add_common_flags,
    check_used_flags,
)
from aicr_core.go_duration import ParsedDuration, parse_duration

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 29, 21, tzinfo=UTC)


@pytest.mark.parametrize("text,expected", [
    ("90m", timedelta(minutes=90)), ("2h", timedelta(hours=2)), ("1h30m", timedelta(minutes=90)),
    ("45s", timedelta(seconds=45)), ("1.5h", timedelta(minutes=90)), ("0", timedelta(0)),
    ("500ms", timedelta(milliseconds=500)), ("+2h", timedelta(hours=2)), ("-0s", timedelta(0)),
    ("1.h", timedelta(hours=1)), (".5h", timedelta(minutes=30)),
])
def test_go_durations(text: str, expected: timedelta) -> None:
    compare(parse_duration(text).delta, expected=expected)


@pytest.mark.parametrize("text,message", [
    ("soon", 'time: invalid duration "soon"'), ("", 'time: invalid duration ""'),
    ("2", 'time: missing unit in duration "2"'), ("1d", 'time: unknown unit "d" in duration "1d"'),
    (" 1h", 'time: invalid duration " 1h"'), ("1h ", 'time: unknown unit "h " in duration "1h "'),
    ("\u0661h", 'time: invalid duration "\\xd9\\xa1h"'),
    ("2562047h47m16.854775808s", 'time: invalid duration "2562047h47m16.854775808s"'),
    ("99999999999999h", 'time: invalid duration "99999999999999h"'),
])
def test_bad_durations_say_what_go_says(text: str, message: str) -> None:
    with ShouldRaise(argparse.ArgumentTypeError(message)):
        parse_duration(text)


def args(**values: object) -> argparse.Namespace:
    return parser().parse_args(["r1", *[f"--{k.replace('_', '-')}={v}" for k, v in values.items()]])


def test_reason_bounds_are_checked_by_the_commands_that_use_it() -> None:
    compare(check_reason(args(reason="x" * 1024).reason, "approve"), expected="x" * 1024)
    with ShouldRaise(UsageError("--reason is 1025 characters; at most 1024 are allowed")):
        check_reason(args(reason="x" * 1025).reason, "approve")
    with ShouldRaise(UsageError("--reason must not be empty")):
        check_reason(args(reason="   ").reason, "revoke")
    with ShouldRaise(UsageError("revoke needs --reason TEXT (at most 1024 characters)")):
        check_reason(args().reason, "revoke")


def test_a_bound_is_no_parse_error() -> None:
    """The parser takes any reason and a negative expiry: only a command that uses them refuses."""
    parsed = args(reason="", expires="-1h", dir="")
    compare((parsed.reason, parsed.expires, parsed.dir), expected=("", ParsedDuration("-1h", -3600 * 10**9), ""))
    check_used_flags(parsed, ("reason", "expires"))  # their bounds are checked by approve and revoke themselves
    with ShouldRaise(UsageError("--dir must not be empty")):
        check_used_flags(parsed, ("dir",))


def test_expiry_bounds() -> None:
    compare(check_expires(args().expires, NOW), expected=None)
    compare(check_expires(args(expires="1h30m").expires, NOW), expected=NOW + timedelta(minutes=90))
    with ShouldRaise(UsageError("--expires must not be negative (got -1ns)")):
        check_expires(args(expires="-1ns").expires, NOW)
    largest = "2562047h47m16.854775807s"
    compare(check_expires(args(expires=largest).expires, NOW).year, expected=2319)  # type: ignore[union-attr]
    late = dt.datetime(9800, 1, 1, tzinfo=UTC)  # the largest Go duration reaches past year 9999 from here
    with ShouldRaise(UsageError(f"--expires {largest} ends after 9999-12-31T23:59:59Z, "
                                "the latest time the API can store")):
        check_expires(args(expires=largest).expires, late)
    compare(check_expires(args(expires="1m").expires, MAX_API_TIME - timedelta(minutes=1)), expected=MAX_API_TIME)


@pytest.mark.parametrize("text", ["0s", "-0s", "1ns", "59.999s", "59s"])
def test_an_expiry_that_is_not_in_the_future_when_written_is_a_usage_error_naming_the_minimum(text: str) -> None:
    with ShouldRaise(UsageError(f"--expires {text} is shorter than the minimum, 1m: an approval that ends before "
                                "it is stored, or right after, approves nothing")):
        check_expires(args(expires=text).expires, NOW)
    compare(check_expires(args(expires="1m").expires, NOW), expected=NOW + timedelta(minutes=1))


def test_the_cli_and_the_webhook_apply_one_bound() -> None:
    """What passes --expires passes the webhook, whose clock may be behind, or ahead by less than a minute."""
    from aicr_admission import review
    from aicr_core.domain.action_rules import MIN_APPROVAL, approval_expiry_problem

    for delta in (MIN_APPROVAL, MIN_APPROVAL + timedelta(seconds=1), timedelta(hours=2)):
        expires = check_expires(args(expires=f"{int(delta.total_seconds())}s").expires, NOW)
        assert expires is not None and approval_expiry_problem(expires, NOW) is None
        for webhook_clock in (NOW - review.CLOCK_SKEW, NOW, NOW + review.CLOCK_SKEW - timedelta(seconds=1)):
            compare(approval_expiry_problem(expires, webhook_clock, clock_skew=review.CLOCK_SKEW), expected=None)
    for expired in (NOW, NOW - timedelta(seconds=1)):  # never one that has ended when stored
        assert approval_expiry_problem(expired, NOW, clock_skew=review.CLOCK_SKEW)


def parser() -> FlagParser:
    p = FlagParser(prog="t")
    p.add_argument("rollout")
    add_common_flags(p)
    return p


def test_a_value_flag_takes_the_next_word_even_with_a_dash() -> None:
    parsed = parser().parse_args(["r1", "--reason", "-starts with a dash", "-o", "json"])
    compare((parsed.rollout, parsed.reason, parsed.output), expected=("r1", "-starts with a dash", "json"))


def test_abbreviations_are_unknown_flags() -> None:
    with ShouldRaise(UsageError):
        parser().parse_args(["r1", "--reas", "x"])


def test_negative_expiry_is_a_value_not_a_missing_value() -> None:
    compare(parser().parse_args(["r1", "--expires", "-1h"]).expires.nanoseconds, expected=-3600 * 10**9)


def test_an_unparsable_expiry_is_a_usage_error_for_any_command() -> None:
    with pytest.raises(UsageError, match='argument --expires: time: unknown unit "d" in duration "1d"'):
        parser().parse_args(["r1", "--expires", "1d"])


def test_the_flags_say_the_domains_figures() -> None:
    """common_flags.py repeats two of the domain's figures (the framework may not import the domain): equal."""
    from aicr_core.domain import operator_api, write_limits
    from aicr_core.framework import common_flags as flags

    compare((flags.REASON_MAX, flags.DEFAULT_OPERATOR_NAMESPACE),
            expected=(write_limits.REASON_MAX, operator_api.DEFAULT_OPERATOR_NAMESPACE))
