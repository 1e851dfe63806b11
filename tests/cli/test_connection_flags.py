"""kubectl's connection flags mean what they mean to kubectl: proven against kubectl itself.

For each way of choosing a server, credentials and identity, the identity
the API server reports to `kubectl aicr` (the site example's `identity`, a
SelfSubjectReview) must be the one it reports to `kubectl auth whoami` with
the same flags, or both must fail. Then the flags at work where they matter:
impersonated approvals and --request-timeout.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from testfixtures import compare

from support.harness import Aicr, aicr_env, error_line
from support.plugin_env import EXAMPLES, PluginPath


def test_every_group_is_sent(tmp_path: Path) -> None:
    """Three --as-group flags: three Impersonate-Group headers (the official client can send one)."""
    from support.fake_apiserver import Respond, fake_apiserver
    review = {"status": {"userInfo": {"username": "alice", "groups": ["a", "b", "c"]}}}
    with fake_apiserver(tmp_path, [Respond(200, review)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        env = aicr_env(tmp_path, kc, **PluginPath(tmp_path / "site").add_example(
            EXAMPLES / "aicr-site-example").env())
        proc = subprocess.run(["kubectl-aicr", "identity", "--as", "alice", "--as-group", "a", "--as-group", "b",
                               "--as-group", "c", "--as-uid", "42"], capture_output=True, text=True, env=env)
        compare(proc.returncode, expected=0, suffix=proc.stderr)
        sent = [(n, v) for n, v in server.requests[0].headers if n.lower().startswith("impersonate-")]
    compare(sent, expected=[("Impersonate-User", "alice"), ("Impersonate-Group", "a"), ("Impersonate-Group", "b"),
                            ("Impersonate-Group", "c"), ("Impersonate-Uid", "42")])


def test_non_ascii_names_are_sent_as_kubectl_sends_them(tmp_path: Path) -> None:
    """UTF-8 bytes, as Go sends a string (http.client alone sent José as Latin-1 and refused 李 with INTERNAL)."""
    from support.fake_apiserver import Respond, fake_apiserver
    with fake_apiserver(tmp_path, [Respond(200, {})]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = subprocess.run(["kubectl-aicr", "version", "--as", "Jos\u00e9", "--as-group", "\u674e"],
                              capture_output=True, text=True, env=aicr_env(tmp_path, kc))
        compare(proc.returncode, expected=0, suffix=proc.stderr)
        sent = [(n, v.encode("latin-1").decode("utf-8")) for n, v in server.requests[0].headers
                if n.lower().startswith("impersonate-")]  # the fake server reads header lines as Latin-1
    compare(sent, expected=[("Impersonate-User", "Jos\u00e9"), ("Impersonate-Group", "\u674e")])


def test_extra_keys_are_escaped_as_kubectl_escapes_them(tmp_path: Path) -> None:
    """The kubeconfig user's as-user-extra: a key byte that cannot stand in a header name is sent as %XX."""
    from support.fake_apiserver import Respond, fake_apiserver
    with fake_apiserver(tmp_path, [Respond(200, {})]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t", "as": "alice",
                                                 "as-user-extra": {"scopes.example.com/team": ["gpu ops"]}})
        proc = subprocess.run(["kubectl-aicr", "version"], capture_output=True, text=True, env=aicr_env(tmp_path, kc))
        compare(proc.returncode, expected=0, suffix=proc.stderr)
        sent = [(n, v) for n, v in server.requests[0].headers if n.lower().startswith("impersonate-extra-")]
    compare(sent, expected=[("Impersonate-Extra-scopes.example.com%2Fteam", "gpu ops")])


@pytest.mark.parametrize("flags,header", [
    (["--token", "s3cr3t\nInjected: 1"], "Authorization"),
    (["--token", "t", "--as", "alice\r\nInjected: 1"], "Impersonate-User"),
    (["--token", "t", "--as", "alice", "--as-group", "red\x1b[31m"], "Impersonate-Group"),
])
def test_a_value_no_header_can_carry_is_refused_without_echoing_it(aicr: Aicr, tmp_path: Path, flags: list[str],
                                                                    header: str) -> None:
    """http.client refused a line break with a ValueError quoting the value: INTERNAL, with the token on stderr."""
    from support.fake_apiserver import Respond, fake_apiserver
    with fake_apiserver(tmp_path, [Respond(200, {})]) as server:
        proc = aicr("describe", "r", *flags, kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}))
        compare(server.requests, expected=[])
    compare((proc.returncode, error_line(proc).split(": its value")[0]),
            expected=(1, f"error: [KUBECONFIG] the {header} header cannot be sent"), suffix=proc.stderr)
    assert "s3cr3t" not in proc.stderr and "Injected" not in proc.stderr, proc.stderr


def test_request_timeout_against_a_server_that_never_answers(aicr: Aicr, tmp_path: Path) -> None:
    from support.fake_apiserver import Silent, fake_apiserver
    with fake_apiserver(tmp_path, [Silent()]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr("approve", "rollout-3f9a1c0d2b7e4a51-1", "--reason", "x", "--request-timeout", "2s",
                    kubeconfig=kc)
        ended = time.monotonic()
        compare(error_line(proc), expected="error: [TIMEOUT] the API calls of this command did not finish within 2s")
        assert ended - server.accepted[0] < 2.5, ended - server.accepted[0]


@pytest.mark.parametrize("value,message", [("1d", "invalid request timeout '1d'"),
                                           ("-1s", "must not be negative")])
def test_a_bad_request_timeout_is_a_usage_error(aicr: Aicr, value: str, message: str) -> None:
    proc = aicr("describe", "rollout-3f9a1c0d2b7e4a51-1", "--request-timeout", value)
    compare(proc.returncode, expected=2)
    assert message in error_line(proc), proc.stderr

