"""The admission webhook on a test control plane: `aicr-admission` as a local process, registered by URL.

The webhook gets its own serving CA and certificate (testbed's PKI helpers)
and the identity its manifest gives it: a client certificate for the service
account's username `system:serviceaccount:aicr-system:aicr-admission`, bound
by the very Role and RoleBinding of manifests/admission/ (so the tests prove
that what the manifest grants is enough, and no more is needed). The
ValidatingWebhookConfiguration is the manifest's too, with `clientConfig`
changed to `url: https://127.0.0.1:PORT/validate` and the test CA: the API
server calls the local process directly, no Service needed.

The process dies with whoever started it (SIGKILL on the parent's death), so
an interrupted test session leaves no webhook behind.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import envtest
import yaml

ADMISSION_MANIFESTS = envtest.MANIFESTS / "admission"
IDENTITY = "system:serviceaccount:aicr-system:aicr-admission"
IDENTITY_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:aicr-system")
RBAC_KINDS = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
BIN = Path(sys.executable).parent


def manifest_documents(name: str) -> list[dict[str, Any]]:
    with open(ADMISSION_MANIFESTS / name, encoding="utf-8") as file:
        return [doc for doc in yaml.safe_load_all(file) if doc]


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the process that started it dies (as testbed does)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Webhook:
    """aicr-admission on a control plane; or, given a `kubeconfig` and no plane, on its own (a test that
    talks to it directly, its kubeconfig naming a stand-in API server)."""

    def __init__(self, plane: envtest.ControlPlane | None, workdir: Path | None = None,
                 kubeconfig: Path | None = None) -> None:
        assert plane is not None or (workdir is not None and kubeconfig is not None), "a plane, or a kubeconfig"
        self.plane = plane
        self.workdir = workdir if workdir is not None else self.cluster.workdir / "admission"
        self.workdir.mkdir(parents=True, exist_ok=True)
        ca, ca_cert, ca_key = envtest.make_ca("aicr-admission-test-ca")
        serving = envtest.issue(ca_cert, ca_key, "aicr-admission", server=True)
        self.ca_pem = ca.cert_pem
        self.ca_file, self.cert_file, self.key_file = (self.workdir / "ca.crt", self.workdir / "tls.crt",
                                                       self.workdir / "tls.key")
        self.ca_file.write_bytes(ca.cert_pem)
        self.cert_file.write_bytes(serving.cert_pem)
        self.key_file.write_bytes(serving.key_pem)
        self.key_file.chmod(0o600)
        self.port = envtest.free_port()
        self.metrics_port = envtest.free_port()
        self.log_path = self.workdir / "aicr-admission.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarted = False  # set by a test that restarts it differently (tests restore it afterwards)
        if plane is None:
            self.kubeconfig = kubeconfig
            return
        client = envtest.issue(plane.client_ca_cert, plane.client_ca_key, IDENTITY, IDENTITY_GROUPS)
        self.kubeconfig = self.workdir / "kubeconfig"
        plane._write_kubeconfig(
            self.kubeconfig,
            [{"name": "plane", "cluster": {"server": plane.url,
                                           "certificate-authority-data": envtest.b64(plane.server_ca_pem)}}],
            [{"name": "webhook", "user": {"client-certificate-data": envtest.b64(client.cert_pem),
                                          "client-key-data": envtest.b64(client.key_pem)}}],
            [{"name": "webhook", "context": {"cluster": "plane", "user": "webhook"}}], "webhook")

    @property
    def cluster(self) -> envtest.ControlPlane:
        """The control plane it runs on: what the cluster side needs (a webhook on its own has none)."""
        if self.plane is None:
            raise envtest.TestbedError("this webhook runs on its own: it has no control plane")
        return self.plane

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    # -- the process ------------------------------------------------------------------------------
    def start(self, *flags: str, env: dict[str, str] | None = None, timeout: float = 60) -> Webhook:
        """Start aicr-admission (this virtualenv's) and wait until /readyz answers 200."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        args = [str(BIN / "aicr-admission"), f"--tls-cert-file={self.cert_file}",
                f"--tls-private-key-file={self.key_file}", "--bind-address=127.0.0.1",
                f"--secure-port={self.port}", f"--metrics-port={self.metrics_port}", f"--kubeconfig={self.kubeconfig}",
                *flags]
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_"))}
        environment.update(env or {})
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=environment, start_new_session=True, preexec_fn=_die_with_parent)
        ends = time.monotonic() + timeout
        while time.monotonic() < ends:
            if self.proc.poll() is not None:
                raise envtest.TestbedError(f"aicr-admission exited with {self.proc.returncode}\n{self.log_tail()}")
            try:
                status, _ = self.get("/readyz")
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise envtest.TestbedError(f"aicr-admission not ready after {timeout:.0f}s\n{self.log_tail()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int | None:
        """Signal the process and wait for it to exit; its exit code (None if it was not running)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def restart(self, *flags: str, env: dict[str, str] | None = None) -> Webhook:
        self.stop()
        return self.start(*flags, env=env)

    def get(self, path: str) -> tuple[int, str]:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        try:
            with urllib.request.urlopen(self.url + path, context=context, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Its /metrics, parsed: (sample name, sorted labels) -> value."""
        from prometheus_client.parser import text_string_to_metric_families

        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
        return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
                for family in text_string_to_metric_families(text) for sample in family.samples}

    # -- what it logged ---------------------------------------------------------------------------
    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for text in self.log_path.read_text(errors="replace").splitlines() if self.log_path.exists() else []:
            try:
                lines.append(json.loads(text))
            except ValueError:
                lines.append({"msg": "(not JSON)", "text": text})
        return lines

    def decisions(self, rollout: str | None = None) -> list[dict[str, Any]]:
        return [line for line in self.log_lines()
                if line.get("msg") == "decision" and (rollout is None or line.get("rollout") == rollout)]

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "--- aicr-admission log\n" + "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    # -- the cluster side -------------------------------------------------------------------------
    def apply_rbac(self) -> None:
        """The manifests' ServiceAccount, roles and bindings (runtime, policy file, Events), as shipped."""
        docs = [d for name in ("50-admission-webhook.yaml", "52-admission-events.yaml")
                for d in manifest_documents(name) if d["kind"] in RBAC_KINDS]
        self.cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))

    def configuration(self) -> dict[str, Any]:
        """The manifest's ValidatingWebhookConfiguration, calling this process by URL with the test CA."""
        (config,) = manifest_documents("55-admission-registration.yaml")
        config["metadata"].pop("annotations", None)  # no cert-manager here: the caBundle is set below
        for hook in config["webhooks"]:
            hook["clientConfig"] = {"url": f"{self.url}/validate", "caBundle": envtest.b64(self.ca_pem)}
        return config

    def register(self, timeout: float = 60) -> None:
        """Register the webhook and wait until the API server calls it (a dry-run approval is decided)."""
        self.cluster.kubectl("apply", "-f", "-", input=json.dumps(self.configuration()))
        probe = envtest.Seeder(self.cluster).rollout()
        patch = json.dumps({"spec": {"approval": {"user": "alice", "expires": "2099-01-01T00:00:00Z",
                                                  "reason": "webhook probe"}}})
        ends = time.monotonic() + timeout
        while time.monotonic() < ends:
            self.cluster.kubectl("patch", "runtimerollout", probe, "--type=merge", f"-p={patch}", "--dry-run=server",
                               user="alice", check=False)
            if self.decisions(probe):
                self.cluster.kubectl("delete", "runtimerollout", probe)
                return
            time.sleep(0.25)
        raise envtest.TestbedError(f"the API server did not call the webhook within {timeout:.0f}s\n{self.log_tail()}")

    def unregister(self) -> None:
        self.cluster.kubectl("delete", "validatingwebhookconfiguration", "aicr-admission", "--ignore-not-found")
