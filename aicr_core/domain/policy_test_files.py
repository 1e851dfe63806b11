"""`policy test`'s test files: found, read within bounds, checked (every problem with its key path), and
their fixtures turned into the objects a cluster would hold.

The contract is docs/policies.md ("Testing a policy file"). A test file (`kind: ApprovalPolicyTest`) names a
policy file, fixture rollouts and assessment reports (files or inline objects) and cases. A test file
that is not valid is TestFileInvalid ([USAGE]), found before any case runs; a fixture file that cannot
be read or used is a FixtureProblem, which fails that test file's cases only
(aicr_core/domain/policy_tests.py runs them).
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from aicr_core.domain import operator_api as api
from aicr_core.domain import policy_file, rollouts
from aicr_core.errors import AicrError, Code, VerdictWord
from aicr_core.go_duration import ParsedDuration

API_VERSION = "aicr.run/v1alpha1"
KIND = "ApprovalPolicyTest"
SUFFIX = ".aicr-test.yaml"  # what a directory search finds
MAX_TEST_FILE_BYTES = 1024 * 1024  # as the policy file (a ConfigMap's limit)
MAX_FIXTURE_BYTES = 16 * 1024 * 1024  # a fixture file may hold many reports of up to 1 MiB each
_MODEL_NAME = re.compile(r" or instance of _\w+")  # pydantic names our model classes; a user knows none


class TestFileInvalid(AicrError):
    """A test file that is not valid: [USAGE], the file and the key path of each problem."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        more = f" (and {len(problems) - 1} more problem(s) below)" if len(problems) > 1 else ""
        super().__init__(Code.USAGE, f"test file {path}: {problems[0]}{more}", list(problems[1:]))
        self.problems = list(problems)


# -- finding test files -------------------------------------------------------------------------------

def find_test_files(paths: Sequence[str]) -> list[str]:
    """The test files under `paths` (default `.`), in path order: a file as given, a directory searched
    recursively for `*.aicr-test.yaml` (hidden directories, such as .git or .venv, are not searched)."""
    from aicr_core.errors import UsageError

    found: list[str] = []
    for path in paths or ["."]:
        if os.path.isdir(path):
            found += _search(path)
        elif os.path.exists(path):
            found.append(path)
        else:
            raise UsageError(f"{path}: no such file or directory")
    unique = list(dict.fromkeys(os.path.normpath(p) for p in found))
    if not unique:
        raise UsageError(f"no test file (*{SUFFIX}) under {', '.join(paths or ['.'])}")
    return unique


def _search(root: str) -> Iterator[str]:
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(SUFFIX):
                yield os.path.join(folder, name)


# -- the schema ---------------------------------------------------------------------------------------

class _Strict(BaseModel):
    """Unknown keys are errors, and a value of the wrong type is never coerced (`"yes"` is no boolean)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=False)


PolicyVerdict = Literal["allow", "deny", "warn", "overridden", "error", "skipped"]  # as `policy check` reports
assert set(get_args(PolicyVerdict)) == {v.value for v in VerdictWord}


class _Expect(_Strict):
    allowed: bool
    code: str | None = None
    policies: dict[str, PolicyVerdict] = {}


class _Case(_Strict):
    name: str
    rollout: str
    action: str  # a name of the Action table (read when a file is checked: a new action is testable offline)
    user: str
    groups: list[str] = []
    reason: str | None = None
    expires: str | None = None
    overrides: list[str] = []
    at: Any  # an RFC 3339 string (or what YAML reads an unquoted one as): checked below
    expect: _Expect

    @field_validator("action")
    @classmethod
    def _an_action(cls, value: str) -> str:
        from aicr_core.domain.actions import ACTIONS

        if value not in ACTIONS:
            names = [repr(name) for name in ACTIONS]
            expected = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return value


class _TestFile(_Strict):
    api_version: Literal["aicr.run/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["ApprovalPolicyTest"]
    policy: str
    rollouts: list[Any] = []  # file names and objects: checked below
    reports: list[Any] = []
    cases: list[Any] = Field(min_length=1)  # each checked on its own, so that every case's problems show


@dataclass(frozen=True)
class Case:
    """One case, checked: what the real command would be given, and what the test expects."""

    __test__ = False

    index: int
    name: str
    rollout: str
    action: str
    user: str
    groups: tuple[str, ...]
    reason: str | None
    expires: ParsedDuration | None
    overrides: tuple[str, ...]
    at: datetime  # UTC, whole seconds: the precision the real command decides at
    allowed: bool
    code: str | None
    policies: Mapping[str, str]


@dataclass(frozen=True)
class Fixture:
    """A fixture as the test file names it: a file (relative to the test file) or an inline object."""

    where: str  # rollouts[1]
    path: str | None = None
    obj: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class TestFile:
    __test__ = False

    path: str
    policy: str  # the policy file's path, relative to the working directory (or absolute)
    rollouts: tuple[Fixture, ...]
    reports: tuple[Fixture, ...]
    cases: tuple[Case, ...]


def load_test_file(path: str) -> TestFile:
    """The test file at `path`, checked; TestFileInvalid ([USAGE]) naming each problem's key path."""
    text = read_bounded(path, MAX_TEST_FILE_BYTES, lambda why: TestFileInvalid(path, [f"(file): {why}"]))
    try:
        documents = policy_file.load_documents(text)
    except ValueError as err:
        raise TestFileInvalid(path, [str(err)]) from None
    if len(documents) != 1 or not isinstance(documents[0], dict):
        found = f"{len(documents)} documents" if len(documents) != 1 else f"a {type(documents[0]).__name__}"
        raise TestFileInvalid(path, [f"(file): expected one {KIND} document (a mapping), found {found}"])
    raw = documents[0]
    try:
        model = policy_file.validate(_TestFile, raw, path)
    except policy_file.PolicyFileError as err:
        raise TestFileInvalid(path, [_MODEL_NAME.sub("", problem) for problem in err.problems]) from None
    problems: list[str] = []
    folder = os.path.dirname(path)
    rollouts = tuple(_fixtures(model.rollouts, "rollouts", folder, problems, _check_inline_rollout))
    reports = tuple(_fixtures(model.reports, "reports", folder, problems, _check_inline_report))
    _check_duplicates([f for f in rollouts if f.obj is not None], problems)
    cases = []
    seen: dict[str, int] = {}
    for i, raw_case in enumerate(model.cases):
        where = f"cases[{i}]"
        if not isinstance(raw_case, dict):
            problems.append(f"{where}: a case (a mapping of name, rollout, action, ...), not {_type_name(raw_case)}")
            continue
        try:
            case = policy_file.validate(_Case, raw_case, path, where)
        except policy_file.PolicyFileError as err:
            problems += [_MODEL_NAME.sub("", problem) for problem in err.problems]
            continue
        if case.name in seen:
            problems.append(f"{where}.name: duplicate case name {case.name!r} (also cases[{seen[case.name]}])")
        seen.setdefault(case.name, i)
        checked = _check_case(i, case, where, problems)
        if checked is not None:
            cases.append(checked)
    if not model.policy.strip():
        problems.append("policy: must not be empty")
    if problems:
        raise TestFileInvalid(path, problems)
    return TestFile(path, _beside(folder, model.policy), rollouts, reports, tuple(cases))


def _beside(folder: str, name: str) -> str:
    """A path the test file names, relative to the test file's folder (an absolute one as it is)."""
    return os.path.normpath(os.path.join(folder, name)) if not os.path.isabs(name) else name


def _fixtures(entries: list[Any], key: str, folder: str, problems: list[str],
              check: Callable[[Mapping[str, Any], str, list[str]], None]) -> Iterator[Fixture]:
    for i, entry in enumerate(entries):
        where = f"{key}[{i}]"
        if isinstance(entry, str) and entry.strip():
            yield Fixture(where, path=_beside(folder, entry))
        elif isinstance(entry, dict):
            check(entry, where, problems)
            yield Fixture(where, obj=entry)
        else:
            problems.append(f"{where}: a file name (relative to the test file) or an object, "
                            f"not {_type_name(entry)}")


def _check_inline_rollout(obj: Mapping[str, Any], where: str, problems: list[str]) -> None:
    problem = _rollout_problem(obj)
    if problem is not None:
        problems.append(f"{where}{problem}")


def _rollout_problem(obj: Mapping[str, Any]) -> str | None:
    """What keeps `obj` from being a RuntimeRollout as the API serves it (`.kind: ...`), if anything."""
    if obj.get("kind") != "RuntimeRollout":
        return f".kind: expected RuntimeRollout, got {_shown(obj.get('kind'))}"
    if not _name(obj):
        return ".metadata.name: required, a string"
    try:
        rollouts.parse_rollout(obj)
    except AicrError as err:
        return f": {err.message}"
    return None


def _check_inline_report(obj: Mapping[str, Any], where: str, problems: list[str]) -> None:
    problem = _report_problem(obj)
    if problem is not None:
        problems.append(f"{where}{problem}")


def _report_problem(obj: Mapping[str, Any]) -> str | None:
    if obj.get("kind") != "ConfigMap":
        return f".kind: expected ConfigMap (an assessment report), got {_shown(obj.get('kind'))}"
    if not _name(obj):
        return ".metadata.name: required, a string"
    namespace = (obj.get("metadata") or {}).get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        return f".metadata.namespace: a string, not {_type_name(namespace)}"
    data = obj.get("data")
    if data is not None and not isinstance(data, dict):
        return f".data: a mapping, not {_type_name(data)}"
    return None


def _check_duplicates(inline: list[Fixture], problems: list[str]) -> None:
    seen: dict[str, str] = {}
    for fixture in inline:
        assert fixture.obj is not None
        name = _name(fixture.obj)
        if name in seen:
            problems.append(f"{fixture.where}.metadata.name: a second rollout named {name!r} (also {seen[name]})")
        seen.setdefault(name, fixture.where)


def _check_case(index: int, case: _Case, where: str, problems: list[str]) -> Case | None:
    """What the schema cannot say: the values' own bounds, as the real command checks its flags."""
    from aicr_core.domain.action_rules import MIN_APPROVAL, approval_expiry_problem
    from aicr_core.domain.write_limits import MAX_API_TIME, is_utf8

    before = len(problems)
    for key, text in (("name", case.name), ("rollout", case.rollout), ("user", case.user)):
        if not text.strip():
            problems.append(f"{where}.{key}: must not be empty")
    for key, names in (("groups", case.groups), ("overrides", case.overrides)):
        for i, name in enumerate(names):
            if not name.strip():
                problems.append(f"{where}.{key}[{i}]: must not be empty")
    at = _instant(case.at, f"{where}.at", problems)
    from aicr_core.domain.actions import ACTIONS

    reason, action = case.reason, ACTIONS[case.action]
    if action.takes_reason:
        from aicr_core.domain.write_limits import REASON_MAX

        if reason is None:
            problems.append(f"{where}.reason: required key is missing ({case.action} needs a reason, as "
                            f"--reason for the real command)")
        elif not reason.strip():
            problems.append(f"{where}.reason: must not be empty")
        elif not is_utf8(reason):
            problems.append(f"{where}.reason: holds a lone surrogate, which is not UTF-8 text")
        elif len(reason) > REASON_MAX:
            problems.append(f"{where}.reason: {len(reason)} characters; at most {REASON_MAX} are allowed")
    elif reason is not None:
        problems.append(f"{where}.reason: {case.action} takes no reason")
    expires: ParsedDuration | None = None
    if case.expires is not None:
        if not action.takes_expires:
            takers = " and ".join(a.name for a in ACTIONS.values() if a.takes_expires)
            problems.append(f"{where}.expires: only {takers} takes an expiry, not {case.action}")
        else:
            expires = _duration(case.expires, f"{where}.expires", problems)
    if expires is not None and at is not None:
        try:
            ends: datetime | None = at + expires.delta
        except OverflowError:
            ends = None
        if ends is None or ends > MAX_API_TIME:
            problems.append(f"{where}.expires: {expires.text} ends after the latest time the API can store")
        elif approval_expiry_problem(ends, at):
            problems.append(f"{where}.expires: {expires.text} is shorter than the minimum, "
                            f"{MIN_APPROVAL.seconds // 60}m (as --expires refuses it)")
    code = case.expect.code
    if code is not None and code not in Code.__members__:
        problems.append(f"{where}.expect.code: {code!r} is no CODE of kubectl aicr ({', '.join(Code.__members__)})")
    if code is not None and case.expect.allowed:
        problems.append(f"{where}.expect.code: a case that is allowed fails with no code (expect.allowed is true)")
    if len(problems) > before or at is None:
        return None
    return Case(index, case.name, case.rollout, case.action, case.user, tuple(case.groups), reason, expires,
                tuple(case.overrides), at, case.expect.allowed, code, dict(case.expect.policies))


# RFC 3339's date-time (section 5.6): `T` (or, as it allows, a space) between date and time, an
# optional fraction, `Z` or a numeric offset. ISO 8601's other forms (week dates, comma fractions,
# the basic format 20261202T100000Z) are not RFC 3339.
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))?",
                      re.ASCII)


def _instant(value: Any, where: str, problems: list[str]) -> datetime | None:
    """`at`: RFC 3339 with an offset (`Z`, `+01:00`); YAML reads an unquoted one as a datetime already."""
    moment: datetime | None = None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        moment = _rfc3339(value.strip())
        if moment is None and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip(), re.ASCII):
            problems.append(f"{where}: {_shown(value)} is a date; give a time too (2026-12-02T10:00:00+01:00)")
            return None
        if moment is None:
            problems.append(f"{where}: {_shown(value)} is not an RFC 3339 time such as 2026-12-02T10:00:00+01:00")
            return None
    else:
        problems.append(f"{where}: an RFC 3339 time such as \"2026-12-02T10:00:00+01:00\", not {_type_name(value)}")
        return None
    if moment.tzinfo is None or moment.utcoffset() is None:
        problems.append(f"{where}: {_shown(str(value))} has no time zone offset (add Z or +01:00)")
        return None
    try:
        return moment.astimezone(timezone.utc).replace(microsecond=0)
    except OverflowError:
        problems.append(f"{where}: {_shown(str(value))} is an instant that cannot be held in UTC "
                        "(years 1 to 9999 only)")
        return None


def _rfc3339(text: str) -> datetime | None:
    """The instant RFC 3339 `text` names (naive without an offset, for the caller to refuse), or None when it
    is not RFC 3339's form or no date."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    offset: timedelta | None = None
    if match.group(8):
        offset = timedelta(0)
    elif match.group(9):
        hours, minutes = int(match.group(10)), int(match.group(11))
        if hours > 23 or minutes > 59:
            return None
        offset = (1 if match.group(9) == "+" else -1) * timedelta(hours=hours, minutes=minutes)
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=None if offset is None else timezone(offset))
    except ValueError:  # February 30th, hour 24, a leap second: Python's datetime holds none of them
        return None


def _duration(text: str, where: str, problems: list[str]) -> ParsedDuration | None:
    import argparse

    from aicr_core.go_duration import parse_duration

    try:
        parsed = parse_duration(text)
    except argparse.ArgumentTypeError as err:
        problems.append(f"{where}: {err} (a Go duration such as 2h or 90m)")
        return None
    if parsed.nanoseconds < 0:
        problems.append(f"{where}: must not be negative (got {text})")
        return None
    return parsed


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def _type_name(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def _shown(value: Any) -> str:
    """A value for a message, bounded (an input's value is never formatted whole)."""
    if isinstance(value, str):
        return repr(value[:80] + ("..." if len(value) > 80 else ""))
    return _type_name(value) if not isinstance(value, (int, float, bool)) else repr(value)


# -- reading files, bounded ---------------------------------------------------------------------------

def read_bounded(path: str, limit: int, refuse: Callable[[str], Exception]) -> str:
    """A regular file's UTF-8 text of at most `limit` bytes, read no further (as the policy file is)."""
    from aicr_core.domain import local_files

    try:
        return local_files.read_text(path, limit)
    except local_files.Refused as refused:
        raise refuse(str(refused)) from None
    except UnicodeDecodeError:
        raise refuse("not UTF-8 text") from None
    except OSError as err:
        raise refuse(f"cannot read it: {err.strerror or err}") from None


# -- fixtures: the objects a cluster would hold --------------------------------------------------------

class FixtureProblem(Exception):
    """A fixture or the policy file that cannot be read as the test file asks: its cases fail."""


class Objects:
    """The fixture objects, answering reads by API path as a cluster session would (`get`), so that the
    domain reads (`rollouts.read_rollout`, `rollouts.read_report`) run on them unchanged."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.origins: dict[str, str] = {}

    def get(self, path: str) -> dict[str, Any]:
        found = self.objects.get(path)
        if found is None:
            raise AicrError(Code.NOT_FOUND, f"{path} not found")
        return found

    def add(self, path: str, obj: dict[str, Any], origin: str) -> None:
        if path in self.origins:
            raise FixtureProblem(f"{origin}: a second object at {path} (also {self.origins[path]})")
        self.objects[path], self.origins[path] = obj, origin

    def rollout_names(self) -> list[str]:
        prefix = api.rollout_path("")
        return sorted(p.removeprefix(prefix) for p in self.objects if p.startswith(prefix))


def fixture_objects(test_file: TestFile, operator_namespace: str) -> Objects:
    """The test file's rollouts and reports; FixtureProblem naming the fixture that cannot be used.

    Reports are ConfigMaps as they sit in the operator namespace: one without a namespace is taken to
    be there; one in another namespace is not where the cluster would look (as on a cluster).
    """
    objects = Objects()
    for fixture in test_file.rollouts:
        for origin, obj in _objects_of(fixture):
            problem = _rollout_problem(obj)
            if problem is not None:
                raise FixtureProblem(f"{origin}{problem}")
            objects.add(api.rollout_path(_name(obj)), obj, origin)
    for fixture in test_file.reports:
        for origin, obj in _objects_of(fixture):
            problem = _report_problem(obj)
            if problem is not None:
                raise FixtureProblem(f"{origin}{problem}")
            namespace = (obj.get("metadata") or {}).get("namespace") or operator_namespace
            objects.add(api.configmap_path(namespace, _name(obj)), obj, origin)
    return objects


def _objects_of(fixture: Fixture) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each object of a fixture (a `List` or `*List`'s items one by one), with where it comes from."""
    if fixture.obj is not None:
        yield fixture.where, dict(fixture.obj)
        return
    assert fixture.path is not None
    origin = f"{fixture.where} ({fixture.path})"
    text = read_bounded(fixture.path, MAX_FIXTURE_BYTES, lambda why: FixtureProblem(f"fixture {fixture.path}: {why}"))
    try:
        documents = policy_file.load_documents(text)
    except ValueError as err:
        raise FixtureProblem(f"fixture {fixture.path} does not parse: {err}") from None
    for d, document in enumerate(documents):
        where = f"{origin} document {d + 1}" if len(documents) > 1 else origin
        if not isinstance(document, dict):
            raise FixtureProblem(f"{where}: an object, not {_type_name(document)}")
        kind = document.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in document:
            items = document["items"]
            if not isinstance(items, list):
                raise FixtureProblem(f"{where}.items: a list, not {_type_name(items)}")
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    raise FixtureProblem(f"{where}.items[{i}]: an object, not {_type_name(item)}")
                yield f"{where}.items[{i}]", item
        else:
            yield where, document
