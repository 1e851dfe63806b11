"""Stand-in API servers for the fleet benchmarks: hundreds of them on one asyncio event loop.

Each stand-in is its own TLS port with its own certificate authority (an EC key: cheap to
make by the hundred) and answers every request after `latency` seconds, as a far-away API
server would. A thread per server (tests/support/fake_apiserver.py) is right for a few; at
500 the threads would compete with the command under test for the machine's cores, so all
of them share one event loop on one daemon thread of the benchmark's process.

What a stand-in serves: RuntimeRollouts and their assessment ConfigMaps (the two lists
`kubectl aicr list` asks for), and, on a hub, ClusterProfiles. Every request is recorded
(method, path, Authorization header) so that a benchmark can count them and check that each
cluster saw only its own credentials. A `hung` stand-in accepts, reads the request and never
answers.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import ssl
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))

import envtest  # noqa: E402

ROLLOUTS_PATH = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
CONFIGMAPS_PATH = "/api/v1/namespaces/aicr-system/configmaps"
PROFILES_PATH = "/apis/multicluster.x-k8s.io/v1alpha1/clusterprofiles"


def documents(cluster: int, rollouts: int) -> tuple[bytes, bytes]:
    """The rollouts and assessment ConfigMaps one stand-in serves (JSON, built once)."""
    items, configmaps = [], []
    now = dt.datetime.now(dt.timezone.utc)
    for i in range(rollouts):
        report = json.dumps(dict(envtest.SAMPLE_REPORT, summary=f"cluster {cluster} report {i}"))
        digest = envtest.digest_of(report)
        to = envtest.random_digest()
        items.append({
            "apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout",
            "metadata": {"name": f"rollout-{to[7:23]}-1", "resourceVersion": str(100 + i),
                         "creationTimestamp": envtest.rfc3339(now - dt.timedelta(minutes=i))},
            "spec": {"runtime": {"name": "cluster", "uid": "6c1f0e9a-7d2b-4c1e-9a51-3f9a1c0d2b7e"},
                     "from": {"digest": envtest.random_digest()}, "to": {"digest": to},
                     "deadline": envtest.rfc3339(now + dt.timedelta(hours=8)), "approvalRequired": True,
                     "startingInventory": {"releases": 42, "digest": envtest.random_digest()},
                     "assessment": {"digest": digest}, "steps": envtest.SAMPLE_STEPS,
                     "records": envtest.SAMPLE_RECORDS},
            "status": {"phase": "AwaitingApproval", "message": "rollout awaiting approval"}})
        configmaps.append({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": f"aicr-assessment-{digest[7:23]}", "namespace": "aicr-system",
                                        "labels": {"operator.aicr.run/role": "assessment"}},
                           "data": {"report.json": report}})
    listing = {"metadata": {"resourceVersion": "1000"}}
    return (json.dumps({"kind": "RuntimeRolloutList", **listing, "items": items}).encode(),
            json.dumps({"kind": "ConfigMapList", **listing, "items": configmaps}).encode())


@dataclass
class Seen:
    """One request a stand-in received."""

    method: str
    path: str
    authorization: str


@dataclass
class StandIn:
    """One stand-in API server (its address, its CA, what it serves and what it was asked)."""

    index: int
    ca_pem: bytes
    context: ssl.SSLContext
    routes: dict[str, bytes]
    hung: bool = False
    port: int = 0
    requests: list[Seen] = field(default_factory=list)
    connections: int = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


class StandIns:
    """Stand-ins on one event loop; `start()` builds and opens them, `stop()` closes them."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.servers: list[StandIn] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="standins", daemon=True)
        self._listeners: list[asyncio.AbstractServer] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread.start()

    def add(self, routes: dict[str, bytes], *, hung: bool = False) -> StandIn:
        """A new stand-in serving `routes` (path -> JSON body), with a CA of its own; open at once."""
        ca, ca_cert, ca_key = envtest.make_ca(f"standin-{len(self.servers)}-ca")
        serving = envtest.issue(ca_cert, ca_key, "standin", server=True)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*_pem_files(serving))
        server = StandIn(len(self.servers), ca.cert_pem, context, routes, hung)
        listener = self._call(asyncio.start_server(lambda r, w: self._serve(server, r, w), "127.0.0.1", 0,
                                                   ssl=context, backlog=256))
        server.port = listener.sockets[0].getsockname()[1]
        self._listeners.append(listener)
        self.servers.append(server)
        return server

    def clear(self) -> None:
        for server in self.servers:
            server.requests.clear()
            server.connections = 0

    def stop(self) -> None:
        async def close() -> None:
            for listener in self._listeners:
                listener.close()
            for writer in list(self._writers):
                writer.close()

        self._call(close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=60)

    async def _serve(self, server: StandIn, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {name.strip().lower(): value.strip()
                           for name, _, value in (line.partition(":") for line in lines[1:] if line)}
                if int(headers.get("content-length", "0") or 0):
                    await reader.readexactly(int(headers["content-length"]))
                server.requests.append(Seen(method, target, headers.get("authorization", "")))
                if server.hung:
                    await asyncio.Event().wait()  # never answers (until the loop stops)
                await asyncio.sleep(self.latency)
                body = server.routes.get(target.split("?")[0], b"{}")
                status = b"200 OK" if target.split("?")[0] in server.routes else b"404 Not Found"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
                             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError, ValueError,
                OSError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()


_PEM_DIR: list[Path] = []


def _pem_files(pair: envtest.KeyPair) -> tuple[str, str]:
    """ssl wants files: the serving pair written to a private temporary folder, removed with it."""
    import tempfile

    if not _PEM_DIR:
        _PEM_DIR.append(Path(tempfile.mkdtemp(prefix="aicr-standins-")))
        import atexit
        import shutil

        atexit.register(shutil.rmtree, _PEM_DIR[0], True)
    folder = Path(tempfile.mkdtemp(dir=_PEM_DIR[0]))
    (folder / "tls.crt").write_bytes(pair.cert_pem)
    (folder / "tls.key").write_bytes(pair.key_pem)
    return str(folder / "tls.crt"), str(folder / "tls.key")


def fleet(standins: StandIns, count: int, rollouts: int, hung: Callable[[int], bool] = lambda i: False
          ) -> list[StandIn]:
    """`count` member stand-ins, each with `rollouts` rollouts and their reports."""
    members = []
    for i in range(count):
        listed, reports = documents(i, rollouts)
        members.append(standins.add({ROLLOUTS_PATH: listed, CONFIGMAPS_PATH: reports}, hung=hung(i)))
    return members


def context_name(index: int, count: int) -> str:
    """c00 ... c49 in a kubeconfig of 50, c000 ... c499 in one of 500."""
    return f"c{index:0{max(2, len(str(count - 1)))}d}"


def kubeconfig(path: Path, servers: Sequence[StandIn], plugin: Path | None) -> Path:
    """One kubeconfig naming every server (context, cluster and user cNN), each with its CA and its token
    token-INDEX (or, with `plugin`, an exec user running it)."""
    clusters, users, contexts = [], [], []
    for i, server in enumerate(servers):
        name = context_name(i, len(servers))
        clusters.append({"name": name, "cluster": {"server": server.url,
                                                   "certificate-authority-data": envtest.b64(server.ca_pem)}})
        user: dict[str, Any] = {"token": f"token-{i}"}
        if plugin is not None:
            user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                             "interactiveMode": "Never"}}
        users.append({"name": name, "user": user})
        contexts.append({"name": name, "context": {"cluster": name, "user": name}})
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users,
                                "contexts": contexts, "current-context": contexts[0]["name"]}))
    path.chmod(0o600)
    return path


def profiles(servers: Sequence[StandIn], provider: str, namespace: str = "fleet") -> bytes:
    """A ClusterProfileList naming every server as a member reached through `provider`."""
    width = max(2, len(str(len(servers) - 1)))
    items = [{"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
              "metadata": {"name": f"m{i:0{width}d}", "namespace": namespace, "resourceVersion": str(10 + i),
                           "labels": {"x-k8s.io/cluster-manager": "bench"}},
              "spec": {"displayName": f"m{i:0{width}d}", "clusterManager": {"name": "bench"}},
              "status": {"conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy",
                                         "message": "", "lastTransitionTime": "2026-12-01T00:00:00Z"}],
                         "accessProviders": [{"name": provider, "cluster": {
                             "server": server.url, "certificate-authority-data": envtest.b64(server.ca_pem)}}]}}
             for i, server in enumerate(servers)]
    return json.dumps({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfileList",
                       "metadata": {"resourceVersion": "1000"}, "items": items}).encode()
