"""Properties, with hypothesis: whatever the cluster holds, the mapping module answers with a value or a
CODE naming the field, never another exception; and `safe()` lets no control, format or separator
character through.

Objects are generated two ways: any JSON object at all, and the samples with any part replaced by any
JSON value (so deep fields such as spec.steps[].release get hit, not only the top).
"""
from __future__ import annotations

import copy
import io
import json
import os
import re
import unicodedata
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from aicr_commands import reproduce
from aicr_core.domain import operator_api as api
from aicr_core.domain import rollout_documents as describe
from aicr_core.domain import rollouts
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.errors import AicrError
from aicr_core.framework.result import Result
from aicr_core.framework.terminal import safe
from aicr_renderers.text import TextRenderer

from support.samples import REPORT, ROLLOUT

settings.register_profile("aicr", database=None, deadline=None, max_examples=300,
                          derandomize=os.environ.get("CI") == "true",  # CI: the same examples every run
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("aicr")

TIMES = st.one_of(
    st.datetimes().map(lambda d: d.isoformat() + "Z"),
    st.sampled_from(["2026-11-30T06:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
                     "2026-13-01T00:00:00Z", "2026-11-30T06:00:00.123456789Z", "2026-11-30", "", "Z", "now"]),
)
JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                        st.text(max_size=20), TIMES)
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)), max_leaves=12)
JSON_OBJECTS = st.dictionaries(st.text(max_size=12), JSON_VALUES, max_size=6)


def mutations(base: Any) -> st.SearchStrategy[Any]:
    """`base`, with any node kept, dropped (for dict keys) or replaced by any JSON value."""
    if isinstance(base, dict):
        kept = st.fixed_dictionaries({}, optional={k: mutations(v) for k, v in base.items()})
        return st.one_of(kept, JSON_VALUES) if base else JSON_VALUES
    if isinstance(base, list):
        element = mutations(base[0]) if base else JSON_VALUES
        return st.one_of(st.lists(element, max_size=4), JSON_VALUES)
    if isinstance(base, str):
        return st.one_of(st.just(base), TIMES, JSON_VALUES)
    return st.one_of(st.just(base), JSON_VALUES)


FIELD_ERROR = re.compile(r": [\w.\[\]-]+(\[\])? (has an unexpected type|is missing|is not a time: .*)$"
                         r"|^the assessment report is a JSON \w+, not an object$")

PLAN = {"metadata": {"name": "aicr-plan-" + "a" * 16, "annotations": {
    "operator.aicr.run/digest": "sha256:" + "a" * 64, "operator.aicr.run/source": "recipe"}},
    "data": {"recipe.json": "{}", "recipeDigest": api.sha256_digest("{}"), "renderFlags": '["--a", "b"]',
             "aicrImage": "ghcr.io/nvidia/aicr@sha256:" + "1" * 64,
             "bundle": "oci://registry.example.com/b@sha256:" + "2" * 64}}
RUNTIME = {"metadata": {"uid": "u"}, "status": {"activePlan": {"digest": "sha256:" + "a" * 64},
                                                "candidatePlan": {"digest": "sha256:" + "b" * 64}}}


def refused_naming_a_field(err: AicrError, codes: tuple[str, ...] = ("INVALID_OBJECT",)) -> None:
    assert err.code in codes, (err.code, err.message)
    if err.code == "INVALID_OBJECT":
        assert FIELD_ERROR.search(err.message), err.message
    else:
        assert re.search(r"renderFlags(\[\d+\])? is not", err.message), err.message


def with_spec(**spec: Any) -> dict[str, Any]:
    obj = copy.deepcopy(ROLLOUT)
    obj["spec"].update(spec)
    return obj


@given(st.one_of(JSON_OBJECTS, mutations(ROLLOUT)))
@example(with_spec(deadline="0001-01-01T00:00:00+01:00"))  # found by this test: an OverflowError once
@example(with_spec(approval={"user": "a", "reason": "r", "expires": "9999-12-31T23:59:59-01:00"}))
def test_any_object_as_a_rollout(obj: Any) -> None:
    try:
        rollout = parse_rollout(obj)
    except AicrError as err:
        refused_naming_a_field(err)
        return
    # A rollout that parses can be described and printed.
    out = io.StringIO()
    TextRenderer().render(Result("RolloutDescription", describe.describe(rollout, describe.assessment("none"))), out)
    assert out.getvalue().startswith("Rollout:")


@given(st.one_of(JSON_OBJECTS, mutations(RUNTIME)))
def test_any_object_as_a_runtime(obj: Any) -> None:
    try:
        runtime = api.parse_runtime(obj)
    except AicrError as err:
        refused_naming_a_field(err)
        return
    assert runtime.active_plan is None or isinstance(runtime.active_plan, str)


@given(st.one_of(JSON_OBJECTS, mutations(PLAN)))
def test_any_object_as_a_plan_configmap(obj: Any) -> None:
    try:
        plan = api.parse_plan(obj)
    except AicrError as err:
        refused_naming_a_field(err, ("INVALID_OBJECT", "INVALID_PLAN"))
        return
    try:
        reproduce.checked_recipe(plan, PLAN["metadata"]["name"], None)
    except AicrError as err:
        assert err.code in ("NOT_FOUND", "NO_RECIPE", "NO_RENDER_FLAGS", "INVALID_PLAN", "DIGEST_MISMATCH"), err


@given(st.one_of(JSON_VALUES, mutations(json.loads(REPORT))))
def test_any_json_as_an_assessment_report(doc: Any) -> None:
    text = json.dumps(doc)
    try:
        api.parse_report(text)
    except AicrError as err:
        refused_naming_a_field(err)
        return
    verified = describe.assessment_document(rollouts.verify_report(api.sha256_digest(text), text, "aicr-system/x"))
    assert verified["status"] == "verified"
    out = io.StringIO()
    data = describe.describe(parse_rollout(copy.deepcopy(ROLLOUT)), verified)
    TextRenderer().render(Result("RolloutDescription", data), out)


ESCAPED = {"Cc", "Cf", "Zl", "Zp", "Cs"}


@given(st.text(alphabet=st.characters(codec=None, categories=None)), st.booleans())
def test_safe_lets_no_dangerous_character_through(text: str, allow_newlines: bool) -> None:
    allowed = "\t\n" if allow_newlines else "\t"
    cleaned = safe(text, allow_newlines=allow_newlines)
    assert not [c for c in cleaned if unicodedata.category(c) in ESCAPED and c not in allowed], repr(cleaned)
    if all(unicodedata.category(c) not in ESCAPED for c in text):
        assert cleaned == text  # nothing else is touched
