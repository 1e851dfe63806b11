"""The session under faults a real API server will not produce on request (tests/fake_apiserver.py).

The deadline is a wall clock: a trickling server, a hung credentials plugin
and slow answers never stretch a command past it. Failures of every kind
print our one error line and nothing else, and never a credential.
"""
from __future__ import annotations

import os
import stat
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from support.fake_apiserver import FakeApiServer, Reset, Respond, Silent, Trickle, fake_apiserver, status
from support.harness import Aicr, error_line
from support.samples import REPORT_DIGEST, ROLLOUT

R = ROLLOUT["metadata"]["name"]


def finished_at(aicr: Aicr, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    proc = aicr(*args, **env)
    return proc, time.monotonic()


# -- the deadline is a wall clock --------------------------------------------------------------------

@pytest.mark.parametrize("where", ["before TLS", "after TLS"])
def test_a_trickling_server_never_extends_a_call(aicr: Aicr, tmp_path: Path, where: str) -> None:
    """One byte a second keeps every socket read alive; the command still ends at its deadline."""
    raw = 1.0 if where == "before TLS" else None
    with fake_apiserver(tmp_path, [Trickle(interval=1.0)], raw_trickle=raw) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc, ended = finished_at(aicr, "describe", R, kubeconfig=kc, AICR_DEADLINE_SECONDS="3")
        compare(error_line(proc), expected="error: [TIMEOUT] the API calls of this command did not finish "
                                           "within 3s", suffix=proc.stderr)
        compare(proc.returncode, expected=1)
        # The deadline started before the connection was made, so it ends within 3 s of it (+0.5 s).
        assert ended - server.accepted[0] < 3.5, ended - server.accepted[0]


def test_the_calls_of_a_command_share_one_deadline(aicr: Aicr, tmp_path: Path) -> None:
    """The first answer takes 2 s of a 3 s deadline: the second call gets the 1 s that is left."""
    script = [Respond(200, ROLLOUT, delay=2.0), Respond(200, {}, delay=30.0)]
    with fake_apiserver(tmp_path, script) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc, ended = finished_at(aicr, "describe", R, kubeconfig=kc, AICR_DEADLINE_SECONDS="3")
        compare((proc.returncode, error_line(proc)),
                expected=(1, "error: [TIMEOUT] the API calls of this command did not finish within 3s"))
        first = server.requests[0]
        # The report's read (describe's Events are read beside it, in a thread: either may come first).
        (second,) = [r for r in server.requests[1:] if "/events" not in r.path]
        compare(second.path, expected=f"/api/v1/namespaces/aicr-system/configmaps/aicr-assessment-"
                                      f"{REPORT_DIGEST[7:23]}")
        assert 1.9 < second.at - first.at < 2.5, second.at - first.at
        assert 0.5 < ended - second.at < 1.4, ended - second.at  # about the 1 s that was left


def test_request_timeout_sets_the_deadline(aicr: Aicr, tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, [Silent()]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc, ended = finished_at(aicr, "describe", R, "--request-timeout", "2s", kubeconfig=kc)
        compare(error_line(proc), expected="error: [TIMEOUT] the API calls of this command did not finish "
                                           "within 2s", suffix=proc.stderr)
        # The deadline started before the connection was made, so it ends within 2 s of it (+0.5 s). Not
        # bounded from the program's start, which CI's cold builds stretch (docs/contributing.md).
        assert ended - server.accepted[0] < 2.5, ended - server.accepted[0]


def test_a_hung_credentials_plugin_is_killed_at_the_deadline(aicr: Aicr, tmp_path: Path) -> None:
    marker = f"sleep {os.getpid() % 1000 + 987000}"
    plugin, started_file = tmp_path / "hang.sh", tmp_path / "plugin-started"
    plugin.write_text(f"#!/bin/sh\ndate +%s.%N > {started_file}\n{marker}\n")  # a child that would outlive sh
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}})
        proc = aicr("describe", R, kubeconfig=kc, AICR_DEADLINE_SECONDS="3")
        ended = time.time()
        compare((proc.returncode, error_line(proc)),
                expected=(1, f'error: [TIMEOUT] the credentials plugin "{plugin}" did not finish within 3s'))
        # The deadline began before the plugin started: the command is over within 3.5 s of that.
        assert ended - float(started_file.read_text()) < 3.5, ended - float(started_file.read_text())
        compare(server.requests, expected=[])
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    compare(left, expected="", suffix="the plugin's children were left running")


# -- nothing but our lines on stderr ------------------------------------------------------------------

def test_an_insecure_cluster_prints_no_warnings(aicr: Aicr, tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, [status(404, f'runtimerollouts "{R}" not found', "NotFound")]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"}, insecure=True)
        proc = aicr("describe", R, kubeconfig=kc)
        compare((proc.returncode, proc.stderr), expected=(1, f"error: [NOT_FOUND] rollout {R} not found\n"))


# -- secrets never printed ------------------------------------------------------------------------------

TOKEN = "s3cr3t-bearer-token-0123456789abcdef"
EXEC_TOKEN = "s3cr3t-exec-token-fedcba9876543210"
FAILURES = {
    "401": [status(401, "Unauthorized", "Unauthorized")],
    "403": [status(403, 'runtimerollouts is forbidden: User "u" cannot get resource', "Forbidden")],
    "500": [status(500, "etcdserver: request timed out", "InternalError")],
    "reset": [Reset()],
}
COMMANDS = [["describe", R], ["approve", R, "--reason", "x"], ["revoke", R, "--reason", "x"],
            ["acknowledge", R], ["reproduce"], ["reproduce", "sha256:" + "a" * 64]]


def credentials(tmp_path: Path, server: FakeApiServer) -> dict[str, tuple[dict[str, object], list[str]]]:
    """Three users, each with the secrets that must never appear."""
    client = server.client_certificate("mallory")
    key_lines = [line for line in client.key_pem.decode().splitlines() if "-----" not in line]
    plugin = tmp_path / "exec-plugin.py"
    plugin.write_text("import json\nprint(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', "
                      f"'kind': 'ExecCredential', 'status': {{'token': '{EXEC_TOKEN}'}}}}))\n")
    return {
        "token": ({"token": TOKEN}, [TOKEN]),
        "client key": ({"client-certificate-data": envtest.b64(client.cert_pem),
                        "client-key-data": envtest.b64(client.key_pem)}, [envtest.b64(client.key_pem), *key_lines]),
        "exec": ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "python3",
                           "args": [str(plugin)], "interactiveMode": "Never"}}, [EXEC_TOKEN]),
    }


@pytest.mark.parametrize("failure", [*FAILURES, "TLS failure"])
def test_no_secret_is_ever_printed(aicr: Aicr, tmp_path: Path, failure: str) -> None:
    """Every command, every credential kind, AICR_DEBUG=1: no credential on stdout, stderr, the log or disk."""
    script = FAILURES.get(failure, [Respond(200, ROLLOUT)])
    with fake_apiserver(tmp_path, script, tls=failure != "TLS failure") as server:
        runs = []
        for kind, (user, secrets) in credentials(tmp_path, server).items():
            kc = server.kubeconfig(tmp_path / f"kc-{kind.replace(' ', '-')}", user)
            for words in COMMANDS:
                runs.append((kind, kc, words, secrets))
        tmp = tmp_path / "tmp"
        tmp.mkdir()

        def run(job: tuple[str, Path, list[str], list[str]]) -> tuple[str, list[str], str, str, str, int]:
            kind, kc, words, secrets = job
            log = tmp_path / f"requests-{kind}-{'-'.join(words[:1])}-{len(words)}"
            proc = aicr(*words, kubeconfig=kc, AICR_DEBUG="1", AICR_REQUEST_LOG=str(log), TMPDIR=str(tmp))
            logged = log.read_text() if log.exists() else ""
            return kind, secrets, proc.stdout + proc.stderr + logged, error_line(proc), proc.stderr, proc.returncode

        with ThreadPoolExecutor(max_workers=3) as pool:
            results = list(pool.map(run, runs))
    for kind, secrets, everything, line, stderr, code in results:
        for secret in [*secrets, "Authorization", "Bearer "]:
            assert secret not in everything, (kind, secret, everything)
        assert code == 1 and line.startswith("error: ["), (kind, stderr)
        assert "Traceback" not in stderr, stderr
    compare(sorted(p.name for p in tmp.iterdir()), expected=[], suffix="credential files left behind")
    expected_code = {"401": "UNAUTHORIZED", "403": "FORBIDDEN", "500": "UNAVAILABLE", "reset": "UNAVAILABLE",
                     "TLS failure": "UNAVAILABLE"}[failure]
    codes = {line.split("]")[0] + "]" for _, _, _, line, _, _ in results}
    compare(codes, expected={f"error: [{expected_code}]"})


def test_sigterm_leaves_no_credential_file_behind(kubectl: str, tmp_path: Path) -> None:
    """The client writes key data to temporary files; a terminated command still removes them."""
    from support.harness import aicr_env

    with fake_apiserver(tmp_path, [Silent()]) as server:
        client = server.client_certificate("mallory")
        kc = server.kubeconfig(tmp_path / "kc", {"client-certificate-data": envtest.b64(client.cert_pem),
                                                 "client-key-data": envtest.b64(client.key_pem)})
        tmp = tmp_path / "tmp"
        tmp.mkdir()
        marker = f"sigterm-test-{os.getpid()}"  # pkill matches this command only
        proc = subprocess.Popen([kubectl, "aicr", "describe", R, "--operator-namespace", marker],
                                env=aicr_env(tmp_path, kc, TMPDIR=str(tmp)), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not server.accepted and time.monotonic() < deadline:  # it holds the key files while it waits
            time.sleep(0.05)
        assert server.accepted and list(tmp.iterdir()), "the command never got as far as connecting"
        subprocess.run(["pkill", "-TERM", "-f", f"kubectl-aicr describe {R} --operator-namespace {marker}"])
        _, stderr = proc.communicate(timeout=20)
    compare((sorted(p.name for p in tmp.iterdir()), "Traceback" in stderr), expected=([], False))

