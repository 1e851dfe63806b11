"""Renderers: control characters never reach the terminal; text layouts match the golden files."""
from __future__ import annotations

import datetime as dt
import io
import json
import os
from pathlib import Path

import pytest
import yaml
from testfixtures import Replacer, compare, mock_datetime

from aicr_commands import reproduce
from aicr_core.domain import operator_api as api
from aicr_core.domain import rollout_documents as describe
from aicr_core.domain import rollouts
from aicr_core.domain.rollout_documents import item as listing_item
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.errors import AicrError
from aicr_core.framework.result import Result
from aicr_core.framework.terminal import safe
from aicr_renderers.json import JsonRenderer
from aicr_renderers.text import TextRenderer
from aicr_renderers.yaml import YamlRenderer

from support.samples import REPORT, REPORT_DIGEST, rollout

GOLDEN = Path(__file__).parent / "golden"
HOSTILE = "ok\x1b[2J\x1b]0;title\x07\r\x9b31m\u202eevil"
TROJAN = "\u2066\u2067\u2068\u2069\u202a\u202b\u202c\u202d\u200b\u200c\u200d\u200e\u200f\ufeff\u2028\u2029\u061c"


def render(renderer: object, result: Result) -> str:
    out = io.StringIO()
    renderer.render(result, out)  # type: ignore[attr-defined]
    return out.getvalue()


def test_safe_escapes_controls() -> None:
    compare(safe(HOSTILE, allow_newlines=False), expected="ok\\x1b[2J\\x1b]0;title\\x07\\x0d\\x9b31m\\u202eevil")
    compare(safe("a\u2066b\u200bc\u2028d\u2029e\u061cf\ufeffg\U000e0041h\tî\n日\u00a0", allow_newlines=True),
            expected="a\\u2066b\\u200bc\\u2028d\\u2029e\\u061cf\\ufeffg\\U000e0041h\tî\n日\u00a0")


def test_safe_escapes_every_character_of_the_dangerous_categories() -> None:
    import unicodedata

    dangerous = [chr(c) for c in range(0x110000)
                 if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp", "Cs") and chr(c) not in "\t\n"]
    assert len(dangerous) > 2000, len(dangerous)  # controls, ~170 format characters, separators, surrogates
    text = "".join(dangerous)
    escaped = safe(text, allow_newlines=False)
    compare([c for c in escaped if c in set(dangerous)], expected=[])
    compare(escaped.count("\\"), expected=len(dangerous))  # one visible escape each


@pytest.mark.parametrize("renderer", [TextRenderer(), JsonRenderer(), YamlRenderer()])
def test_no_renderer_passes_control_characters(renderer: object) -> None:
    text = render(renderer, Result("Whatever", {"message": HOSTILE + TROJAN, "nested": [{"x": HOSTILE}]}))
    assert not any(ord(c) < 32 and c != "\n" or 0x7f <= ord(c) <= 0x9f or c in "\u202e" + TROJAN for c in text), \
        repr(text)


def test_json_and_yaml_carry_the_same_data() -> None:
    result = Result("Approval", {"rollout": "r", "user": "alice", "expires": "2026-11-30T02:00:00Z"})
    compare(json.loads(render(JsonRenderer(), result)), expected=yaml.safe_load(render(YamlRenderer(), result)))


def describe_result(**spec: object) -> Result:
    r = parse_rollout(rollout(**spec))
    report = describe.assessment_document(rollouts.verify_report(REPORT_DIGEST, REPORT))
    return Result("RolloutDescription", describe.describe(r, report))


STATES = {
    "pending": {},
    "approved": {"approval": {"user": "alice", "expires": "2026-11-30T02:00:00Z", "reason": "Maintenance window"}},
    "revoked": {"approval": {"user": "alice", "expires": "2026-11-30T02:00:00Z", "reason": "Maintenance window"},
                "revocation": {"user": "bob", "time": "2026-11-29T23:00:00Z", "reason": "not checkpointed"},
                "status": {"phase": "Ended", "outcome": "Revoked"}},
    "overridden": {"approval": {"user": "alice", "expires": "2026-11-30T02:00:00Z", "reason": "CHG-1 hotfix"},
                   "overrides": [{"user": "alice", "action": "approve", "policies": ["change-window", "max-approval"],
                                  "time": "2026-11-29T21:00:00Z"}]},
    "initial-install": {"from": None},
    "progressing": {"approval": {"user": "alice", "expires": "2026-11-30T02:00:00Z", "reason": "Maintenance window"},
                    "status": {"phase": "Progressing", "message": "applying gpu-operator",
                               "steps": [{"release": "gpu-operator", "state": "InFlight",
                                          "message": "helm upgrade: 3 of 8 nodes drained"},
                                         {"release": "nvsentinel", "state": "Pending"}],
                               "conditions": [{"type": "Ready", "status": "False", "reason": "Progressing",
                                               "message": "step 1 of 2 in flight",
                                               "lastTransitionTime": "2026-11-29T21:30:00Z"},
                                              {"type": "Stalled", "status": "False"}]}},
    "not-required": {"approvalRequired": False, "status": {"phase": "Progressing"},
                     "acknowledgements": [{"release": "nvsentinel", "user": "alice", "time": "2026-11-29T22:00:00Z"}]},
}


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("AICR_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    compare(text, expected=path.read_text())


@pytest.mark.parametrize("state", sorted(STATES))
def test_describe_golden(state: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_core import clock

    # 7h56m before the samples' deadline (2026-11-30T06:00:00Z): describe shows it as `(in 7h56m)`
    monkeypatch.setattr(clock, "now", lambda: clock.parse_time("2026-11-29T22:04:00Z"))
    check_golden(f"describe-{state}.txt", render(TextRenderer(), describe_result(**STATES[state])))


def test_an_approval_whose_expiry_has_passed_is_shown_as_expired() -> None:
    approval = {"user": "bob", "expires": "2026-11-30T08:17:00Z", "reason": "CHG-1"}
    shown = []
    for now in ((2026, 11, 30, 8, 16, 59), (2026, 11, 30, 8, 17, 0), (2026, 12, 1, 9, 0, 0)):
        with Replacer() as replace:
            replace("aicr_core.clock.datetime", mock_datetime(*now, tzinfo=dt.timezone.utc, delta=0))
            text = render(TextRenderer(), describe_result(approval=approval))
            listing = render(TextRenderer(), Result("RolloutList", {"items": [
                listing_item(parse_rollout(rollout(approval=approval)), {"status": "none"})]}))
        shown.append(([line for line in text.splitlines() if line.startswith("Approval:")][0],
                      listing.splitlines()[1].split("  ")[0:8]))
    compare([line for line, _ in shown], expected=[
        "Approval:     approved by bob until 2026-11-30T08:17:00Z (CHG-1)",
        "Approval:     approved by bob, expired 08:17Z (CHG-1)",
        "Approval:     approved by bob, expired 2026-11-30T08:17:00Z (CHG-1)"])
    compare(["bob, expired 08:17Z" in " ".join(cells) for _, cells in shown], expected=[False, True, False])
    compare(["bob, expired 2026-11-30T08:17:00Z" in " ".join(cells) for _, cells in shown],
            expected=[False, False, True])


class FakeCluster:
    """Answers the one GET describe makes for a report with an error of the given CODE."""

    def __init__(self, code: str) -> None:
        self.code = code

    def get(self, path: str) -> dict[str, object]:
        raise AicrError(self.code, f"configmaps is {self.code}")


def every_assessment_state() -> dict[str, dict[str, object]]:
    docs = [describe.assessment_document(rollouts.read_report(None, "aicr-system", None)),  # type: ignore[arg-type]
            describe.assessment_document(rollouts.read_report(FakeCluster("NOT_FOUND"), "aicr-system", REPORT_DIGEST)),  # type: ignore[arg-type]
            describe.assessment_document(rollouts.read_report(FakeCluster("FORBIDDEN"), "aicr-system", REPORT_DIGEST)),  # type: ignore[arg-type]
            describe.assessment_document(rollouts.verify_report(REPORT_DIGEST, None, "aicr-system/x")),
            describe.assessment_document(rollouts.verify_report(REPORT_DIGEST, REPORT + " ", "aicr-system/x")),
            describe.assessment_document(rollouts.verify_report(api.sha256_digest("{nope"), "{nope", "aicr-system/x")),
            describe.assessment_document(rollouts.verify_report(REPORT_DIGEST, REPORT, "aicr-system/x"))]
    return {f"{d['status']}-{i}": d for i, d in enumerate(docs)}


def test_every_assessment_state_has_every_key() -> None:
    states = every_assessment_state()
    compare(sorted({d["status"] for d in states.values()}),
            expected=["invalid", "missing", "none", "unavailable", "unverified", "verified"])
    for name, doc in states.items():
        compare(list(doc), expected=["status", "digest", "reportDigest", "configMap", "error", "summary",
                                     "components"], prefix=name)
    documented = (Path(__file__).resolve().parents[2] / "docs" / "output.md").read_text()
    for key in describe.ASSESSMENT_KEYS:
        assert f"`assessment.{key}" in documented, key
    for status in ("none", "verified", "unverified", "invalid", "missing", "unavailable"):
        assert f"`{status}`" in documented, status
    compare(states["none-0"], expected=dict.fromkeys(describe.ASSESSMENT_KEYS, None) | {"status": "none"})


@pytest.mark.parametrize("state", sorted(every_assessment_state()))
def test_every_assessment_state_has_one_line_of_text(state: str) -> None:
    data = describe.describe(parse_rollout(rollout()), every_assessment_state()[state])
    lines = [line for line in render(TextRenderer(), Result("RolloutDescription", data)).splitlines()
             if line.startswith("Assessment: ")]
    compare(len(lines), expected=1)
    assert " -)" not in lines[0] and "- " not in lines[0].split("Assessment: ")[1][:2], lines[0]


def test_describe_unverified_report() -> None:
    r = parse_rollout(rollout())
    text = render(TextRenderer(), Result("RolloutDescription", describe.describe(
        r, describe.assessment_document(rollouts.verify_report(REPORT_DIGEST, REPORT + " ")))))
    assert f"Assessment: unverified (the rollout records {REPORT_DIGEST}, the report's content is sha256:" in text
    assert "gpu-operator  version" not in text
    invalid = describe.assessment_document(rollouts.verify_report(api.sha256_digest("{nope"), "{nope"))
    compare(invalid["status"], expected="invalid")


def test_reproduce_golden() -> None:
    p = api.parse_plan({"metadata": {"name": "aicr-plan-3f9a1c0d2b7e4a51", "annotations": {
        "operator.aicr.run/digest": "sha256:3f9a1c0d2b7e4a51" + "0" * 48}}, "data": {
        "recipe.json": "{}", "recipeDigest": api.sha256_digest("{}"),
        "renderFlags": '["--deployer", "argocd", "--system-node-selector", "nodeGroup=system"]',
        "aicrImage": "ghcr.io/nvidia/aicr@sha256:" + "1" * 64,
        "bundle": "oci://registry.example.com/aicr/cluster/bundles@sha256:" + "2" * 64}})
    result = Result("Reproduction", {"plan": p.digest, "aicrImage": p.aicr_image, "bundle": p.bundle,
                                     "recipe": "/work/aicr-reproduce/recipe.json",
                                     "commands": reproduce.commands(p, Path("/work/aicr-reproduce"))})
    check_golden("reproduce.txt", render(TextRenderer(), result))


def test_a_64_step_rollout_with_a_1_mib_report() -> None:
    steps = [{"release": f"release-{i:02d}", "operation": "Upgrade", "verdict": "safe", "changesCRDs": False}
             for i in range(64)]
    components = [{"component": f"c{i}", "change": "version", "from": "v1", "to": "v2", "verdict": "safe",
                   "notes": ["n" * 100]} for i in range(64)]
    report = json.dumps({"components": components, "summary": "s", "padding": "x" * (1024 * 1024)})
    r = parse_rollout(rollout(steps=steps))
    text = render(TextRenderer(), Result("RolloutDescription", describe.describe(
        r, describe.assessment_document(rollouts.verify_report(api.sha256_digest(report), report)))))
    compare((text.count("release-"), text.count("  safe  ")), expected=(64, 128))


def test_the_describe_document_keeps_its_documented_keys() -> None:
    """docs/output.md promises these keys to scripts; changing them is a breaking change."""
    data = describe_result(**STATES["approved"]).data
    compare(list(data), expected=["rollout", "runtimeUID", "transition", "phase", "outcome", "deadline", "approval",
                                  "message", "inventory", "steps", "assessment", "records", "acknowledgements",
                                  "overrides", "policyDecisions", "conditions"])  # policyDecisions: added
    compare(list(data["approval"]), expected=["required", "user", "expires", "reason", "revocation"])
    compare(list(data["steps"][0]), expected=["release", "operation", "assessment", "changesCRDs", "state", "message"])
    documented = (Path(__file__).resolve().parents[2] / "docs" / "output.md").read_text()
    for key in data:
        assert f"`{key}" in documented, key


def test_list_spells_the_operator_api_phases() -> None:
    """list keeps its own copy so that `help` does not import the API module: the two must agree."""
    from aicr_commands import list as list_command

    compare(list_command.PHASES, expected=api.PHASES)
