"""The pure parts of `policy test` (aicr_core/domain/{policy_file.load_documents,policy_test_files,policy_tests}.py,
aicr_commands/policy.py): YAML read
within its alias budget, the time of a case, discovery order, differences, and --case's completion globs."""
from __future__ import annotations

import datetime as dt
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from testfixtures import ShouldRaise, compare

from aicr_commands.policy import glob_of
from aicr_core.domain import policy_file, policy_test_files, policy_tests
from aicr_core.errors import UsageError


def test_documents_of_a_stream_and_strict_keys() -> None:
    compare(policy_file.load_documents("a: 1\n---\n---\nb: [x, y]\n"), expected=[{"a": 1}, {"b": ["x", "y"]}])
    with ShouldRaise(ValueError("(YAML) line 2, column 1: duplicate key 'a'")):
        policy_file.load_documents("a: 1\na: 2\n")


def test_aliases_within_the_budget_are_read_and_beyond_it_refused() -> None:
    shared = "base: &b {x: 1, y: [1, 2, 3]}\none: *b\ntwo: *b\n"
    compare(policy_file.load_documents(shared)[0]["two"], expected={"x": 1, "y": [1, 2, 3]})
    levels = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(2))
    compare(len(policy_file.load_documents(levels)[0]["c"]), expected=10)  # 1,300 nodes from 40: within
    # go-yaml's rule (kubectl's): a document may expand to about 100 times its own nodes, 400,000 at most
    with pytest.raises(ValueError, match=r"^\(YAML\): aliases expand too far: more than [0-9,]+ nodes from a "
                                         r"document of [0-9,]+ \(document contains excessive aliasing\)$"):
        policy_file.load_documents(levels + "d: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n")


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^\(YAML\): an anchor's value contains an alias of itself$"):
        policy_file.load_documents("a: &a [1, *a]\n")


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-12-02T10:00:00+01:00", dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.timezone.utc)),
    ("2026-12-02T09:00:00.750Z", dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.timezone.utc)),  # the decision's precision
    (dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))),  # YAML's own reading, unquoted
     dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.timezone.utc)),
])
def test_the_instant_of_a_case(value: object, expected: dt.datetime) -> None:
    problems: list[str] = []
    compare(policy_test_files._instant(value, "cases[0].at", problems), expected=expected)
    compare(problems, expected=[])


@pytest.mark.parametrize(("value", "problem"), [
    ("2026-12-02", "cases[0].at: '2026-12-02' is a date; give a time too (2026-12-02T10:00:00+01:00)"),
    (dt.date(2026, 12, 2), "cases[0].at: an RFC 3339 time such as \"2026-12-02T10:00:00+01:00\", not a date"),
    (dt.datetime(2026, 12, 2, 10, 0), "cases[0].at: '2026-12-02 10:00:00' has no time zone offset (add Z or +01:00)"),
    (1700000000, "cases[0].at: an RFC 3339 time such as \"2026-12-02T10:00:00+01:00\", not a int"),
])
def test_an_instant_that_is_no_rfc3339_time(value: object, problem: str) -> None:
    problems: list[str] = []
    compare(policy_test_files._instant(value, "cases[0].at", problems), expected=None)
    compare(problems, expected=[problem])


def test_test_files_in_path_order(tmp_path: Path) -> None:
    for name in ("b/2.aicr-test.yaml", "b/1.aicr-test.yaml", "a/z/9.aicr-test.yaml", "a/x.yaml",
                 ".git/3.aicr-test.yaml", "c.aicr-test.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    root = str(tmp_path)
    compare(policy_test_files.find_test_files([root]), expected=[
        f"{root}/c.aicr-test.yaml", f"{root}/a/z/9.aicr-test.yaml", f"{root}/b/1.aicr-test.yaml",
        f"{root}/b/2.aicr-test.yaml"])
    # given paths keep their order; a file found twice runs once
    compare(policy_test_files.find_test_files([f"{root}/b", f"{root}/a/x.yaml", f"{root}/b/1.aicr-test.yaml"]),
            expected=[f"{root}/b/1.aicr-test.yaml", f"{root}/b/2.aicr-test.yaml", f"{root}/a/x.yaml"])
    (tmp_path / "empty").mkdir()
    with ShouldRaise(UsageError(f"no test file (*.aicr-test.yaml) under {root}/empty")):
        policy_test_files.find_test_files([f"{root}/empty"])
    with ShouldRaise(UsageError(f"{root}/nothing: no such file or directory")):
        policy_test_files.find_test_files([f"{root}/b", f"{root}/nothing"])


def test_differences_say_want_and_got() -> None:
    case = policy_test_files.Case(0, "c", "r", "acknowledge", "u", (), None, None, (),
                             dt.datetime(2027, 1, 1, tzinfo=dt.timezone.utc), True, None,
                             {"four-eyes": "allow", "approver-groups": "allow"})
    decision = {"allowed": False, "code": "POLICY_DENIED",
                "policies": [{"name": "four-eyes", "verdict": "deny"}]}
    compare(policy_tests.differences(case, decision), expected=[
        "allowed: want true, got false",
        "policies.four-eyes: want allow, got deny",
        "policies.approver-groups: want allow, got none (the policy did not decide this acknowledge)"])


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=8, unique=True))
def test_a_completion_glob_matches_its_case_only(names: list[str]) -> None:
    for name in names:
        pattern = glob_of(name)
        assert not any(c.isspace() for c in pattern), pattern
        assert fnmatchcase(name, pattern), (name, pattern)
        others = [n for n in names if n != name and fnmatchcase(n, pattern)]
        # `?` stands for whitespace: another name matches only where this one has whitespace
        assert all(len(n) == len(name) and all(a == b or b.isspace() for a, b in zip(n, name, strict=True))
                   for n in others), (name, pattern, others)


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-12-02 10:00:00+01:00", dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.timezone.utc)),  # RFC 3339 allows a space
    ("2026-12-02t09:00:00z", dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.timezone.utc)),
    ("9999-12-31T23:59:59+23:59", dt.datetime(9999, 12, 31, 0, 0, 59, tzinfo=dt.timezone.utc)),
])
def test_rfc3339s_own_forms_are_accepted(value: object, expected: dt.datetime) -> None:
    problems: list[str] = []
    compare(policy_test_files._instant(value, "cases[0].at", problems), expected=expected)
    compare(problems, expected=[])


PLUS_2359 = dt.timezone(dt.timedelta(hours=23, minutes=59))


@pytest.mark.parametrize(("value", "problem"), [
    ("9999-12-31T23:59:59-23:59", "is an instant that cannot be held in UTC"),
    ("0001-01-01T00:00:00+23:59", "is an instant that cannot be held in UTC"),
    (dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.timezone(-dt.timedelta(hours=23, minutes=59))),
     "is an instant that cannot be held in UTC"),
    (dt.datetime(1, 1, 1, 0, 0, 0, tzinfo=PLUS_2359), "is an instant that cannot be held in UTC"),
    ("2026-W49-3T10:00:00Z", "is not an RFC 3339 time"),      # an ISO 8601 week date
    ("2026-12-02T10:00:00,5Z", "is not an RFC 3339 time"),    # a comma fraction
    ("20261202T100000Z", "is not an RFC 3339 time"),          # the basic format
    ("2026-336T10:00:00Z", "is not an RFC 3339 time"),        # an ordinal date
    ("2026-12-02T10:00Z", "is not an RFC 3339 time"),         # no seconds
    ("2026-12-02T10:00:00+0100", "is not an RFC 3339 time"),  # an offset without its colon
    ("2026-12-02T10:00:00+24:00", "is not an RFC 3339 time"),
    ("2026-02-30T10:00:00Z", "is not an RFC 3339 time"),
    ("2026-12-02T10:00:00", "has no time zone offset"),
])
def test_an_instant_out_of_utc_or_of_rfc3339s_grammar_is_refused_with_its_key(value: object, problem: str) -> None:
    problems: list[str] = []
    compare(policy_test_files._instant(value, "cases[0].at", problems), expected=None)
    compare(len(problems), expected=1)
    assert problems[0].startswith("cases[0].at: ") and problem in problems[0], problems
