"""AICR's assessment reports: the report's shape, its text in a ConfigMap, and what policies see of it."""


import json
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from aicr_core.domain.operator_api.object_reader import ObjectReader, is_mapping
from aicr_core.errors import AicrError, Code
from aicr_core.session import bounded_json


class ComponentAssessment(NamedTuple):
    component: str
    change: str
    from_version: str
    to_version: str
    verdict: str
    notes: str
    explanation: str
    precondition: str
    steps: tuple[str, ...]


class AssessmentReport(NamedTuple):
    components: tuple[ComponentAssessment, ...]
    summary: str


class ComponentVerdict(NamedTuple):
    component: str
    verdict: str  # safe | manual | blocked | unknown | unversioned


class Assessment(NamedTuple):
    """AICR's report for a rollout, as far as it could be verified: what approval policies see.

    `status` is the one `describe -o json` shows: `none` (the rollout records
    no report), `verified`, `unverified` (the content does not match the
    recorded digest), `invalid` (matches, but is not a report), `missing`
    (recorded, not found) or `unavailable` (could not be read). `components`
    holds the verdicts of a verified report only.
    """

    status: str
    digest: str | None = None
    components: tuple[ComponentVerdict, ...] = ()


def report_text(configmap: Mapping[str, Any]) -> str | None:
    """The exact text of report.json in an assessment ConfigMap (what the digest covers)."""
    value = ObjectReader(configmap, "assessment ConfigMap").mapping("data").get("report.json")
    return value if isinstance(value, str) else None


def parse_report(text: str) -> AssessmentReport:
    """Parse AICR's upgrade-check JSON; INVALID_OBJECT when it is not valid JSON of that shape."""
    r = _report(text)
    components = []
    for c in _components(r):
        notes = c.raw("notes")
        components.append(ComponentAssessment(
            c.text("component"), c.text("change"), _text(c.raw("from")), _text(c.raw("to")), c.text("verdict"),
            "; ".join(str(n) for n in notes) if isinstance(notes, list) else _text(notes),
            _text(c.raw("explanation")), _text(c.raw("precondition")),
            tuple(_text(s.get("description", s.get("id", "")) if isinstance(s, Mapping) else s)
                  for s in c.items("steps"))))
    summary = r.raw("summary")
    return AssessmentReport(tuple(components), summary if isinstance(summary, str) else
                            (json.dumps(summary, sort_keys=True) if summary is not None else ""))


def report_verdicts(text: str) -> tuple[ComponentVerdict, ...]:
    """Each component's verdict only (what a listing shows), with exactly the checks of `parse_report`:
    a report is invalid for both or for neither."""
    return tuple(ComponentVerdict(c.text("component"), c.text("verdict")) for c in _components(_report(text)))


def _report(text: str) -> ObjectReader:
    try:
        doc = bounded_json.loads(text)
    except ValueError as err:  # TooDeep: arrays or objects nested too deeply
        raise AicrError(Code.INVALID_OBJECT, f"the assessment report is not valid JSON: {err}") from None
    if not is_mapping(doc):  # ObjectReader reads anything else as {}: an array would pass for an empty report
        raise AicrError(Code.INVALID_OBJECT, f"the assessment report is a JSON {_json_type(doc)}, not an object")
    return ObjectReader(doc, "assessment report")


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    return "null" if value is None else "number"


def _components(r: ObjectReader) -> Iterator[ObjectReader]:
    """The report's components, each with the fields that must have their types (or INVALID_OBJECT)."""
    for item in r.items("components"):
        if not is_mapping(item):
            raise AicrError(Code.INVALID_OBJECT, "assessment report: components[] has an unexpected type")
        c = r.sub(item, "assessment report: components[]")
        for name in ("component", "change", "verdict"):
            c.text(name)  # the type check is the point: INVALID_OBJECT when it is not a string
        c.items("steps")
        yield c


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
