"""One parse of a rollout (issue 35): `parse_rollout` is defined once, in the domain, and it is the one the
plugin face offers, the webhook and every listing use: strict about the actions a record may name."""
from __future__ import annotations

import ast
import json
from pathlib import Path

from testfixtures import compare

from aicr_core import plugin
from aicr_core.domain import operator_api as api
from aicr_core.domain import rollouts

from support.samples import rollout

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("aicr_core", "aicr_commands", "aicr_renderers", "aicr_policies", "aicr_admission")


def test_parse_rollout_is_defined_once() -> None:
    defined = sorted(str(path.relative_to(ROOT)) for package in PACKAGES for path in (ROOT / package).rglob("*.py")
                     for node in ast.walk(ast.parse(path.read_text()))
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "parse_rollout")
    compare(defined, expected=["aicr_core/domain/rollouts.py"])


def test_the_face_offers_the_domains_parse() -> None:
    assert plugin.parse_rollout is rollouts.parse_rollout


def test_a_record_naming_an_unknown_action_is_left_out_by_every_caller() -> None:
    obj = rollout()
    obj["metadata"]["annotations"] = {api.ANNOTATION_OVERRIDES: json.dumps([
        {"user": "alice", "action": "delete", "policies": ["change-window"], "time": "2026-11-29T21:00:00Z"}])}
    compare(plugin.parse_rollout(obj).overrides, expected=())
    compare(rollouts.parse_rollout(obj, records=False).overrides, expected=())
