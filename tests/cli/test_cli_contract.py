"""The command-line contract, through a real `kubectl aicr` (no cluster needed for these)."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from testfixtures import ShouldRaise, compare

from aicr_core.errors import AicrError
from aicr_core.session.deadline import Deadline

from support.harness import Aicr, error_line
from support.plugin_env import EXAMPLES, PluginPath

R = "rollout-3f9a1c0d2b7e4a51-1"


@pytest.mark.parametrize("args,message", [
    (["frobnicate", R], 'unknown command "frobnicate"'),
    (["appr", R, "--reason", "x"], 'unknown command "appr"'),
    (["approve", R, "--reas", "x"], "unknown flag: --reas"),
    (["describe"], "the following arguments are required: ROLLOUT"),
    (["approve"], "the following arguments are required: ROLLOUT"),
    (["approve", R], "approve needs --reason"),
    (["revoke", R], "revoke needs --reason"),
    (["approve", R, "--reason", ""], "--reason must not be empty"),
    (["approve", R, "--reason", "x" * 1025], "--reason is 1025 characters"),
    (["approve", R, "--reason", "x", "--expires", "-1h"], "must not be negative"),
    (["approve", R, "--reason", "x", "--expires", "soon"], 'argument --expires: time: invalid duration "soon"'),
    (["approve", R, "--reason", "x", "--expires", "99999999999999h"], 'time: invalid duration "99999999999999h"'),
    (["approve", R, "--reason", "x", "--expires", "9999999999h"], 'time: invalid duration "9999999999h"'),
    (["approve", R, "--reason", "x", "--expires", " 2h"], 'time: invalid duration " 2h"'),
    (["approve", R, "--reason", "x", "--expires", "\u0662h"], 'time: invalid duration "\\xd9\\xa2h"'),
    (["approve", R, "--reason", "x", "--expires", "-1ns"], "--expires must not be negative (got -1ns)"),
    # a value that does not parse is a usage error for every command, used or not (as upstream's pflag)
    (["describe", R, "--expires", "1d"], 'time: unknown unit "d" in duration "1d"'),
    (["help", "--expires", "1d"], 'time: unknown unit "d" in duration "1d"'),
    (["reproduce", "--expires", ""], 'time: invalid duration ""'),
    (["reproduce", "--dir", ""], "--dir must not be empty"),
    (["describe", R, "--operator-namespace", ""], "--operator-namespace must not be empty"),
    (["approve", R, "--reason", "x", "--dry-run=client", "--policy-file", ""], "--policy-file must not be empty"),
    (["--foo"], "unknown flag: --foo"),
    (["--reason", "x", "--foo=1"], "unknown flag: --foo"),
    (["-x"], "unknown flag: -x"),
    (["describe", R, "extra"], "unrecognized arguments: extra"),
    (["reproduce", "a", "b"], "unrecognized arguments: b"),
    (["reproduce", "sha256:nothex"], "neither sha256:<64 hex> nor aicr-plan-<16 hex>"),
    (["describe", "Not/A/Name"], "is not a valid rollout name"),
    (["describe", R + "\n"], "is not a valid rollout name"),
    (["describe", R, "-o", "xml"], 'unknown output format "xml"'),
    (["describe", R, "--reason"], "expected one argument"),
    (["describe", R, "--show-events=maybe"], 'invalid argument "maybe": strconv.ParseBool'),
])
def test_usage_errors_exit_2(aicr: Aicr, args: list[str], message: str) -> None:
    proc = aicr(*args)
    assert proc.returncode == 2, proc.stderr
    assert error_line(proc).startswith("error: [USAGE] "), proc.stderr
    assert message in error_line(proc)
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("args", [
    ["describe", R, "--reason", ""], ["describe", R, "--reason", "x" * 2000], ["describe", R, "--expires", "-1h"],
    ["describe", R, "--dir", ""], ["acknowledge", R, "--reason", "", "--expires", "-0s"],
    ["reproduce", "--reason", ""], ["approve", R, "--reason", "x", "--expires", "1m"],
    ["approve", R, "--reason", "x", "--expires", "2562047h47m16.854775807s"],
])
def test_a_flag_a_command_does_not_use_is_ignored_once_it_parses(aicr: Aicr, args: list[str]) -> None:
    """These get past every usage check: the command goes on to look for a kubeconfig (HOME is empty)."""
    proc = aicr(*args)
    compare((proc.returncode, error_line(proc).split(" no kubeconfig")[0]), expected=(1, "error: [KUBECONFIG]"),
            suffix=proc.stderr)


@pytest.mark.parametrize("args", [["help", "--reason", "", "--expires", "-1h", "--dir", ""], ["help", "--dir="]])
def test_help_ignores_bounds_of_flags_it_does_not_use(aicr: Aicr, args: list[str]) -> None:
    compare(aicr(*args).returncode, expected=0)


def test_no_arguments_prints_usage_and_exits_2(aicr: Aicr) -> None:
    proc = aicr()
    compare(proc.returncode, expected=2)
    assert "Usage:\n  kubectl aicr COMMAND ROLLOUT [flags]" in proc.stderr
    compare(error_line(proc), expected="error: [USAGE] no command given")


@pytest.mark.parametrize("args", [["help"], ["--help"], ["-h"], ["help", "approve"], ["approve", "--help"],
                                  ["--help", "approve"], ["help", "--kubeconfig", "/nowhere"]])
def test_help_exits_0(aicr: Aicr, args: list[str]) -> None:
    proc = aicr(*args)
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    if "approve" in args:
        assert "Usage:\n  kubectl aicr approve ROLLOUT [flags]\n" in proc.stdout and "--expires DURATION" in proc.stdout
    else:
        for name in ("describe", "acknowledge", "approve", "revoke", "reproduce", "help", "plugins"):
            assert f"\n  {name} " in proc.stdout


def test_help_names_the_plugin_that_provides_a_command(aicr: Aicr, tmp_path: Path) -> None:
    """cliff's epilog names a site command's distribution; ours carry no such note."""
    site = aicr.with_env(**PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example").env())
    compare(site("help", "identity").stdout.count("This command is provided by the aicr-site-example plugin."),
            expected=1)
    assert "This command is provided by" not in site("help", "approve").stdout
    approve_help = site("help", "approve").stdout  # a declared write input shows in the command it extends
    assert "--ticket ID" in approve_help and "the change ticket that authorises this approval" in approve_help

def test_help_for_an_unknown_command_is_a_usage_error(aicr: Aicr) -> None:
    proc = aicr("help", "appr")
    compare((proc.returncode, error_line(proc)),
            expected=(2, 'error: [USAGE] unknown command "appr" for "kubectl aicr"'))


def test_help_json(aicr: Aicr) -> None:
    proc = aicr("help", "-o", "json")
    doc = json.loads(proc.stdout)
    compare(doc["kind"], expected="Help")
    summary = "Approve a rollout as yourself, until --expires or its deadline."
    assert {"name": "approve", "summary": summary} in doc["commands"]


def test_missing_kubeconfig(aicr: Aicr, home: Path) -> None:
    proc = aicr("describe", R)  # HOME is empty, KUBECONFIG unset
    compare(proc.returncode, expected=1)
    assert error_line(proc).startswith("error: [KUBECONFIG] no kubeconfig found"), proc.stderr
    proc = aicr("describe", R, "--kubeconfig", str(home / "missing"))
    assert error_line(proc).startswith("error: [KUBECONFIG] kubeconfig "), proc.stderr


def write_kubeconfig(path: Path, server: str) -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "s3cr3t-token-value"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def test_unknown_context(aicr: Aicr, tmp_path: Path) -> None:
    kc = write_kubeconfig(tmp_path / "kc", "https://127.0.0.1:1")
    proc = aicr("describe", R, "--context", "nope", kubeconfig=kc)
    compare((proc.returncode, error_line(proc)),
            expected=(1, f'error: [KUBECONFIG] context "nope" not found in the kubeconfig ({kc})'))


@pytest.mark.parametrize("command,message", [
    ("false", "error: [KUBECONFIG] credentials plugin failed: exec: process returned 1"),
    ("no-such-credentials-helper", "error: [KUBECONFIG] credentials plugin failed: [Errno 2] No such file or "
                                   "directory: 'no-such-credentials-helper'"),
])
def test_a_failing_credentials_plugin_is_not_anonymous(aicr: Aicr, tmp_path: Path, command: str,
                                                       message: str) -> None:
    kc = tmp_path / "kc"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                  "command": command, "interactiveMode": "Never"}}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    proc = aicr("describe", R, kubeconfig=kc)
    compare((proc.returncode, proc.stderr), expected=(1, message + "\n"))


def test_broken_kubeconfig(aicr: Aicr, tmp_path: Path) -> None:
    (tmp_path / "kc").write_text("clusters: [ this is not yaml")
    proc = aicr("describe", R, kubeconfig=tmp_path / "kc")
    compare(proc.returncode, expected=1)
    assert error_line(proc).startswith("error: [KUBECONFIG] "), proc.stderr


@pytest.mark.parametrize("cluster,user,message", [
    ({"server": 123}, {"token": "t"}, "kubeconfig: the cluster's server is int, not a URL"),
    ({"server": "https://127.0.0.1:1"}, {"as": "alice", "as-groups": "admins"},
     "kubeconfig: the user's as-groups is not a list"),
    ({"server": "https://127.0.0.1:1", "proxy-url": "socks5://127.0.0.1:1"}, {"token": "t"},
     "cannot use the kubeconfig's proxy-url: No module named 'socks' (a SOCKS proxy needs the PySocks package)"),
])
def test_a_kubeconfig_entry_of_the_wrong_shape(aicr: Aicr, tmp_path: Path, cluster: dict[str, object],
                                                user: dict[str, object], message: str) -> None:
    (tmp_path / "kc").write_text(json.dumps({
        "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}]}))
    proc = aicr("describe", R, kubeconfig=tmp_path / "kc")
    compare((proc.returncode, error_line(proc)), expected=(1, f"error: [KUBECONFIG] {message}"), suffix=proc.stderr)


def test_unreachable_server(aicr: Aicr, tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = aicr("describe", R, kubeconfig=write_kubeconfig(tmp_path / "kc", f"https://127.0.0.1:{port}"))
    compare(proc.returncode, expected=1)
    assert error_line(proc).startswith("error: [UNAVAILABLE] cannot connect"), proc.stderr
    assert "s3cr3t" not in proc.stderr + proc.stdout


def test_a_server_that_never_answers_times_out(aicr: Aicr, tmp_path: Path, silent_server: int) -> None:
    kc = write_kubeconfig(tmp_path / "kc", f"https://127.0.0.1:{silent_server}")
    started = time.monotonic()
    proc = aicr("describe", R, kubeconfig=kc, AICR_DEADLINE_SECONDS="2")
    elapsed = time.monotonic() - started
    compare(proc.returncode, expected=1)
    compare(error_line(proc), expected="error: [TIMEOUT] the API calls of this command did not finish within 2s")
    assert 1.5 < elapsed < 10, elapsed


def test_the_default_deadline_is_30_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without AICR_DEADLINE_SECONDS a command's calls get 30 s in all: 0.1 s left at 29.9 s, TIMEOUT at 30 s."""
    monkeypatch.delenv("AICR_DEADLINE_SECONDS", raising=False)
    clock = [1000.0]
    monkeypatch.setattr("aicr_core.session.deadline.time.monotonic", lambda: clock[0])
    deadline = Deadline()
    clock[0] += 29.9
    compare(round(deadline.remaining(), 6), expected=0.1)
    clock[0] += 0.1
    with ShouldRaise(AicrError("TIMEOUT", "the API calls of this command did not finish within 30s")):
        deadline.remaining()


def test_help_never_imports_kubernetes() -> None:
    """Nor the operator API mapping (22 ms of dataclasses): commands import both when they run."""
    code = ("import sys, io; from aicr_core.framework.app import AicrApp; out = io.StringIO(); "
            "rc = AicrApp(stdout=out, stderr=out).run(['help']); "
            "assert rc == 0, out.getvalue(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'urllib3', 'yaml') "
            "or m in ('aicr_core.domain.operator_api', 'aicr_core.session.kube', 'aicr_core.domain.policy_engine')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    compare((proc.returncode, proc.stdout.strip()), expected=(0, "[]"))
