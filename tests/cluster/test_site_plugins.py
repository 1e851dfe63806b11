"""An organisation's plugins, installed beside ours: they work, are listed, fail safely, and go away cleanly.

Nothing is installed into the project's virtualenv: each test's plugins live
in a temporary folder on PYTHONPATH with generated dist-info (plugin_env.py).
"""
from __future__ import annotations

import json

import envtest
import pytest
from testfixtures import compare

from support.harness import Aicr, error_line


def test_site_command_and_renderer(site_package: Aicr, plane: envtest.ControlPlane) -> None:
    aicr = site_package
    proc = aicr("identity", "-o", "csv", kubeconfig=plane.kubeconfig_for("alice"))
    compare((proc.returncode, proc.stdout), expected=(0, 'kind,Identity\nusername,alice\n'
                                                         'groups,"[""aicr:approvers"", ""system:authenticated""]"\n'),
            suffix=proc.stderr)
    assert "identity     Show the username and groups" in aicr("help").stdout


@pytest.mark.usefixtures("change_ticket_named")
def test_site_policy_refuses_before_writing(site_package: Aicr, plane: envtest.ControlPlane,
                                            seed: envtest.Seeder) -> None:
    aicr = site_package
    name = seed.rollout()
    proc = aicr("approve", name, "--reason", "window", kubeconfig=plane.kubeconfig_for("alice"))
    compare(proc.returncode, expected=1)
    compare(proc.stderr.splitlines(), expected=[
        "error: [POLICY_DENIED] 1 policy violation(s); nothing was written",
        "  change-ticket: the reason must cite a change ticket (CHG-1234): 'window'"])
    approval = json.loads(plane.kubectl("get", "aicrro", name, "-o", "json").stdout)["spec"].get("approval")
    compare(approval, expected=None)
    proc = aicr("approve", name, "--reason", "CHG-1234 window", kubeconfig=plane.kubeconfig_for("alice"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)


def test_an_installed_site_policy_the_file_does_not_name_takes_no_part(site_package: Aicr,
                                                                      plane: envtest.ControlPlane,
                                                                      seed: envtest.Seeder) -> None:
    """INACTIVE_UNTIL_CONFIGURED (docs/plugins.md): installed, change-ticket decides nothing until a file names it."""
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
    proc = site_package("approve", seed.rollout(), "--reason", "window", kubeconfig=plane.kubeconfig_for("alice"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    assert "change-ticket" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("before_name", [True, False])
def test_a_flag_added_by_a_plugin_works_on_either_side(site_package: Aicr,
                                                       plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                       before_name: bool) -> None:
    aicr = site_package
    name = seed.rollout()
    words = ["--ticket", "CHG-77", "approve", name] if before_name else ["approve", name, "--ticket", "CHG-77"]
    proc = aicr(*words, "--reason", "window", kubeconfig=plane.kubeconfig_for("alice"))
    compare((proc.returncode, proc.stdout.startswith(f"rollout {name} approved by alice")), expected=(0, True),
            suffix=proc.stderr)


def test_a_broken_policy_fails_every_approval_closed(broken_package: Aicr, plane: envtest.ControlPlane,
                                                     seed: envtest.Seeder) -> None:
    aicr = broken_package
    name = seed.rollout()
    proc = aicr("approve", name, "--reason", "CHG-1 window", kubeconfig=plane.kubeconfig_for("alice"))
    compare(proc.returncode, expected=1)
    assert error_line(proc) == "error: [POLICY_ERROR] policy plugins failed to load; refusing (fail closed)"
    assert "  broken-policy: aicr.policies 'broken-policy' from aicr-broken-example 0.0.1 failed to load" in proc.stderr
    proc = aicr("describe", name, kubeconfig=plane.kubeconfig_for("alice"))  # reading is unaffected
    compare(proc.returncode, expected=0, suffix=proc.stderr)


def test_without_the_site_package_the_core_works(aicr: Aicr, site_package: Aicr, plane: envtest.ControlPlane,
                                                 seed: envtest.Seeder) -> None:
    """The same machine without the site's folder on the path: its command is gone, its policy too."""
    compare(site_package("help").stdout.count("  identity "), expected=1)
    compare(aicr("help").returncode, expected=0)
    proc = aicr("identity")
    compare((proc.returncode, error_line(proc)),
            expected=(2, 'error: [USAGE] unknown command "identity" for "kubectl aicr"'))
    proc = aicr("approve", seed.rollout(), "--reason", "no ticket needed now", kubeconfig=plane.kubeconfig_for("bob"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)


