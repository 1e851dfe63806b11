"""What the fleet shares between clusters never carries one cluster's trust or credentials to another.

A fleet command parses the kubeconfig once, keeps one TLS context per CA and client certificate
(aicr_core.session.tls_contexts) and one pool of kept connections per cluster's settings. Through
the real `kubectl aicr`, against stand-in servers with CAs of their own, in one process and one
after the other (--parallel 1, so that what an earlier cluster made is there for a later one):
each context trusts its own CA only, sends its own token, presents its own client certificate,
and has its own connection, on which its two reads go one after the other.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import envtest
from testfixtures import compare

from support.fake_apiserver import FakeApiServer, Respond, fake_apiserver
from support.harness import Aicr

EMPTY = Respond(200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []})


def kubeconfig(path: Path, entries: list[tuple[str, FakeApiServer, bytes, dict[str, Any]]]) -> Path:
    """Contexts in this order: (name, the server it talks to, the CA it trusts, its user)."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": entries[0][0],
        "clusters": [{"name": name, "cluster": {"server": server.url, "certificate-authority-data": envtest.b64(ca)}}
                     for name, server, ca, _ in entries],
        "users": [{"name": name, "user": user} for name, _, _, user in entries],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}} for name, _, _, _ in entries]}))
    return path


def tokens(server: FakeApiServer) -> list[str]:
    return [value for request in server.requests for name, value in request.headers if name == "Authorization"]


def test_each_context_trusts_its_own_ca_and_sends_its_own_token(aicr: Aicr, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with fake_apiserver(tmp_path / "a", [EMPTY]) as a, fake_apiserver(tmp_path / "b", [EMPTY]) as b:
        kc = kubeconfig(tmp_path / "kc", [
            ("a", a, a.ca_pem, {"token": "token-a"}),
            ("b", b, b.ca_pem, {"token": "token-b"}),
            # b's server, but a's CA: both CAs are loaded in this process by now; it must trust a's alone.
            ("b-trusting-a", b, a.ca_pem, {"token": "token-wrong"}),
            ("a-again", a, a.ca_pem, {"token": "token-a-again"})])
        proc = aicr("list", "--all-contexts", "--parallel", "1", "-o", "json", kubeconfig=kc)
        compare(proc.returncode, expected=1, suffix=proc.stderr)
        errors = json.loads(proc.stdout)["errors"]
        compare([(e["context"], e["code"]) for e in errors], expected=[("b-trusting-a", "UNAVAILABLE")])
        assert "TLS failure" in errors[0]["message"] and "CERTIFICATE_VERIFY_FAILED" in errors[0]["message"], errors
        compare(tokens(a), expected=["Bearer token-a"] * 2 + ["Bearer token-a-again"] * 2)
        compare(tokens(b), expected=["Bearer token-b"] * 2)


def test_each_context_presents_its_own_client_certificate_on_its_own_connection(aicr: Aicr,
                                                                                tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, [EMPTY]) as server:
        alice, bob = server.client_certificate("alice"), server.client_certificate("bob")
        kc = kubeconfig(tmp_path / "kc", [
            ("alice", server, server.ca_pem, {"client-certificate-data": envtest.b64(alice.cert_pem),
                                              "client-key-data": envtest.b64(alice.key_pem)}),
            ("bob", server, server.ca_pem, {"client-certificate-data": envtest.b64(bob.cert_pem),
                                            "client-key-data": envtest.b64(bob.key_pem)}),
            ("nobody", server, server.ca_pem, {"token": "token-nobody"}),
            ("alice-again", server, server.ca_pem, {"client-certificate-data": envtest.b64(alice.cert_pem),
                                                    "client-key-data": envtest.b64(alice.key_pem)})])
        proc = aicr("list", "--all-contexts", "--parallel", "1", "-o", "json", kubeconfig=kc)
        compare((proc.returncode, json.loads(proc.stdout)["errors"]), expected=(0, []), suffix=proc.stderr)
        # One connection a cluster, in turn; both reads of a cluster on its own.
        compare([(r.connection, r.client) for r in server.requests],
                expected=[(1, "alice"), (1, "alice"), (2, "bob"), (2, "bob"), (3, ""), (3, ""),
                          (4, "alice"), (4, "alice")])
        compare(tokens(server), expected=["Bearer token-nobody"] * 2)
