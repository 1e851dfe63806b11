"""Stand-in API servers for the fleet benchmarks: hundreds of them on one asyncio event loop.

Each stand-in is its own TLS port with its own certificate authority (an EC key: cheap to
make by the hundred) and answers every request after `latency` seconds, as a far-away API
server would. A thread per server (tests/support/fake_apiserver.py) is right for a few; at
500 the threads would compete with the command under test for the machine's cores, so all
of them share one event loop on one daemon thread of the benchmark's process.

What a stand-in serves: RuntimeRollouts and their assessment ConfigMaps (the two lists
`kubectl aicr list` asks for), and, on a hub, ClusterProfiles. Every request is recorded
(method, path, Authorization header) so that a benchmark can count them and check that each
cluster saw only its own credentials; `connections` counts the connections it accepted. A
`hung` stand-in accepts, reads the request and never answers.

A watched stand-in (`watched_fleet`, for the dashboard's bench) serves its rollouts and reports as
collections that change: LIST, GET by name and `?watch=1` streams (chunked JSON lines from a
resourceVersion, bookmarks when asked for, `fieldSelector=metadata.name=` and equality
`labelSelector`s, 410 Gone for a version older than it keeps), changed by `StandIns.put` from
the benchmark's thread. It also answers who-am-I (SelfSubjectReview: user-INDEX in
aicr:approvers), access reviews (SelfSubjectAccessReview: allowed), and the Events of a rollout
(none).
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
WHOAMI_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
ACCESS_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
EVENTS_PATHS = ("/apis/events.k8s.io/v1/", "/api/v1/namespaces/default/events")
BOOKMARK_SECONDS = 60.0  # about how often kube-apiserver sends a watch a bookmark
HISTORY = 1000  # the changes a collection keeps to resume watches from (older: 410 Gone)


def documents(cluster: int, rollouts: int) -> tuple[bytes, bytes]:
    """The rollouts and assessment ConfigMaps one stand-in serves (JSON, built once)."""
    items, configmaps = objects(cluster, rollouts)
    listing = {"metadata": {"resourceVersion": "1000"}}
    return (json.dumps({"kind": "RuntimeRolloutList", **listing, "items": items}).encode(),
            json.dumps({"kind": "ConfigMapList", **listing, "items": configmaps}).encode())


def rollout(cluster: int, index: int, *, deadline_hours: float = 8, now: dt.datetime | None = None
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """One rollout waiting for approval and its assessment ConfigMap (the report it names)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    report = json.dumps(dict(envtest.SAMPLE_REPORT, summary=f"cluster {cluster} report {index}"))
    digest = envtest.digest_of(report)
    to = envtest.random_digest()
    item = {
        "apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout",
        "metadata": {"name": f"rollout-{to[7:23]}-1", "resourceVersion": str(100 + index),
                     "uid": f"00000000-0000-4000-8000-{cluster:06d}{index:06d}",
                     "creationTimestamp": envtest.rfc3339(now - dt.timedelta(minutes=index))},
        "spec": {"runtime": {"name": "cluster", "uid": "6c1f0e9a-7d2b-4c1e-9a51-3f9a1c0d2b7e"},
                 "from": {"digest": envtest.random_digest()}, "to": {"digest": to},
                 "deadline": envtest.rfc3339(now + dt.timedelta(hours=deadline_hours)), "approvalRequired": True,
                 "startingInventory": {"releases": 42, "digest": envtest.random_digest()},
                 "assessment": {"digest": digest}, "steps": envtest.SAMPLE_STEPS,
                 "records": envtest.SAMPLE_RECORDS},
        "status": {"phase": "AwaitingApproval", "message": "rollout awaiting approval"}}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": f"aicr-assessment-{digest[7:23]}", "namespace": "aicr-system",
                              "resourceVersion": str(100 + index),
                              "labels": {"operator.aicr.run/role": "assessment"}},
                 "data": {"report.json": report}}
    return item, configmap


def objects(cluster: int, rollouts: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rollouts and their assessment ConfigMaps of one stand-in, as objects."""
    items, configmaps = [], []
    now = dt.datetime.now(dt.timezone.utc)
    for i in range(rollouts):
        item, configmap = rollout(cluster, i, now=now)
        items.append(item)
        configmaps.append(configmap)
    return items, configmaps


@dataclass
class Seen:
    """One request a stand-in received."""

    method: str
    path: str
    authorization: str


class Collection:
    """A collection that changes: its objects by name, the changes since a version, the watches waiting.

    Used on the stand-ins' event loop only (StandIns.put hops onto it).
    """

    def __init__(self, kind: str, objects: Sequence[dict[str, Any]], version: int = 1000) -> None:
        self.kind, self.version = kind, version
        self.objects = {obj["metadata"]["name"]: obj for obj in objects}
        self.history: list[tuple[int, str, dict[str, Any]]] = []  # (version, event type, object)
        self.changed = asyncio.Condition()

    def listing(self, labels: dict[str, str]) -> bytes:
        items = [obj for obj in self.objects.values() if matches(obj, "", labels)]
        return json.dumps({"kind": f"{self.kind}List", "metadata": {"resourceVersion": str(self.version)},
                           "items": items}).encode()

    async def put(self, obj: dict[str, Any], deleted: bool = False) -> None:
        self.version += 1
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.version)}}
        name = obj["metadata"]["name"]
        kind = "DELETED" if deleted else ("MODIFIED" if name in self.objects else "ADDED")
        if deleted:
            self.objects.pop(name, None)
        else:
            self.objects[name] = obj
        self.history = [*self.history[-(HISTORY - 1):], (self.version, kind, obj)]
        async with self.changed:
            self.changed.notify_all()

    def since(self, version: int) -> list[tuple[int, str, dict[str, Any]]] | None:
        """The changes after `version`; None when it is older than the history kept (410 Gone)."""
        if version < self.version and (not self.history or version < self.history[0][0] - 1):
            return None
        return [change for change in self.history if change[0] > version]


def matches(obj: dict[str, Any], name: str, labels: dict[str, str]) -> bool:
    meta = obj.get("metadata", {})
    return (not name or meta.get("name") == name) and \
        all(meta.get("labels", {}).get(k) == v for k, v in labels.items())


def _query(target: str) -> dict[str, str]:
    from urllib.parse import parse_qsl, urlsplit

    return dict(parse_qsl(urlsplit(target).query))


def _selectors(query: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The name of `fieldSelector=metadata.name=NAME` and the pairs of an equality `labelSelector`."""
    field_selector = query.get("fieldSelector", "")
    name = field_selector.removeprefix("metadata.name=") if field_selector.startswith("metadata.name=") else ""
    labels = dict(pair.split("=", 1) for pair in query.get("labelSelector", "").split(",") if "=" in pair)
    return name, labels


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
    connections: int = 0  # accepted since the start (or the last clear())
    open_connections: int = 0
    collections: dict[str, Collection] = field(default_factory=dict)  # path -> what a watched stand-in serves

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

    def put(self, server: StandIn, path: str, obj: dict[str, Any], deleted: bool = False) -> None:
        """A change of a watched stand-in's collection (added, modified or deleted), sent to its watches."""
        self._call(server.collections[path].put(obj, deleted))

    def stop(self) -> None:
        async def close() -> None:
            for listener in self._listeners:
                listener.close()
            for writer in list(self._writers):
                writer.close()
            # The watches and hung answers still waiting: ended here, not destroyed pending with the loop.
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self._call(close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=60)

    async def _serve(self, server: StandIn, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        server.open_connections += 1
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {name.strip().lower(): value.strip()
                           for name, _, value in (line.partition(":") for line in lines[1:] if line)}
                body_in = b""
                if int(headers.get("content-length", "0") or 0):
                    body_in = await reader.readexactly(int(headers["content-length"]))
                server.requests.append(Seen(method, target, headers.get("authorization", "")))
                if server.hung:
                    await asyncio.Event().wait()  # never answers (until the loop stops)
                await asyncio.sleep(self.latency)
                path, query = target.split("?")[0], _query(target)
                if server.collections and query.get("watch") in ("1", "true") and path in server.collections:
                    await self._watch(server.collections[path], query, writer)
                    continue  # the stream ended with its last chunk: the connection stays, as kube-apiserver keeps it
                status, body = self._answer(server, method, path, query, body_in)
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
                             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError, ValueError,
                OSError):
            pass
        except asyncio.CancelledError:
            pass  # stop(): ended normally, since asyncio's stream callback reports a cancelled handler as an error
        finally:
            server.open_connections -= 1
            self._writers.discard(writer)
            writer.close()

    @staticmethod
    def _answer(server: StandIn, method: str, path: str, query: dict[str, str], body: bytes) -> tuple[bytes, bytes]:
        """The status line's end and the body of one plain request."""
        if path in server.routes:
            return b"200 OK", server.routes[path]
        if not server.collections:
            return b"404 Not Found", b"{}"
        if method == "POST" and path == WHOAMI_PATH:
            user = {"username": f"user-{server.index}", "groups": ["aicr:approvers", "system:authenticated"]}
            return b"201 Created", json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
                                               "status": {"userInfo": user}}).encode()
        if method == "POST" and path == ACCESS_PATH:
            review = json.loads(body or b"{}")
            return b"201 Created", json.dumps({**review, "status": {"allowed": True, "reason": "stand-in"}}).encode()
        if method == "GET" and path.startswith(EVENTS_PATHS):
            return b"200 OK", json.dumps({"kind": "EventList", "apiVersion": "events.k8s.io/v1",
                                          "metadata": {"resourceVersion": "1"}, "items": []}).encode()
        collection = server.collections.get(path)
        if method == "GET" and collection is not None:
            return b"200 OK", collection.listing(_selectors(query)[1])
        parent, _, name = path.rpartition("/")
        collection = server.collections.get(parent)
        if method == "GET" and collection is not None and name in collection.objects:
            return b"200 OK", json.dumps(collection.objects[name]).encode()
        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
                  "message": f"{path} not found"}
        return b"404 Not Found", json.dumps(status).encode()

    async def _watch(self, collection: Collection, query: dict[str, str], writer: asyncio.StreamWriter) -> None:
        """A watch stream: chunked JSON lines, the changes after the version asked for, then each new one,
        a bookmark now and then (when asked for), until its timeoutSeconds."""
        def chunk(event: dict[str, Any]) -> bytes:
            line = json.dumps(event).encode() + b"\n"
            return f"{len(line):x}\r\n".encode() + line + b"\r\n"

        name, labels = _selectors(query)
        ends = asyncio.get_running_loop().time() + float(query.get("timeoutSeconds", "1800"))
        bookmarks = query.get("allowWatchBookmarks") == "true"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        asked = query.get("resourceVersion", "")
        version = collection.version if asked in ("", "0") else int(asked)
        while True:
            changes = collection.since(version)
            if changes is None:
                writer.write(chunk({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410,
                    "message": f"too old resource version: {version}"}}))
                break
            for changed, kind, obj in changes:
                if matches(obj, name, labels):
                    writer.write(chunk({"type": kind, "object": obj}))
                version = changed
            await writer.drain()
            left = ends - asyncio.get_running_loop().time()
            if left <= 0:
                break
            async with collection.changed:
                if collection.version != version:
                    continue  # changed while the events were sent
                try:
                    await asyncio.wait_for(collection.changed.wait(), min(left, BOOKMARK_SECONDS))
                except asyncio.TimeoutError:
                    if bookmarks and ends - asyncio.get_running_loop().time() > 0:
                        writer.write(chunk({"type": "BOOKMARK", "object": {
                            "kind": collection.kind, "apiVersion": "v1",
                            "metadata": {"resourceVersion": str(collection.version)}}}))
        writer.write(b"0\r\n\r\n")
        await writer.drain()


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


def watched_fleet(standins: StandIns, count: int, rollouts: int) -> list[StandIn]:
    """`count` watched member stand-ins (the dashboard's bench), each with `rollouts` rollouts and reports."""
    members = []
    for i in range(count):
        items, configmaps = objects(i, rollouts)
        server = standins.add({})
        server.collections = {ROLLOUTS_PATH: Collection("RuntimeRollout", items),
                              CONFIGMAPS_PATH: Collection("ConfigMap", configmaps)}
        members.append(server)
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
