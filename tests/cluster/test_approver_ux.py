"""What an approver meets (issue 14, items 9-11) through the real `kubectl aicr` on the real control plane."""
from __future__ import annotations

import json
import subprocess

from testfixtures import compare

import testbed
from support.harness import Aicr


def as_user(aicr: Aicr, plane: testbed.ControlPlane, user: str, *args: str,
            **env: str) -> subprocess.CompletedProcess[str]:
    return aicr(*args, kubeconfig=plane.kubeconfig_for(user), **env)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    return proc


# -- item 9: a report of the wrong shape is invalid, everywhere --------------------------------------

def test_a_report_that_is_a_json_array_is_invalid(aicr: Aicr, plane: testbed.ControlPlane,
                                                  seed: testbed.Seeder) -> None:
    name = seed.rollout(report="[]")
    described = json.loads(ok(as_user(aicr, plane, "victor", "describe", name, "-o", "json")).stdout)
    compare((described["assessment"]["status"], described["assessment"]["error"]),
            expected=("invalid", "the assessment report is a JSON array, not an object"))
    text = ok(as_user(aicr, plane, "victor", "describe", name)).stdout
    assert "(verified, but not valid JSON: the assessment report is a JSON array, not an object)" in text, text
    items = json.loads(ok(as_user(aicr, plane, "victor", "list", "-o", "json")).stdout)["items"]
    compare([i["assessment"]["status"] for i in items if i["name"] == name], expected=["invalid"])


def test_a_report_whose_components_are_no_objects_is_invalid(aicr: Aicr, plane: testbed.ControlPlane,
                                                             seed: testbed.Seeder) -> None:
    name = seed.rollout(report='{"components": ["gpu-operator"]}')
    items = json.loads(ok(as_user(aicr, plane, "victor", "list", "-o", "json")).stdout)["items"]
    compare([i["assessment"]["status"] for i in items if i["name"] == name], expected=["invalid"])
