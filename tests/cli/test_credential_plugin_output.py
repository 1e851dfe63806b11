"""A credentials (exec) plugin's output, read within bounds through the real `kubectl aicr` (issue 23, item 1).

A plugin that printed for ever took 4.9 GB in 9 s, a 60 MB token 483 MB and then a misleading TLS failure,
and a 200 KB line of stderr became a 200,135-character error. Each stream is now read up to 1 MiB
(docs/sessions.md): beyond it the plugin is killed with its children and the command says so; a quoted
stderr is cut to 1,000 characters. The peak RSS of the plugin's process is measured (RUSAGE_CHILDREN of a
wrapper around kubectl, which execs kubectl-aicr: support/peak_rss.py).
"""
from __future__ import annotations

import json
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from support.fake_apiserver import Respond, fake_apiserver
from support.harness import aicr_env
from support.peak_rss import Measured, run_measured
from support.samples import ROLLOUT

R = ROLLOUT["metadata"]["name"]
V1 = "client.authentication.k8s.io/v1"
# kubectl-aicr reading a kubeconfig and starting a plugin peaks near 60 MiB; the unbounded reader took GBs.
PEAK_MIB = 150
COMMANDS = {"describe": ["describe", R], "list --all-contexts": ["list", "--all-contexts"]}


def plugin(tmp_path: Path, body: str) -> tuple[dict[str, Any], Path]:
    script = tmp_path / "credentials.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"exec": {"apiVersion": V1, "command": str(script), "interactiveMode": "Never"}}, script


def measured(kubectl: str, tmp_path: Path, kubeconfig: Path, *words: str) -> Measured:
    return run_measured([kubectl, "aicr", *words, "--request-timeout", "6s"], aicr_env(tmp_path, kubeconfig))


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def too_large(script: Path, stream: str) -> str:
    return (f'credentials plugin "{script}" failed: credential plugin output too large (more than 1 MiB on its '
            f"{stream}); it was stopped")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_plugin_that_prints_for_ever_is_stopped_in_bounded_memory(kubectl: str, tmp_path: Path, command: str,
                                                                    record_property: Any) -> None:
    """`yes` on stdout, and a child that does the same: both killed at 1 MiB, long before the deadline."""
    child_pid = tmp_path / "child.pid"
    user, script = plugin(tmp_path, f"yes &\necho $! > {child_pid}\nexec yes\n")
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", user)
        code, _, stderr, peak_mib, *_ = measured(kubectl, tmp_path, kc, *COMMANDS[command])
        requests = list(server.requests)
    record_property("peak_rss_mib", round(peak_mib))
    assert too_large(script, "stdout") in stderr, stderr
    compare((code, requests), expected=(1, []), suffix=stderr)
    assert peak_mib < PEAK_MIB, peak_mib
    pid = int(child_pid.read_text())
    waited = time.monotonic() + 5
    while not gone(pid) and time.monotonic() < waited:
        time.sleep(0.05)
    assert gone(pid), f"the plugin's child {pid} outlived the command"


def test_a_60_mb_token_is_refused_as_too_large(kubectl: str, tmp_path: Path, record_property: Any) -> None:
    """It was sent as a header (483 MB, then `[UNAVAILABLE] TLS failure`); now refused before any request."""
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"apiVersion": V1, "kind": "ExecCredential",
                                  "status": {"token": "t" * 60_000_000}}))
    user, script = plugin(tmp_path, f"exec cat {answer}\n")
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", user)
        code, _, stderr, peak_mib, *_ = measured(kubectl, tmp_path, kc, "describe", R)
        requests = list(server.requests)
    record_property("peak_rss_mib", round(peak_mib))
    compare((code, stderr, requests), expected=(1, f"error: [KUBECONFIG] {too_large(script, 'stdout')}\n", []))
    assert peak_mib < PEAK_MIB, peak_mib


def test_a_token_just_under_the_bound_is_read(kubectl: str, tmp_path: Path) -> None:
    """1 MiB is the bound of the whole answer: a 1,000,000-byte token still reaches the server."""
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"apiVersion": V1, "kind": "ExecCredential", "status": {"token": "t" * 1_000_000}}))
    user, _ = plugin(tmp_path, f"exec cat {answer}\n")
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", user)
        code, _, stderr, *_ = measured(kubectl, tmp_path, kc, "describe", R)
        requests = list(server.requests)
    assert "too large" not in stderr, stderr
    assert requests and dict(requests[0].headers)["Authorization"] == "Bearer " + "t" * 1_000_000, requests


def test_200_kb_of_stderr_is_quoted_cut(kubectl: str, tmp_path: Path) -> None:
    """One 200 KB line on stderr, exit 1: the error quotes its first 1,000 characters, not all of it."""
    user, script = plugin(tmp_path, "head -c 200000 /dev/zero | tr '\\0' e >&2\nexit 1\n")
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        proc = subprocess.run([kubectl, "aicr", "describe", R], capture_output=True, text=True, timeout=60,
                              env=aicr_env(tmp_path, server.kubeconfig(tmp_path / "kc", user)),
                              stdin=subprocess.DEVNULL)
    prefix = "error: [KUBECONFIG] credentials plugin failed: exec: process returned 1. "
    compare((proc.returncode, proc.stderr), expected=(1, prefix + "e" * 997 + "...\n"))


def test_a_flood_on_stderr_is_stopped_too(kubectl: str, tmp_path: Path) -> None:
    user, script = plugin(tmp_path, "exec yes >&2\n")
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", user)
        code, _, stderr, peak_mib, *_ = measured(kubectl, tmp_path, kc, "describe", R)
    compare((code, stderr), expected=(1, f"error: [KUBECONFIG] {too_large(script, 'stderr')}\n"))
    assert peak_mib < PEAK_MIB, peak_mib
