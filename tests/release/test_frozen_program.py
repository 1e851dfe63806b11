"""The frozen program from the archive, run through the real kubectl: it prints what the pip installation prints,
krew installs it offline, and a site's wheels installed into its plugin folder work and decide."""
from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from support.harness import BIN, ROOT, Aicr, aicr_env, error_line
from support.wheels import tree, wheel

sys.path.insert(0, str(ROOT / "tools"))
import go_tools  # noqa: E402
import krew_manifest  # noqa: E402


def run_frozen(frozen: Path, aicr: Aicr, *args: str, kubeconfig: Path | None = None,
               **env: str) -> subprocess.CompletedProcess[str]:
    """`kubectl aicr ARGS` with the frozen program first on PATH."""
    environment = aicr_env(aicr.home, kubeconfig, **env)
    environment["PATH"] = f"{frozen}{os.pathsep}{environment['PATH']}"
    return subprocess.run([aicr.kubectl, "aicr", *args], capture_output=True, text=True, timeout=90,
                          env=environment, cwd=aicr.cwd, stdin=subprocess.DEVNULL)


def test_help_and_plugins_print_what_the_pip_installation_prints(frozen: Path, aicr: Aicr) -> None:
    policy = str(ROOT / "examples" / "approval-policy.yaml")
    for words in (["help"], ["help", "approve"], ["plugins", "--policy-file", policy, "-o", "json"]):
        mine, pip = run_frozen(frozen, aicr, *words), aicr(*words)
        compare((mine.returncode, mine.stdout, mine.stderr), expected=(pip.returncode, pip.stdout, pip.stderr))
    rows = json.loads(run_frozen(frozen, aicr, "plugins", "--policy-file", policy, "-o", "json").stdout)["plugins"]
    compare({(r["origin"], r["status"]) for r in rows}, expected={("built-in", "ok")})


def test_version_says_frozen_with_the_commit(frozen: Path, aicr: Aicr) -> None:
    doc = json.loads(run_frozen(frozen, aicr, "version", "--client", "-o", "json").stdout)["client"]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    compare((doc["installed"], doc["commit"].split("-")[0], doc["buildTime"].endswith("Z")),
            expected=("frozen", head, True))
    proc = run_frozen(frozen, aicr, "version")  # no kubeconfig: the client's part, then the error
    compare((proc.returncode, proc.stdout.splitlines()[1], error_line(proc).startswith("error: [KUBECONFIG]")),
            expected=(1, "Installed: frozen", True))


def test_time_zones_without_a_zoneinfo_database(frozen: Path, aicr: Aicr) -> None:
    proc = run_frozen(frozen, aicr, "policy", "test", str(ROOT / "examples" / "policy-tests"),
                      PYTHONTZPATH="/nonexistent", KUBECONFIG="/nonexistent/kubeconfig")
    compare((proc.returncode, proc.stdout.splitlines()[-1].endswith(" 0 failed")), expected=(0, True),
            suffix=proc.stdout + proc.stderr)


@pytest.fixture
def served(archive: Path) -> Iterator[str]:
    """The release's folder on a loopback HTTP server: krew's validator downloads each platform's uri."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(archive.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_krew_validates_the_manifest_and_installs_the_archive_offline(
        release: Path, archive: Path, served: str, aicr: Aicr, tmp_path: Path) -> None:
    tools = go_tools.built("krew")
    version = archive.name.split("_")[1]
    manifest = tmp_path / "aicr.yaml"  # the release's, with the loopback server as its base URI
    manifest.write_text(krew_manifest.manifest(version, krew_manifest.read_sums((release / "SHA256SUMS").read_text()),
                                               served))
    krew_root = tmp_path / "krew"  # always set: krew writes ~/.krew otherwise
    plugin_bin = tmp_path / "bin"  # kubectl finds krew as the plugin kubectl-krew, as krew's installer links it
    plugin_bin.mkdir()
    (plugin_bin / "kubectl-krew").symlink_to(tools / "krew")
    env = {**aicr_env(aicr.home), "KREW_ROOT": str(krew_root)}
    env["PATH"] = f"{plugin_bin}{os.pathsep}{tools}{os.pathsep}{env['PATH']}"
    validate = subprocess.run([str(tools / "validate-krew-manifest"), "-manifest", str(manifest)],
                              capture_output=True, text=True, timeout=300, env=env)
    compare(validate.returncode, expected=0, suffix=validate.stdout + validate.stderr)
    install = subprocess.run([aicr.kubectl, "krew", "install", f"--manifest={release / 'aicr.yaml'}",
                              f"--archive={archive}"], capture_output=True, text=True, timeout=300, env=env)
    compare(install.returncode, expected=0, suffix=install.stdout + install.stderr)
    assert (krew_root / "bin" / "kubectl-aicr").is_symlink()
    env["PATH"] = f"{krew_root / 'bin'}{os.pathsep}{env['PATH']}"
    proc = subprocess.run([aicr.kubectl, "aicr", "version", "--client"], capture_output=True, text=True, timeout=60,
                          env=env, cwd=tmp_path)
    compare((proc.returncode, proc.stdout.splitlines()[1]), expected=(0, "Installed: frozen"), suffix=proc.stderr)


@pytest.fixture
def plugin_folder(tmp_path: Path) -> Path:
    return tmp_path / "plugins"


@pytest.mark.usefixtures("change_ticket_named")  # the site's policy waits to be configured
def test_a_site_wheel_installs_into_the_frozen_program_and_its_policy_decides(
        frozen: Path, aicr: Aicr, plugin_folder: Path, example_wheels: dict[str, Path],
        plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    env = {"AICR_PLUGIN_PATH": str(plugin_folder)}
    proc = run_frozen(frozen, aicr, "plugins", "install", str(example_wheels["aicr-site-example"]), **env)
    compare((proc.returncode, proc.stdout), expected=(0, f"aicr-site-example 1.0.0 installed into {plugin_folder}\n"),
            suffix=proc.stderr)
    rows = json.loads(run_frozen(frozen, aicr, "plugins", "-o", "json", kubeconfig=plane.kubeconfig_for("alice"),
                                 **env).stdout)["plugins"]
    compare(sorted({(r["distribution"], r["origin"], r["status"]) for r in rows}),
            expected=[("aicr-site-example", str(plugin_folder), "ok"), ("kubectl-aicr", "built-in", "ok")])
    name = seed.rollout()
    proc = run_frozen(frozen, aicr, "approve", name, "--reason", "window", kubeconfig=plane.kubeconfig_for("alice"),
                      **env)
    compare(proc.stderr.splitlines(), expected=[
        "error: [POLICY_DENIED] 1 policy violation(s); nothing was written",
        "  change-ticket: the reason must cite a change ticket (CHG-1234): 'window'"])
    proc = run_frozen(frozen, aicr, "approve", name, "--reason", "CHG-1234 window",
                      kubeconfig=plane.kubeconfig_for("alice"), **env)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    proc = run_frozen(frozen, aicr, "plugins", "uninstall", "aicr-site-example", **env)
    compare((proc.returncode, tree(plugin_folder)), expected=(0, {}), suffix=proc.stderr)


def test_a_broken_plugin_in_a_folder_fails_closed(frozen: Path, aicr: Aicr, plugin_folder: Path,
                                                  example_wheels: dict[str, Path], plane: envtest.ControlPlane,
                                                  seed: envtest.Seeder) -> None:
    env = {"AICR_PLUGIN_PATH": str(plugin_folder)}
    proc = run_frozen(frozen, aicr, "plugins", "install", *map(str, example_wheels.values()), **env)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    proc = run_frozen(frozen, aicr, "approve", seed.rollout(), "--reason", "CHG-1 window",
                      kubeconfig=plane.kubeconfig_for("alice"), **env)
    compare((proc.returncode, error_line(proc)),
            expected=(1, "error: [POLICY_ERROR] policy plugins failed to load; refusing (fail closed)"))


def test_each_refusal_names_the_wheel_and_leaves_the_folder_unchanged(
        frozen: Path, aicr: Aicr, plugin_folder: Path, example_wheels: dict[str, Path], tmp_path: Path) -> None:
    env = {"AICR_PLUGIN_PATH": str(plugin_folder)}
    compare(run_frozen(frozen, aicr, "plugins", "install", str(example_wheels["aicr-site-example"]), **env).returncode,
            expected=0)
    before = tree(plugin_folder)
    made = tmp_path / "made"
    made.mkdir()
    cases = {
        wheel(made, "other-platform", tag="cp27-cp27m-win32"): "this Python",
        wheel(made, "needs-missing", requires=("no-such-distribution>=1",)):
            "requires no-such-distribution>=1, which neither the program nor the plugin folder holds",
        wheel(made, "needs-old-pydantic", requires=("pydantic<2",)): "requires pydantic<2, but pydantic ",
        wheel(made, "pydantic", version="9.0"): "it would shadow pydantic ",
        wheel(made, "kubectl-aicr", version="9.0"): "it would shadow kubectl-aicr ",
    }
    good = wheel(made, "good-one")
    for path, reason in cases.items():
        proc = run_frozen(frozen, aicr, "plugins", "install", str(good), str(path), **env)  # all or nothing
        compare((proc.returncode, error_line(proc).startswith(f"error: [USAGE] {path}: "), reason in proc.stderr),
                expected=(2, True, True), suffix=proc.stderr)
        compare(tree(plugin_folder), expected=before)
    proc = run_frozen(frozen, aicr, "plugins", "uninstall", "pydantic", **env)
    compare((proc.returncode, tree(plugin_folder)), expected=(2, before), suffix=proc.stderr)
    compare(sorted(p.name for p in plugin_folder.parent.iterdir() if p.name.startswith(".")), expected=[])


def test_the_pip_installation_reads_the_same_folder(frozen: Path, aicr: Aicr, plugin_folder: Path,
                                                    example_wheels: dict[str, Path]) -> None:
    env = {"AICR_PLUGIN_PATH": str(plugin_folder)}
    compare(run_frozen(frozen, aicr, "plugins", "install", str(example_wheels["aicr-site-example"]), **env).returncode,
            expected=0)
    assert "identity     Show the username and groups" in aicr("help", **env).stdout
    assert shutil.which("kubectl-aicr", path=str(BIN)) is not None


def test_a_command_claimed_twice_from_a_folder_is_refused(frozen: Path, aicr: Aicr, plugin_folder: Path,
                                                          tmp_path: Path) -> None:
    shadow = wheel(tmp_path, "aicr-shadow", entry_points="[aicr.commands]\napprove = aicr_shadow:Approve\n",
                   module_text="from aicr_commands.approve import Approve\n")
    env = {"AICR_PLUGIN_PATH": str(plugin_folder)}
    compare(run_frozen(frozen, aicr, "plugins", "install", str(shadow), **env).returncode, expected=0)
    proc = run_frozen(frozen, aicr, "approve", "rollout-3f9a1c0d2b7e4a51-1", "--reason", "x", **env)
    compare((proc.returncode, error_line(proc).startswith(
        "error: [PLUGIN_ERROR] aicr.commands 'approve' is claimed by more than one")), expected=(1, True),
        suffix=proc.stderr)
