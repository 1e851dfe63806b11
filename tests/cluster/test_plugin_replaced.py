"""A plugin replaced by one of the same name and version is seen by the very next run (issue 37, item 2).

stevedore's cache keyed its file by file times packed into 32-bit floats, which change every 128 s: a
plugin replaced within two minutes kept its old entry points for good, so a newly added always-on policy
was never listed nor run. The program under test is the project's virtualenv (not under /tmp, where
stevedore keeps no cache).
"""
from __future__ import annotations

import json
from pathlib import Path

import envtest
from testfixtures import compare

from support.harness import Aicr
from support.wheels import wheel

COMMAND = "from aicr_core.plugin import AicrCommand\n\nclass Steps(AicrCommand):\n    \"\"\"Site steps.\"\"\"\n"
POLICY = '''\
from aicr_core.plugin import AicrCommand, Violation, hookimpl


class Steps(AicrCommand):
    """Site steps."""


@hookimpl
def aicr_pre_approve(approval):
    return Violation("always-no", "the newly added policy refuses every approval")
'''


def test_a_policy_added_under_the_same_version_runs_at_once(aicr: Aicr, tmp_path: Path, plane: envtest.ControlPlane,
                                                             seed: envtest.Seeder) -> None:
    first, second, folder = tmp_path / "first", tmp_path / "second", tmp_path / "plugins"
    first.mkdir()
    second.mkdir()
    env = {"AICR_PLUGIN_PATH": str(folder)}
    old = wheel(first, "site-rules", module_text=COMMAND,
                entry_points="[aicr.commands]\nsite-steps = site_rules:Steps\n")
    new = wheel(second, "site-rules", module_text=POLICY, entry_points=(
        "[aicr.commands]\nsite-steps = site_rules:Steps\n[aicr.policies]\nalways-no = site_rules\n"))
    compare(aicr("plugins", "install", str(old), **env).returncode, expected=0)
    rows = json.loads(aicr("plugins", "-o", "json", **env).stdout)["plugins"]  # the table is read, and kept
    compare([r["name"] for r in rows if r["distribution"] == "site-rules"], expected=["site-steps"])
    compare(aicr("plugins", "install", str(new), **env).returncode, expected=0)
    rows = json.loads(aicr("plugins", "-o", "json", **env).stdout)["plugins"]
    compare(sorted((r["group"], r["name"], r["status"]) for r in rows if r["distribution"] == "site-rules"),
            expected=[("aicr.commands", "site-steps", "ok"), ("aicr.policies", "always-no", "ok")])
    proc = aicr("approve", seed.rollout(), "--reason", "CHG-1234 window", kubeconfig=plane.kubeconfig_for("alice"),
                **env)
    compare(proc.stderr.splitlines(), expected=[
        "error: [POLICY_DENIED] 1 policy violation(s); nothing was written",
        "  always-no: the newly added policy refuses every approval"])
