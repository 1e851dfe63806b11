"""A cluster whose writes are slow: an admission webhook that holds each write of one plan's rollouts.

The real kube-apiserver calls it (by URL, with a CA of its own) for every UPDATE of a rollout to the
plan, dry runs included. A dry run is answered at once (that is how registering waits until the
server calls it); a real write is held until the test releases it (or `hold` seconds pass), then
allowed. So a test sees the moment a write has been sent (`sent`) and decides when it is answered.
"""
from __future__ import annotations

import json
import secrets
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import envtest

HOLD_SECONDS = 25.0  # under the webhook's own timeoutSeconds (30): the server still waits for the answer


class SlowWrites:
    """`with SlowWrites(plane, digest, folder) as hook:` ... `hook.sent.wait()`, `hook.release.set()`."""

    def __init__(self, plane: envtest.ControlPlane, digest: str, folder: Path, hold: float = HOLD_SECONDS) -> None:
        self.plane, self.digest, self.hold = plane, digest, hold
        self.name = f"slow-writes-{secrets.token_hex(4)}"
        self.sent = threading.Event()     # a real write reached the webhook
        self.release = threading.Event()  # answer the held writes now
        self.probed = threading.Event()   # a dry run reached it: the server calls the webhook
        ca, ca_cert, ca_key = envtest.make_ca("slow-writes-ca")
        pair = envtest.issue(ca_cert, ca_key, "127.0.0.1", server=True)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tls.crt").write_bytes(pair.cert_pem)
        (folder / "tls.key").write_bytes(pair.key_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(folder / "tls.crt", folder / "tls.key")
        self.ca_pem = ca.cert_pem
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                if request.get("dryRun"):
                    hook.probed.set()
                else:
                    hook.sent.set()
                    hook.release.wait(hook.hold)
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": {"uid": request["uid"], "allowed": True}}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the API server gave up on it (its client went away): nothing to answer

            def log_message(self, *_: Any) -> None:
                pass

        return Handler

    def configuration(self) -> dict[str, Any]:
        port = self.server.server_address[1]
        this_plan = f"object.spec.to.digest == '{self.digest}'"
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": self.name}, "webhooks": [{
                    "name": "slow-writes.test.aicr.run",
                    "clientConfig": {"url": f"https://127.0.0.1:{port}/validate", "caBundle": envtest.b64(self.ca_pem)},
                    "rules": [{"apiGroups": [envtest.GROUP], "apiVersions": ["*"], "operations": ["UPDATE"],
                               "resources": ["runtimerollouts"], "scope": "Cluster"}],
                    "matchConditions": [{"name": "this-plan", "expression": this_plan}],
                    "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 30,
                    "failurePolicy": "Ignore"}]}

    def __enter__(self) -> SlowWrites:
        self._thread.start()
        self.plane.kubectl("apply", "-f", "-", input=json.dumps(self.configuration()))
        self._wait_until_called()
        return self

    def _wait_until_called(self, timeout: float = 60) -> None:
        """Until a dry-run write of the plan's rollout reaches the webhook (registration is not instant)."""
        listed = json.loads(self.plane.kubectl("get", "runtimerollouts", "-o", "json").stdout)
        probe = next(r["metadata"]["name"] for r in listed["items"] if r["spec"]["to"]["digest"] == self.digest)
        patch = json.dumps({"metadata": {"annotations": {"test.aicr.run/probe": "1"}}})
        ends = time.monotonic() + timeout
        while not self.probed.is_set():
            if time.monotonic() > ends:
                raise envtest.TestbedError(f"the API server did not call the webhook within {timeout:.0f}s")
            self.plane.kubectl("patch", "runtimerollout", probe, "--type=merge", f"-p={patch}", "--dry-run=server",
                               check=False)
            self.probed.wait(0.25)

    def __exit__(self, *_: object) -> None:
        self.release.set()
        self.plane.kubectl("delete", "validatingwebhookconfiguration", self.name, "--ignore-not-found")
        self.server.shutdown()
        self.server.server_close()
