"""A site command reads a rollout as the built-in commands do: the example's `steps`, on the real control plane.

`read_rollout` (aicr_core.plugin) gives the same `Rollout` the policies get, and a missing rollout is our
`NOT_FOUND` wording, not the server's. The site package is installed beside ours through PYTHONPATH
(support/plugin_env.py), never into the project's venv.
"""
from __future__ import annotations

import json

import envtest
from testfixtures import compare

from support.harness import Aicr, error_line


def test_a_site_command_reads_a_rollout_into_the_value_policies_get(site_package: Aicr, plane: envtest.ControlPlane,
                                                                    seed: envtest.Seeder) -> None:
    name = seed.rollout()
    viewer = plane.kubeconfig_for("victor")  # a viewer may read: nothing here writes
    proc = site_package("steps", name, kubeconfig=viewer)
    compare((proc.returncode, proc.stdout.splitlines()), expected=(0, [
        f"Rollout:  {name}",
        "Phase:    AwaitingApproval",
        "  RELEASE       OPERATION  ASSESSMENT  STATE",
        "  gpu-operator  Upgrade    manual      InFlight",
        "  nvsentinel    Install    safe        Pending"]), suffix=proc.stderr)
    document = json.loads(site_package("steps", name, "-o", "json", kubeconfig=viewer).stdout)
    compare(document, expected={"kind": "RolloutSteps", "rollout": name, "phase": "AwaitingApproval", "steps": [
        {"release": "gpu-operator", "operation": "Upgrade", "assessment": "manual", "state": "InFlight"},
        {"release": "nvsentinel", "operation": "Install", "assessment": "safe", "state": "Pending"}]})
    named = site_package("steps", name, "-o", "name", kubeconfig=viewer)  # Result.names, a tuple of strings
    compare((named.returncode, named.stdout), expected=(0, f"runtimerollout.operator.aicr.run/{name}\n"),
            suffix=named.stderr)


def test_a_missing_rollout_is_our_not_found_not_the_servers(site_package: Aicr, plane: envtest.ControlPlane) -> None:
    missing = "rollout-0000000000000000-9"
    viewer = plane.kubeconfig_for("victor")
    ours = site_package("describe", missing, kubeconfig=viewer)
    theirs = site_package("steps", missing, kubeconfig=viewer)
    compare((theirs.returncode, theirs.stdout, theirs.stderr),
            expected=(1, "", f"error: [NOT_FOUND] rollout {missing} not found\n"))
    compare(error_line(theirs), expected=error_line(ours))  # as `describe` says it, word for word


def test_the_site_command_is_in_help_with_its_summary(site_package: Aicr) -> None:
    assert "steps        Show a rollout's phase and its steps" in site_package("help").stdout
