"""The cluster's approval policy file (`ApprovalPolicy`): its schema, parsing and errors.

The contract is docs/policies.md. The file lives in the ConfigMap
`aicr-approval-policy` (key `policy.yaml`) of the operator namespace, or is
given with `--policy-file` to try a change. This module only turns text into
a validated document; it does no I/O (the CLI reads the ConfigMap through its
session, an admission webhook reads it its own way) and knows no particular
policy: each policy validates its own settings (`SETTINGS_MODEL`, see
hookspecs.py) through `validate_settings`.

Validation is pydantic's (already loaded by the Kubernetes client, so it costs
no start-up time). Every problem is reported with its key path
(`policies.change-window.windows[0].from`) and what is wrong; the policy
engine turns problems into `[POLICY_ERROR]` on every write (fail closed).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

from aicr_core.errors import AicrError, Code, shown, shown_argument

API_VERSION = "aicr.run/v1alpha1"
KIND = "ApprovalPolicy"
CONFIGMAP_NAME = "aicr-approval-policy"
CONFIGMAP_KEY = "policy.yaml"
MAX_BYTES = 1024 * 1024  # a ConfigMap holds at most 1 MiB


def configmap_source(namespace: str) -> str:
    """How errors name the cluster's policy file."""
    return f"ConfigMap {namespace}/{CONFIGMAP_NAME} (key {CONFIGMAP_KEY})"


def configmap_text(configmap: Mapping[str, Any], source: str) -> str:
    """The file's text in the ConfigMap (as read from the API); PolicyFileError if the key is missing."""
    data = configmap.get("data") if isinstance(configmap, Mapping) else None
    text = data.get(CONFIGMAP_KEY) if isinstance(data, Mapping) else None
    if not isinstance(text, str):
        keys = ", ".join(sorted(str(k) for k in data)) if isinstance(data, Mapping) and data else "none"
        raise PolicyFileError(source, [f"(ConfigMap): no key {CONFIGMAP_KEY} in data (keys: {keys})"])
    return text


class PolicyFileError(Exception):
    """The file does not validate: each problem is `key.path: what is wrong`."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        super().__init__(f"{source}: " + "; ".join(problems))
        self.source = source
        self.problems = list(problems)

    def as_error(self) -> AicrError:
        return AicrError(Code.POLICY_ERROR, f"policy file {self.source} does not validate; "
                         "refusing every approval, revocation and acknowledgement (fail closed)", self.problems)


# -- building blocks for settings models (built-in and site policies) ------------------------

class SettingsModel(BaseModel):
    """Base of a policy's `SETTINGS_MODEL`: unknown keys are errors, values are read-only."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)

    def covers(self, action: str) -> bool:
        """Does the policy, so set up, decide `action` (approve, revoke, acknowledge)? Default: every action
        whose hook it implements. A policy whose settings choose its actions (reason-format's `actions`)
        says no for the others, and the engine then neither runs it nor lists it for that action."""
        return True


def _nonempty(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


def _go_duration(value: Any) -> timedelta:
    from aicr_core.go_duration import parse_duration  # Go's syntax, exactly as --expires reads it

    if not isinstance(value, str):
        raise ValueError(f"must be a Go duration string such as 8h or 90m, not {shown(value)}")
    try:
        parsed = parse_duration(value)
    except Exception as err:  # argparse.ArgumentTypeError from the flag parser
        raise ValueError(str(err)) from None
    if parsed.nanoseconds < 0:
        raise ValueError(f"{shown(value)} is negative")
    return parsed.delta


def _version(text: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        Version(text)
    except InvalidVersion:
        raise ValueError(f"{shown(text)} is not a version such as 1.0 or 2.3.1") from None
    return text


def _no_none(value: Any) -> Any:
    """`four-eyes:` with nothing after it is an entry with default settings."""
    return {} if value is None else value


NonEmptyStr = Annotated[str, AfterValidator(_nonempty)]
GoDuration = Annotated[timedelta, BeforeValidator(_go_duration)]
VersionStr = Annotated[str, AfterValidator(_version)]

M = TypeVar("M", bound=BaseModel)


# -- the document ---------------------------------------------------------------------------

class Requirement(SettingsModel):
    """A policy plugin that must be installed for any write to go ahead."""

    name: NonEmptyStr
    distribution: NonEmptyStr | None = None
    min_version: VersionStr | None = Field(default=None, alias="minVersion")


class PolicyEntry(BaseModel):
    """One policy's entry: `mode` and `overridable` for any policy; the rest are its settings."""

    model_config = ConfigDict(extra="allow", frozen=True)

    mode: Literal["enforce", "warn"] = "enforce"
    overridable: bool = Field(default=False, strict=True)

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


Policies = dict[NonEmptyStr, Annotated[PolicyEntry, BeforeValidator(_no_none)]]


class ApprovalPolicy(SettingsModel):
    api_version: Literal["aicr.run/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["ApprovalPolicy"]
    required: list[Requirement] = []
    policies: Policies = {}


_POLICIES: TypeAdapter[dict[str, PolicyEntry]] = TypeAdapter(Annotated[Policies, BeforeValidator(_no_none)])
_REQUIRED: TypeAdapter[list[Requirement]] = TypeAdapter(Annotated[list[Requirement], BeforeValidator(
    lambda v: [] if v is None else v)])


@dataclass
class ParsedFile:
    """As much of a file as could be read: its policies and requirements, and every problem found."""

    policies: dict[str, PolicyEntry] = field(default_factory=dict)
    required: list[Requirement] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def parse(text: str, source: str) -> ParsedFile:
    """Parse and validate the file's text; every problem is collected, none raised.

    When the document as a whole does not validate (an unknown top-level key,
    say), its `policies` and `required` are still read where they can be, so
    that the policies' own settings are checked too and one run of
    `policy validate` reports everything.
    """
    try:
        raw = load_yaml(text, source)
    except PolicyFileError as err:
        return ParsedFile(problems=err.problems)
    try:
        document = validate(ApprovalPolicy, raw, source)
        return ParsedFile(dict(document.policies), list(document.required))
    except PolicyFileError as err:
        parsed = ParsedFile(problems=err.problems)
    for key, adapter in (("policies", _POLICIES), ("required", _REQUIRED)):
        try:
            setattr(parsed, key, adapter.validate_python(raw.get(key)))
        except (ValidationError, TypeError):
            pass  # already among the problems
    return parsed


def load_yaml(text: str, source: str) -> Mapping[str, Any]:
    """The one YAML mapping in `text`; PolicyFileError naming line and column otherwise."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise PolicyFileError(source, [f"(file): larger than {MAX_BYTES} bytes"])
    try:
        documents = load_documents(text)
    except ValueError as err:
        raise PolicyFileError(source, [str(err)]) from None
    if not documents:
        raise PolicyFileError(source, ["(file): empty; expected an ApprovalPolicy document"])
    if len(documents) != 1:
        raise PolicyFileError(source, [f"(file): expected one YAML document, found {len(documents)}"])
    if not isinstance(documents[0], Mapping):
        raise PolicyFileError(source, [f"(file): expected a mapping (apiVersion, kind, ...), "
                                       f"found {type(documents[0]).__name__}"])
    return documents[0]


def load_documents(text: str) -> list[Any]:
    """Every non-empty YAML document of `text`, as the policy file and `policy test`'s files are read:
    a key given twice in one mapping is an error (two `change-window:` entries are a mistake that would
    silently switch a rule off, not "the last one wins"), and aliases that expand far past the text are
    refused (aicr_core.session.bounded_yaml). ValueError: `(YAML) line L, column C: problem`, one line."""
    import yaml

    from aicr_core.session import bounded_yaml

    try:
        documents = bounded_yaml.load_all(text, unique_keys=True)
    except yaml.YAMLError as err:
        raise ValueError(_yaml_problem(err, text)) from None
    return [d for d in documents if d is not None]


def validate(model: type[M], data: Any, source: str, path: str = "") -> M:
    """`data` as `model`; PolicyFileError with every problem's key path under `path`."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise PolicyFileError(source, [_problem(e, path) for e in err.errors()]) from None


def validate_settings(model: type[M], settings: Mapping[str, Any], source: str, policy: str) -> M:
    """One policy's settings (its entry without mode/overridable), checked by its own model."""
    return validate(model, dict(settings), source, f"policies.{policy}")


def key_path(loc: Sequence[int | str], prefix: str = "") -> str:
    """('policies', 'change-window', 'windows', 0, 'from') -> policies.change-window.windows[0].from"""
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not str(part).startswith(("function-", "json-or-python", "lax-or-strict")):  # pydantic's internals
            name = shown_argument(str(part))  # a key of the file: short, or a short escaped prefix of it
            path += f".{name}" if path else name
    return path or "(top level)"


def _problem(error: Any, prefix: str) -> str:
    kind, message, value = error["type"], str(error["msg"]), error.get("input")
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "extra_forbidden":
        message = "unknown key"
    elif kind == "missing":
        message = "required key is missing"
    elif isinstance(value, (str, int, float, bool)) and kind not in ("value_error", "assertion_error"):
        message += f" (got {shown(value)})"
    return f"{key_path(error['loc'], prefix)}: {message}"


def _yaml_problem(err: Exception, text: str) -> str:
    """`(YAML) line L, column C: problem`, one line: PyYAML's own text spans lines and names no file."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None)
    position = getattr(err, "position", None)  # a ReaderError (a NUL byte, say) has a position, not a mark
    if mark is not None:
        line, column = mark.line + 1, mark.column + 1
    elif isinstance(position, int):
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
    else:
        line = column = 0
    if problem is None:
        reason, character = getattr(err, "reason", None), getattr(err, "character", None)
        problem = (f"character #x{ord(character) if isinstance(character, str) else character:04x}: {reason}"
                   if reason and character is not None else str(err).splitlines()[0])
    return f"(YAML) line {line}, column {column}: {problem}" if line else f"(YAML): {problem}"
