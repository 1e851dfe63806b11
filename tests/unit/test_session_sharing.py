"""What sessions share in one process, in-process: TLS contexts by material, the parsed kubeconfig, pools.

Each sharing must hold only what the sharers have in common: a context is reused for the same
CA and client certificate only, the kubeconfig's parsed entries are never changed by a session
that loads them, and a pool of kept connections serves the sessions of one cluster's settings only.
"""
from __future__ import annotations

import json
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import envtest
import pytest
from testfixtures import compare

from aicr_core.session import connections, kube, kubeconfig, kubeconfig_files, tls_contexts
from aicr_core.session.connection_flags import Overrides
from aicr_core.session.deadline import Deadline

from support.fake_apiserver import Respond, Trickle, fake_apiserver


def connection(ca: Path | None = None, cert: Path | None = None, key: Path | None = None,
               verify: bool = True) -> Any:
    """What tls_contexts reads of an urllib3 HTTPS connection."""
    return SimpleNamespace(ssl_context=None, ca_cert_dir=None, key_password=None, ca_cert_data=None,
                           ca_certs=str(ca) if ca else None, cert_file=str(cert) if cert else None,
                           key_file=str(key) if key else None, cert_reqs="CERT_REQUIRED" if verify else "CERT_NONE",
                           ssl_version=None, ssl_minimum_version=None, ssl_maximum_version=None)


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, Path]:
    files = {}
    for name in ("one", "two"):
        ca, ca_cert, ca_key = envtest.make_ca(f"{name}-ca")
        client = envtest.issue(ca_cert, ca_key, f"{name}-client")
        for kind, data in (("ca", ca.cert_pem), ("cert", client.cert_pem), ("key", client.key_pem)):
            files[f"{name}-{kind}"] = tmp_path / f"{name}-{kind}.pem"
            files[f"{name}-{kind}"].write_bytes(data)
    return files


def shared(conn: Any) -> Any:
    tls_contexts.share(conn)
    return conn.ssl_context


def test_a_context_is_shared_by_the_same_material_only(pki: dict[str, Path], tmp_path: Path) -> None:
    one = shared(connection(pki["one-ca"], pki["one-cert"], pki["one-key"]))
    copy = tmp_path / "copy-of-one-ca.pem"  # another file, the same bytes: the same context
    copy.write_bytes(pki["one-ca"].read_bytes())
    assert shared(connection(copy, pki["one-cert"], pki["one-key"])) is one
    others = [shared(connection(pki["two-ca"], pki["one-cert"], pki["one-key"])),  # another CA
              shared(connection(pki["one-ca"], pki["two-cert"], pki["two-key"])),  # another client certificate
              shared(connection(pki["one-ca"])),  # no client certificate
              shared(connection(pki["one-ca"], pki["one-cert"], pki["one-key"], verify=False))]  # no verification
    compare(len({id(c) for c in [one, *others]}), expected=5)


def test_a_connection_keeps_no_file_for_urllib3_to_load_into_the_shared_context(pki: dict[str, Path]) -> None:
    conn = connection(pki["one-ca"], pki["one-cert"], pki["one-key"])
    tls_contexts.share(conn)
    compare((conn.ca_certs, conn.ca_cert_data, conn.cert_file, conn.key_file), expected=(None, None, None, None))
    compare(len(conn.ssl_context.get_ca_certs()), expected=1)


def test_a_ca_file_changed_in_place_makes_a_new_context(pki: dict[str, Path]) -> None:
    path = pki["one-ca"]
    before = shared(connection(path))
    path.write_bytes(pki["two-ca"].read_bytes())
    after = shared(connection(path))
    assert after is not before
    compare([c["subject"] for c in after.get_ca_certs()], expected=[((("commonName", "two-ca"),),)])


def kubeconfig_file(tmp_path: Path, plugin: Path) -> Path:
    """Three contexts of one user whose exec plugin answers with a client certificate."""
    path = tmp_path / "kc"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c0",
        "clusters": [{"name": f"c{i}", "cluster": {"server": f"https://127.0.0.1:{10 + i}"}} for i in range(3)],
        "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                  "command": str(plugin), "interactiveMode": "Never"}}}],
        "contexts": [{"name": f"c{i}", "context": {"cluster": f"c{i}", "user": "u"}} for i in range(3)]}))
    return path


def test_sessions_leave_the_parsed_kubeconfig_as_it_was_and_parse_it_once(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ca, ca_cert, ca_key = envtest.make_ca("exec-ca")
    pair = envtest.issue(ca_cert, ca_key, "exec-client")
    plugin = tmp_path / "plugin.py"
    answer = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
              "status": {"clientCertificateData": pair.cert_pem.decode(), "clientKeyData": pair.key_pem.decode()}}
    plugin.write_text(f"#!/usr/bin/env python3\nprint({json.dumps(json.dumps(answer))})\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    path = kubeconfig_file(tmp_path, plugin)
    parsed: list[Path] = []
    parse = kubeconfig_files.parse
    monkeypatch.setattr(kubeconfig_files, "parse", lambda p: parsed.append(p) or parse(p))
    files, _ = kubeconfig_files.files(str(path))
    before = json.dumps([dict(node.value) for item in kubeconfig_files.ITEMS
                         for node in kubeconfig_files.merged(files).entries[item].values()], sort_keys=True)
    loaded = [kubeconfig.load_settings(str(path), Overrides(context=f"c{i}"), Deadline(20)) for i in range(3)]
    after = json.dumps([dict(node.value) for item in kubeconfig_files.ITEMS
                        for node in kubeconfig_files.merged(files).entries[item].values()], sort_keys=True)
    compare(after, expected=before)  # the plugin's certificate went into each session's copy only
    compare(parsed, expected=[path])
    compare(len({s.configuration.cert_file for s in loaded}), expected=1)  # same data, the client's same file
    compare([s.configuration.host for s in loaded], expected=[f"https://127.0.0.1:{10 + i}" for i in range(3)])


def test_the_sessions_of_one_clusters_settings_share_its_pool_and_no_other(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ok = Respond(200, {"metadata": {}, "items": []})
    with fake_apiserver(tmp_path / "a", [ok]) as a, fake_apiserver(tmp_path / "b", [ok]) as b:
        first = kube.connect(str(a.kubeconfig(tmp_path / "kc-a", {"token": "t"})), None, Deadline(10))
        again = kube.KubeSession(first.settings, Deadline(5))  # another deadline, the same cluster
        other = kube.connect(str(b.kubeconfig(tmp_path / "kc-b", {"token": "t"})), None, Deadline(10))
        for session in (first, again, other, first):
            session.list("/apis/g/v1/things")
        assert again.api is first.api and other.api is not first.api
        compare((len(a.accepted), len(b.accepted)), expected=(1, 1))  # a's three reads on one kept connection


def test_a_connection_kept_idle_too_long_is_opened_anew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_apiserver(tmp_path, [Respond(200, {"metadata": {}, "items": []})]) as server:
        session = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(10))
        session.list("/apis/g/v1/things")
        session.list("/apis/g/v1/things")  # kept
        monkeypatch.setattr(connections, "KEEP_IDLE_SECONDS", 0.0)
        session.list("/apis/g/v1/things")  # idle too long: a new connection, with its deadline's watch
        compare([r.connection for r in server.requests], expected=[1, 1, 2])


def test_a_watch_left_before_its_end_gives_its_connection_to_no_other_request(tmp_path: Path) -> None:
    event = json.dumps({"type": "MODIFIED", "object": {"n": 1}}).encode() + b"\n"
    endless = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
               + f"{len(event):x}\r\n".encode() + event + b"\r\n")  # as a watch streams: chunks, and no last one
    with fake_apiserver(tmp_path, [Trickle(endless, interval=0.0005), Respond(200, {"kind": "Thing"})]) as server:
        session = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(5))
        for _event in session.watch("/apis/g/v1/things"):
            break  # the follower has seen what it waited for; the rest of the stream is still to come
        compare(session.get("/apis/g/v1/things/x"), expected={"kind": "Thing"})
        compare([r.connection for r in server.requests], expected=[1, 2])
