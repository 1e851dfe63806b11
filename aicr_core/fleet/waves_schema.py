"""The waves file's schema (`WavesDocument`, pydantic, as the policy file's) and the words of each of its problems.

What each key holds is declared here: strict types (a YAML `yes` is no string, a `1` no boolean),
unknown keys forbidden, a wave's name, contexts or selector, a label selector as apimachinery
checks one, the soak a Go duration. `problem` says the first of pydantic's errors as the waves
file has always said it (`unknown key waves[0].soak (known: ...)`, `wave 'eu': contexts must be a
list of context names and globs`): an unknown key first, the shallowest first, then in the
document's order. Imported when a waves file is read (pydantic is loaded by then: the Kubernetes
client's); `waves_file` reads the file and turns the document into its waves.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from aicr_core.errors import shown

API_VERSION = "aicr.run/v1alpha1"
KIND = "Waves"
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
UNKNOWN = ("extra_forbidden", "invalid_key")  # pydantic's error types of a key the schema does not know


class Whole(ValueError):
    """A problem said whole: no location is put before it (a label key or value that apimachinery refuses)."""


class Soak(NamedTuple):
    text: str
    seconds: float


def _soak(value: Any) -> Soak:
    from aicr_core import go_duration

    if type(value) not in (str, int):
        raise ValueError(f"a Go duration such as 30m (got {shown(value)})")
    text = str(value)
    try:
        nanoseconds = go_duration.parse(text)
    except ValueError as err:
        raise ValueError(str(err)) from None
    if nanoseconds < 0:
        raise ValueError(f"must not be negative (got {text})")
    return Soak(text, nanoseconds / 1e9)


def _name(text: str) -> str:
    if not text.strip():
        raise ValueError("empty")
    return text


def _pattern(text: str) -> str:
    if not text.strip() or text.strip() == "!":
        raise ValueError("empty")
    return text


def _label_key(key: str) -> None:
    from aicr_core.session.label_selector import SelectorError, check_key

    try:
        check_key(key)
    except SelectorError as err:
        raise Whole(str(err)) from None


def _label_value(value: str) -> None:
    from aicr_core.session.label_selector import SelectorError, check_value

    try:
        check_value(value)
    except SelectorError as err:
        raise Whole(str(err)) from None


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)


class Expression(_Document):
    """One of a selector's matchExpressions: {key, operator, values}."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None

    @model_validator(mode="after")
    def _checked(self) -> Expression:
        _label_key(self.key)
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs values")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        for value in self.values or ():
            _label_value(value)
        return self


class LabelSelector(_Document):
    """A metav1.LabelSelector: all of matchLabels and matchExpressions must hold."""

    match_labels: dict[str, str] | None = Field(default=None, alias="matchLabels")
    match_expressions: list[Expression] | None = Field(default=None, alias="matchExpressions")

    @model_validator(mode="after")
    def _checked(self) -> LabelSelector:
        for key, value in (self.match_labels or {}).items():
            _label_key(key)
            _label_value(value)
        return self


class WaveDocument(_Document):
    name: Annotated[str, AfterValidator(_name)]
    contexts: Annotated[list[Annotated[str, AfterValidator(_pattern)]], Field(min_length=1)] | None = None
    selector: LabelSelector = Field(default=None)  # type: ignore[assignment]  # an explicit null is refused
    optional: bool = False

    @model_validator(mode="after")
    def _chooses(self) -> WaveDocument:
        if self.contexts is None and self.selector is None:
            raise ValueError("contexts must be a list of context names and globs")
        return self


class WavesDocument(_Document):
    api_version: Literal["aicr.run/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Waves"]
    waves: Annotated[list[WaveDocument], Field(min_length=1)]
    soak: Annotated[Soak, BeforeValidator(_soak)] = Soak("0s", 0.0)
    max_failures: Annotated[int, Field(ge=0)] = Field(default=0, alias="maxFailures")

    @model_validator(mode="after")
    def _names_once(self) -> WavesDocument:
        seen: set[str] = set()
        for wave in self.waves:
            if wave.name in seen:
                raise Whole(f"wave {shown(wave.name)}: two waves have that name")
            seen.add(wave.name)
        return self


# -- the words of a problem ------------------------------------------------------------------------

def known(model: type[BaseModel]) -> str:
    return ", ".join(field.alias or name for name, field in model.model_fields.items())


def key_text(key: Any) -> str:
    return key if isinstance(key, str) and len(key) <= 60 else shown(key)


def first(errors: Sequence[Any]) -> Any:
    """The problem to say: an unknown key first (the shallowest), else pydantic's first."""
    return sorted(errors, key=lambda e: (0, len(e["loc"])) if e["type"] in UNKNOWN else (1, 0))[0]


def said(error: Any) -> str:
    """A validator's own words (a ValueError raised in one), or pydantic's."""
    raised = (error.get("ctx") or {}).get("error")
    return str(raised) if raised is not None else str(error["msg"])


def problem(err: ValidationError, doc: Mapping[str, Any]) -> str:
    """The first problem of a waves document, in the waves file's words."""
    error = first(err.errors())
    loc, kind = tuple(error["loc"]), error["type"]
    if loc and loc[0] == "waves" and len(loc) >= 2 and isinstance(loc[1], int):
        return _wave_problem(error, loc[1], loc[2:], doc["waves"][loc[1]])
    if kind in UNKNOWN:
        return f"unknown key {key_text(loc[0])} (known: {known(WavesDocument)})"
    top = loc[0] if loc else ""
    if top == "apiVersion":
        return f"apiVersion must be {API_VERSION} (got {shown(doc.get('apiVersion'))})"
    if top == "kind":
        return f"kind must be {KIND} (got {shown(doc.get('kind'))})"
    if top == "waves":
        return "waves: at least one wave is needed"
    if top == "soak":
        return f"soak: {said(error)}"
    if top == "maxFailures":
        return f"maxFailures: a whole number of clusters, 0 or more (got {shown(doc.get('maxFailures'))})"
    return said(error)  # the document's own rule (two waves of one name)


def _wave_problem(error: Any, index: int, loc: tuple[Any, ...], raw: Any) -> str:
    where = f"waves[{index}]"
    if not loc:
        if error["type"] == "model_type":
            return f"{where}: a wave is a mapping with name and contexts (or selector)"
        return f"wave {shown(raw.get('name'))}: {said(error)}"
    field = loc[0]
    if error["type"] in UNKNOWN and len(loc) == 1:
        return f"unknown key {where}.{key_text(field)} (known: {known(WaveDocument)})"
    name = f"wave {shown(raw.get('name'))}"
    if field == "name":
        return f"{where}.name: every wave needs a name"
    if field == "contexts":
        return f"{name}: contexts must be a list of context names and globs"
    if field == "optional":
        return f"{name}: optional must be true or false (got {type(raw.get('optional')).__name__})"
    return f"{name}: selector: {_selector_problem(error, loc[1:], raw.get('selector'))}"


def _selector_problem(error: Any, loc: tuple[Any, ...], raw: Any) -> str:
    raised = (error.get("ctx") or {}).get("error")
    if isinstance(raised, Whole):
        return str(raised)
    if not loc:
        return "a label selector is a mapping with matchLabels and/or matchExpressions"
    field = loc[0]
    if error["type"] in UNKNOWN and len(loc) == 1:
        return f"unknown key {key_text(field)} (known: {known(LabelSelector)})"
    if field == "matchLabels":
        if len(loc) == 1:
            return "matchLabels: a mapping of label keys to values"
        return f"matchLabels: {shown(loc[1])}: keys and values are strings (quote a value such as \"true\")"
    if len(loc) == 1:
        return "matchExpressions: a list of {key, operator, values}"
    at, rest = f"matchExpressions[{loc[1]}]", loc[2:]
    expression = raw["matchExpressions"][loc[1]]
    if not rest:
        if error["type"] == "model_type":
            return f"{at}: a mapping with key, operator and values"
        return f"{at}: {said(error)}"
    if error["type"] in UNKNOWN:
        return f"unknown key {at}.{key_text(rest[0])} (known: {known(Expression)})"
    if rest[0] == "key":
        return f"{at}.key: a label key"
    if rest[0] == "operator":
        return f"{at}.operator must be {', '.join(OPERATORS)} (got {shown(expression.get('operator'))})"
    return f"{at}.values: a list of strings"
