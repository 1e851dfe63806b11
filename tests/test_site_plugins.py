"""An organisation's plugins, installed with pip: they work, are listed, fail safely, and uninstall cleanly."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from testfixtures import compare

import testbed
from conftest import Aicr, error_line

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def pip(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "-q", *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def site_package() -> Iterator[None]:
    pip("install", "--no-deps", str(EXAMPLES / "aicr-site-example"))
    yield
    pip("uninstall", "-y", "aicr-site-example")


@pytest.fixture
def broken_package() -> Iterator[None]:
    pip("install", "--no-deps", str(EXAMPLES / "aicr-broken-example"))
    yield
    pip("uninstall", "-y", "aicr-broken-example")


def test_plugins_lists_ours_and_theirs(aicr: Aicr, site_package: None) -> None:
    proc = aicr("plugins", "-o", "json")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    rows = {(p["group"], p["name"]): p for p in json.loads(proc.stdout)["plugins"]}
    for key in (("aicr.commands", "whoami"), ("aicr.renderers", "csv"), ("aicr.policies", "change-ticket")):
        compare((rows[key]["distribution"], rows[key]["version"], rows[key]["status"]),
                expected=("aicr-site-example", "1.0.0", "ok"))
    compare((rows[("aicr.commands", "approve")]["distribution"], rows[("aicr.renderers", "text")]["status"]),
            expected=("kubectl-aicr", "ok"))
    text = aicr("plugins").stdout
    assert text.startswith("GROUP") and "aicr.policies   change-ticket" in text


@pytest.mark.cluster
def test_site_command_and_renderer(aicr: Aicr, site_package: None, plane: testbed.ControlPlane) -> None:
    proc = aicr("whoami", "-o", "csv", kubeconfig=plane.kubeconfig_for("alice"))
    compare((proc.returncode, proc.stdout), expected=(0, 'kind,Identity\nusername,alice\n'
                                                         'groups,"[""aicr:approvers"", ""system:authenticated""]"\n'),
            suffix=proc.stderr)
    assert "whoami       Show the username and groups" in aicr("help").stdout


@pytest.mark.cluster
def test_site_policy_refuses_before_writing(aicr: Aicr, site_package: None, plane: testbed.ControlPlane,
                                            seed: testbed.Seeder) -> None:
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


@pytest.mark.cluster
@pytest.mark.parametrize("before_name", [True, False])
def test_a_flag_added_by_a_plugin_works_on_either_side(aicr: Aicr, site_package: None,
                                                       plane: testbed.ControlPlane, seed: testbed.Seeder,
                                                       before_name: bool) -> None:
    name = seed.rollout()
    words = ["--ticket", "CHG-77", "approve", name] if before_name else ["approve", name, "--ticket", "CHG-77"]
    proc = aicr(*words, "--reason", "window", kubeconfig=plane.kubeconfig_for("alice"))
    compare((proc.returncode, proc.stdout.startswith(f"rollout {name} approved by alice")), expected=(0, True),
            suffix=proc.stderr)
    help_text = aicr("help", "approve").stdout
    assert "--ticket ID" in help_text and "A site policy requires a change ticket" in help_text
    assert "This command is provided by the aicr-site-example plugin." in aicr("help", "whoami").stdout


def test_a_broken_command_does_not_stop_the_others(aicr: Aicr, site_package: None, broken_package: None) -> None:
    proc = aicr("help")
    compare(proc.returncode, expected=0)
    warnings = sorted(proc.stderr.splitlines())
    compare(len(warnings), expected=2, suffix=proc.stderr)
    assert warnings[0].startswith("warning: Could not load 'broken-hook': No module named"), warnings
    assert "'broken' from aicr-broken-example 0.0.1 failed to load: ModuleNotFoundError" in warnings[1]
    assert "  approve " in proc.stdout and "  whoami " in proc.stdout
    proc = aicr("broken")
    compare(proc.returncode, expected=1)
    assert error_line(proc).startswith("error: [PLUGIN_ERROR] aicr.commands 'broken' from aicr-broken-example")
    proc = aicr("help", "-o", "broken-format")
    compare(proc.returncode, expected=1)
    assert error_line(proc).startswith("error: [PLUGIN_ERROR] aicr.renderers 'broken-format' from aicr-broken-example")
    compare(aicr("help", "-o", "csv").returncode, expected=0)  # the other renderers still work
    listing = {p["name"]: p["status"] for p in json.loads(aicr("plugins", "-o", "json").stdout)["plugins"]}
    compare((listing["broken"], listing["broken-format"], listing["broken-policy"], listing["change-ticket"]),
            expected=("failed", "failed", "failed", "ok"))


@pytest.mark.cluster
def test_a_broken_policy_fails_every_approval_closed(aicr: Aicr, site_package: None, broken_package: None,
                                                     plane: testbed.ControlPlane, seed: testbed.Seeder) -> None:
    name = seed.rollout()
    proc = aicr("approve", name, "--reason", "CHG-1 window", kubeconfig=plane.kubeconfig_for("alice"))
    compare(proc.returncode, expected=1)
    assert error_line(proc) == "error: [POLICY_ERROR] policy plugins failed to load; refusing (fail closed)"
    assert "  broken-policy: aicr.policies 'broken-policy' from aicr-broken-example 0.0.1 failed to load" in proc.stderr
    proc = aicr("describe", name, kubeconfig=plane.kubeconfig_for("alice"))  # reading is unaffected
    compare(proc.returncode, expected=0, suffix=proc.stderr)


def test_a_name_claimed_twice_is_refused(aicr: Aicr, site_package: None, tmp_path: Path) -> None:
    pkg = tmp_path / "shadow"
    (pkg / "aicr_shadow").mkdir(parents=True)
    (pkg / "aicr_shadow" / "__init__.py").write_text("")
    (pkg / "pyproject.toml").write_text((EXAMPLES / "aicr-site-example" / "pyproject.toml").read_text())
    (pkg / "setup.cfg").write_text("[metadata]\nname = aicr-shadow\nversion = 0.1\n[options]\npackages = aicr_shadow\n"
                                   "[options.entry_points]\naicr.commands =\n    approve = aicr_shadow:Approve\n")
    pip("install", "--no-deps", str(pkg))
    try:
        proc = aicr("approve", "rollout-3f9a1c0d2b7e4a51-1", "--reason", "x")
        compare(proc.returncode, expected=1)
        assert error_line(proc).startswith("error: [PLUGIN_ERROR] aicr.commands 'approve' is claimed by more than one"), proc.stderr
        assert "aicr-shadow 0.1" in proc.stderr and "kubectl-aicr 0.1.0" in proc.stderr
    finally:
        pip("uninstall", "-y", "aicr-shadow")


@pytest.mark.cluster
def test_uninstalling_leaves_the_core_working(aicr: Aicr, plane: testbed.ControlPlane,
                                              seed: testbed.Seeder) -> None:
    pip("install", "--no-deps", str(EXAMPLES / "aicr-site-example"))
    pip("uninstall", "-y", "aicr-site-example")
    compare(aicr("help").returncode, expected=0)
    proc = aicr("whoami")
    compare((proc.returncode, error_line(proc)), expected=(2, 'error: [USAGE] unknown command "whoami" for "kubectl aicr"'))
    proc = aicr("approve", seed.rollout(), "--reason", "no ticket needed now", kubeconfig=plane.kubeconfig_for("bob"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
