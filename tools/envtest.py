#!/usr/bin/env python3
"""The test environment's library: real control planes (etcd and kube-apiserver on loopback) and what seeds them.

What controller-runtime's envtest does, in Python: TLS with generated CAs,
RBAC, client-certificate users (CN = user, O = groups) and one exec-plugin user
with a bearer token; the operator's CRDs, admission policy and RBAC from
manifests/ applied with a real kubectl; readiness and policy effect checked by
asking, never by sleeping. The tests, the benches and the demo's modules
(tools/demo_fleet.py, tools/demo_operator.py, tools/admission_testbed.py) import it;
it imports none of them. `tools/testbed.py` is its command line (demo, webhook, reset).

Users (group in brackets): alice, bob, carol [aicr:approvers]; victor [aicr:viewers];
pat [aicr:patchers: may patch rollouts, is no approver]; nora [none];
aicr-operator [aicr:operator]; erin [aicr:approvers] via an exec credential
plugin; admin [system:masters] for setup only.
"""
from __future__ import annotations

import atexit
import base64
import ctypes
import datetime as dt
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "manifests"  # the operator's CRDs, admission policy and RBAC, exactly as its spec has them
TEST_MANIFESTS = ROOT / "tests" / "support" / "manifests"  # test and demo only (the patcher role)
NAMESPACE = "aicr-system"
GROUP, VERSION = "operator.aicr.run", "v1alpha1"

USERS: dict[str, tuple[str, ...]] = {
    "admin": ("system:masters",),
    "alice": ("aicr:approvers",),
    "bob": ("aicr:approvers",),
    "carol": ("aicr:approvers",),
    "victor": ("aicr:viewers",),
    "pat": ("aicr:patchers",),
    "nora": (),
    "aicr-operator": ("aicr:operator",),
}
EXEC_USER, EXEC_GROUPS = "erin", ("aicr:approvers",)


class TestbedError(Exception):
    pass


# -- binaries -----------------------------------------------------------------------

def find_binaries(build: bool = False) -> tuple[Path, Path]:
    """kube-apiserver and etcd: TEST_ASSET_* overrides, else the build step's cache folder."""
    apiserver, etcd = os.environ.get("TEST_ASSET_KUBE_APISERVER"), os.environ.get("TEST_ASSET_ETCD")
    if not (apiserver and etcd):
        args = [sys.executable, str(ROOT / "tools" / "build_testbin.py")] + ([] if build else ["--print-only"])
        # Building, its progress lines (each step, with the time it took) go straight to the terminal:
        # a cold build takes minutes, and one line for all of it looks hung.
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=None if build else subprocess.PIPE, text=True)
        folder = Path(proc.stdout.strip()) if proc.stdout.strip() else None
        if proc.returncode != 0 or folder is None:
            raise TestbedError("kube-apiserver and etcd are not built; "
                               + ("the build failed (its lines above say why)" if build
                                  else "run: python3 tools/build_testbin.py"))
        apiserver, etcd = apiserver or str(folder / "kube-apiserver"), etcd or str(folder / "etcd")
    for binary in (apiserver, etcd):
        if not os.access(binary, os.X_OK):
            raise TestbedError(f"{binary} is not an executable; run: python3 tools/build_testbin.py")
    return Path(apiserver), Path(etcd)


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the process that started us dies (Linux prctl).

    Not SIGTERM: kube-apiserver shuts down gracefully and hangs once etcd is gone.
    """
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _terminate(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; reaped either way."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- PKI ----------------------------------------------------------------------------------

@dataclass
class KeyPair:
    cert_pem: bytes
    key_pem: bytes


def _pki():  # imported lazily: only the testbed needs cryptography
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    return x509, hashes, serialization, ec, NameOID


def make_ca(name: str) -> tuple[KeyPair, Any, Any]:
    x509, hashes, serialization, ec, NameOID = _pki()
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return _pair(cert, key), cert, key


def issue(ca_cert: Any, ca_key: Any, common_name: str, orgs: tuple[str, ...] = (),
          server: bool = False) -> KeyPair:
    x509, hashes, serialization, ec, NameOID = _pki()
    import ipaddress
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    now = dt.datetime.now(dt.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(x509.Name(attrs)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=2))
               .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server
                                                     else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return _pair(builder.sign(ca_key, hashes.SHA256()), key)


def _pair(cert: Any, key: Any) -> KeyPair:
    _, _, serialization, _, _ = _pki()
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM),
                   key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# -- the control plane ----------------------------------------------------------------------

def program_of(proc: subprocess.Popen[bytes]) -> str:
    """The program a process runs, for messages: the first of its arguments."""
    args = proc.args
    first = args if isinstance(args, (str, bytes, os.PathLike)) else args[0]
    return os.fsdecode(first)


class ControlPlane:
    def __init__(self, workdir: Path | None = None, apiserver_flags: Sequence[str] = ()) -> None:
        """`apiserver_flags`: more kube-apiserver flags (an audit policy and log, say), after the testbed's own."""
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="aicr-testbed-"))
        self.apiserver_flags = list(apiserver_flags)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.url = ""
        self.kubeconfig = self.workdir / "kubeconfig"
        self.exec_kubeconfig = self.workdir / "kubeconfig-exec"
        self.build_seconds = 0.0

    # start/stop --------------------------------------------------------------------
    def start(self, build: bool = False) -> ControlPlane:
        atexit.register(self.stop)  # also on an unhandled error; the parent-death signal covers a kill
        started = time.monotonic()
        self.apiserver_bin, self.etcd_bin = find_binaries(build)
        self.build_seconds = time.monotonic() - started
        self._write_pki()
        for attempt in range(3):  # a port taken between probing and binding: try again
            try:
                self._start_processes()
                break
            except TestbedError:
                self.stop(keep_workdir=True)
                if attempt == 2:
                    raise
        self._write_kubeconfigs()
        self._apply_manifests()
        self._wait_for_policy()
        return self

    def stop(self, keep_workdir: bool = False) -> None:
        """kube-apiserver first, then etcd: an apiserver whose etcd is gone hangs in its graceful shutdown."""
        for proc in reversed(self.procs):  # started etcd, kube-apiserver: stopped the other way round
            _terminate(proc, grace=0.5)
        self.procs = []
        if not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def apiserver(self) -> subprocess.Popen[bytes]:
        return self.procs[1]

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver (if it still runs) and start it again on the same port, over the same etcd."""
        _terminate(self.apiserver, grace=0.5)
        self.procs[1] = self._launch("kube-apiserver", self.apiserver_args)
        self._wait_ready()

    # pieces ------------------------------------------------------------------------
    def _write_pki(self) -> None:
        pki = self.workdir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        server_ca, server_ca_cert, server_ca_key = make_ca("aicr-testbed-server-ca")
        client_ca, self.client_ca_cert, self.client_ca_key = make_ca("aicr-testbed-client-ca")
        serving = issue(server_ca_cert, server_ca_key, "kube-apiserver", server=True)
        sa_ca, _, _ = make_ca("aicr-testbed-service-accounts")
        files = {"server-ca.crt": server_ca.cert_pem, "client-ca.crt": client_ca.cert_pem,
                 "serving.crt": serving.cert_pem, "serving.key": serving.key_pem,
                 "sa.key": sa_ca.key_pem}
        for name, data in files.items():
            (pki / name).write_bytes(data)
        self.server_ca_pem = server_ca.cert_pem
        self.users = {user: issue(self.client_ca_cert, self.client_ca_key, user, groups)
                      for user, groups in USERS.items()}
        for user, pair in self.users.items():
            (pki / f"{user}.crt").write_bytes(pair.cert_pem)
            (pki / f"{user}.key").write_bytes(pair.key_pem)
        self.exec_token = secrets.token_hex(24)
        (pki / "tokens.csv").write_text(f'{self.exec_token},{EXEC_USER},{EXEC_USER},"{",".join(EXEC_GROUPS)}"\n')
        # sa.key holds a private key; the public half comes from it.
        from cryptography.hazmat.primitives import serialization
        key = serialization.load_pem_private_key(sa_ca.key_pem, None)
        (pki / "sa.pub").write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))

    def _start_processes(self) -> None:
        pki, etcd_port, api_port = self.workdir / "pki", free_port(), free_port()
        data = self.workdir / f"etcd-{etcd_port}"
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._spawn("etcd", [str(self.etcd_bin), f"--data-dir={data}", f"--listen-client-urls={etcd_url}",
                             f"--advertise-client-urls={etcd_url}", "--listen-peer-urls=http://127.0.0.1:0",
                             "--unsafe-no-fsync=true", "--watch-progress-notify-interval=5s",
                             "--log-level=warn"])
        self.apiserver_args = [
            str(self.apiserver_bin), f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1",
            f"--secure-port={api_port}", f"--tls-cert-file={pki / 'serving.crt'}",
            f"--tls-private-key-file={pki / 'serving.key'}", f"--client-ca-file={pki / 'client-ca.crt'}",
            f"--token-auth-file={pki / 'tokens.csv'}", "--authorization-mode=RBAC",
            f"--service-account-issuer=https://127.0.0.1:{api_port}",
            f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24", "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true", "--enable-priority-and-fairness=false", "--profiling=false",
            "--endpoint-reconciler-type=none", *self.apiserver_flags]
        self._spawn("kube-apiserver", self.apiserver_args)
        self.url = f"https://127.0.0.1:{api_port}"
        self._wait_ready()

    def _spawn(self, name: str, args: list[str]) -> None:
        self.procs.append(self._launch(name, args))

    def _launch(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        with open(self.workdir / f"{name}.log", "ab") as log:
            return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, preexec_fn=_die_with_parent)

    def _log_tail(self) -> str:
        tails = []
        for name in ("etcd", "kube-apiserver"):
            path = self.workdir / f"{name}.log"
            if path.exists():
                tails.append(f"--- {name}.log\n" + "\n".join(path.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(tails)

    def _wait_ready(self, timeout: float = 120) -> None:
        pki = self.workdir / "pki"
        context = ssl.create_default_context(cafile=str(pki / "server-ca.crt"))
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        ends = time.monotonic() + timeout
        while time.monotonic() < ends:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise TestbedError(f"{program_of(proc)} exited with {proc.returncode}\n{self._log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", context=context, timeout=5) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        raise TestbedError(f"kube-apiserver not ready after {timeout:.0f}s\n{self._log_tail()}")

    def _write_kubeconfigs(self) -> None:
        cluster = {"name": "aicr-testbed", "cluster": {"server": self.url,
                                                       "certificate-authority-data": b64(self.server_ca_pem)}}
        users = [{"name": u, "user": {"client-certificate-data": b64(p.cert_pem),
                                      "client-key-data": b64(p.key_pem)}} for u, p in self.users.items()]
        contexts = [{"name": u, "context": {"cluster": "aicr-testbed", "user": u}} for u in self.users]
        self._write_kubeconfig(self.kubeconfig, [cluster], users, contexts, "alice")
        for user in self.users:
            self._write_kubeconfig(self.kubeconfig_for(user), [cluster],
                                   [x for x in users if x["name"] == user],
                                   [x for x in contexts if x["name"] == user], user)
        helper = self.workdir / "exec-credential.py"
        (self.workdir / "pki" / "exec-token").write_text(self.exec_token)
        helper.write_text(EXEC_PLUGIN.format(token_file=str(self.workdir / "pki" / "exec-token")))
        exec_user = {"name": EXEC_USER, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
            "args": [str(helper)], "interactiveMode": "Never"}}}
        self._write_kubeconfig(self.exec_kubeconfig, [cluster], [exec_user],
                               [{"name": EXEC_USER, "context": {"cluster": "aicr-testbed", "user": EXEC_USER}}],
                               EXEC_USER)

    def kubeconfig_for(self, user: str) -> Path:
        return self.exec_kubeconfig if user == EXEC_USER else self.workdir / f"kubeconfig-{user}"

    @staticmethod
    def _write_kubeconfig(path: Path, clusters: list[Any], users: list[Any], contexts: list[Any],
                          current: str) -> None:
        doc = {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users,
               "contexts": contexts, "current-context": current}
        path.write_text(json.dumps(doc, indent=2))  # JSON is YAML
        path.chmod(0o600)

    def kubectl(self, *args: str, user: str = "admin", check: bool = True,
                input: str | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig_for(user)}", *args],
                              capture_output=True, text=True, input=input, timeout=120)
        if check and proc.returncode != 0:
            raise TestbedError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc

    def _apply_manifests(self) -> None:
        self.kubectl("apply", "-f", str(MANIFESTS))
        self.kubectl("apply", "-f", str(TEST_MANIFESTS))
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                     f"crd/runtimerollouts.{GROUP}", f"crd/clusterruntimes.{GROUP}")

    def _wait_for_policy(self, timeout: float = 90) -> None:
        """Policies take effect asynchronously: a dry-run approval by a non-approver must be denied."""
        probe = Seeder(self).rollout(phase="AwaitingApproval")
        patch = json.dumps({"spec": {"approval": {"user": "pat", "expires": "2099-01-01T00:00:00Z",
                                                  "reason": "policy probe"}}})
        ends = time.monotonic() + timeout
        while time.monotonic() < ends:
            proc = self.kubectl("patch", "runtimerollout", probe, "--type=merge", f"-p={patch}",
                                "--dry-run=server", user="pat", check=False)
            if proc.returncode != 0 and "ValidatingAdmissionPolicy" in proc.stderr:
                self.kubectl("delete", "runtimerollout", probe)
                return
            time.sleep(0.5)
        raise TestbedError("the admission policy did not take effect within "
                           f"{timeout:.0f}s\n{self._log_tail()}")

    def api(self, user: str = "aicr-operator") -> Any:
        from kubernetes.config.kube_config import new_client_from_config
        return new_client_from_config(config_file=str(self.kubeconfig_for(user)), persist_config=False)


EXEC_PLUGIN = '''\
import json, pathlib
token = pathlib.Path({token_file!r}).read_text().strip()
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {{"token": token}}}}))
'''


# -- seeding, as the operator would --------------------------------------------------------------

def digest_of(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def random_digest() -> str:
    return "sha256:" + secrets.token_hex(32)


def rfc3339(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


SAMPLE_REPORT = {
    "components": [
        {"component": "gpu-operator", "change": "version", "from": "v25.3.0", "to": "v25.10.0",
         "verdict": "manual", "notes": ["1 minor", "1 step"],
         "precondition": "no training job running on the node pool",
         "steps": [{"id": "drain", "description": "drain GPU nodes one pool at a time"}]},
        {"component": "nvsentinel", "change": "added", "from": "", "to": "v0.4.1", "verdict": "safe",
         "notes": []},
    ],
    "summary": "1 manual, 1 safe",
}
SAMPLE_STEPS = [
    {"release": "gpu-operator", "operation": "Upgrade", "verdict": "manual", "changesCRDs": True},
    {"release": "nvsentinel", "operation": "Install", "verdict": "safe", "changesCRDs": False},
]
SAMPLE_RECORDS = [
    {"release": "gpu-operator", "summary": "upgrade v25.3.0 -> v25.10.0",
     "precondition": "no training job running on the node pool",
     "beforeApply": [{"id": "checkpoint", "description": "checkpoint running training jobs"}],
     "afterApply": [{"id": "verify-driver", "description": "nvidia-smi reports driver 580 on every node"}]},
    {"release": "nvsentinel", "summary": "install v0.4.1",
     "afterApply": [{"id": "reset-breaker", "description": "reset a tripped circuit breaker"},
                    {"id": "verify-crd", "description": "verify the NVSentinel CRD is served"}]},
]


OUTCOME_LABEL = "operator.aicr.run/outcome"  # set by the operator when a rollout ends, to its outcome


class Seeder:
    """Creates runtimes, plans, reports and rollouts; status goes through the status subresource."""

    def __init__(self, plane: ControlPlane, user: str = "aicr-operator") -> None:
        from kubernetes import client
        self.api = plane.api(user)
        self.custom = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)

    def rollout(self, *, phase: str = "AwaitingApproval", outcome: str = "", approval_required: bool = True,
                approval: dict[str, str] | None = None, revocation: dict[str, str] | None = None,
                acknowledgements: list[dict[str, str]] | None = None, awaiting_release: str = "",
                from_digest: str | None = "random", deadline: dt.datetime | None = None,
                report: str | None = None, report_digest: str | None = None,
                steps: list[dict[str, Any]] | None = None, step_states: list[dict[str, str]] | None = None,
                records: list[dict[str, Any]] | None = None, message: str = "rollout awaiting approval",
                namespace: str = NAMESPACE, to: str | None = None, attempt: int = 1,
                runtime_uid: str = "6c1f0e9a-7d2b-4c1e-9a51-3f9a1c0d2b7e",
                labels: dict[str, str] | None = None) -> str:
        """A rollout to plan `to` (default: a new random digest), named as the operator names its `attempt`."""
        to = to or random_digest()
        name = f"rollout-{to[7:23]}-{attempt}"
        spec: dict[str, Any] = {
            "runtime": {"name": "cluster", "uid": runtime_uid},
            "to": {"digest": to},
            "deadline": rfc3339(deadline or dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=8)),
            "approvalRequired": approval_required,
            "startingInventory": {"releases": 42, "digest": random_digest()},
            "steps": SAMPLE_STEPS if steps is None else steps,
            "records": SAMPLE_RECORDS if records is None else records,
        }
        if from_digest:
            spec["from"] = {"digest": random_digest() if from_digest == "random" else from_digest}
        if report is not None:
            digest = report_digest or digest_of(report)
            spec["assessment"] = {"digest": digest}
            self.configmap(f"aicr-assessment-{digest[7:23]}", {"report.json": report},
                           {"operator.aicr.run/role": "assessment"}, namespace=namespace)
        elif report_digest:
            spec["assessment"] = {"digest": report_digest}
        for key, value in (("approval", approval), ("revocation", revocation),
                           ("acknowledgements", acknowledgements)):
            if value:
                spec[key] = value
        metadata: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
        if phase == "Ended" and outcome:  # as the operator labels an ended rollout (operator-api.md)
            metadata["labels"][OUTCOME_LABEL] = outcome
        if not metadata["labels"]:
            del metadata["labels"]
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "RuntimeRollout", "metadata": metadata, "spec": spec}
        self.custom.create_cluster_custom_object(GROUP, VERSION, "runtimerollouts", body)
        status: dict[str, Any] = {"phase": phase, "message": message,
                                  "steps": step_states if step_states is not None else
                                  [{"release": "gpu-operator", "state": "InFlight"},
                                   {"release": "nvsentinel", "state": "Pending"}]}
        if outcome:
            status["outcome"] = outcome
        if awaiting_release:
            status["awaitingRelease"] = awaiting_release
        self.set_rollout_status(name, status)
        return name

    def set_rollout_status(self, name: str, status: dict[str, Any]) -> None:
        self.custom.patch_cluster_custom_object_status(GROUP, VERSION, "runtimerollouts", name,
                                                       {"status": status},
                                                       _content_type="application/merge-patch+json")

    def configmap(self, name: str, data: dict[str, str], labels: dict[str, str],
                  annotations: dict[str, str] | None = None, namespace: str = NAMESPACE) -> None:
        from kubernetes.client.exceptions import ApiException
        try:
            self.core.create_namespaced_config_map(namespace, cast(Any, {
                "apiVersion": "v1", "kind": "ConfigMap", "immutable": True,
                "metadata": {"name": name, "labels": labels, "annotations": annotations or {}}, "data": data}))
        except ApiException as err:
            if err.status != 409:  # content-addressed: the same name holds the same content
                raise

    def plan(self, *, recipe: str | None = None, source: str = "recipe",
             render_flags: list[str] | None | str = "default", recipe_digest: str | None = None,
             digest: str | None = None, recorded_digest: str | None = None,
             aicr_image: str | None = None, bundle: str | None = None) -> str:
        digest = digest or random_digest()
        recipe = recipe if recipe is not None else json.dumps(
            {"kind": "RecipeResult", "apiVersion": "aicr.nvidia.com/v1alpha1",
             "componentRefs": [{"name": "gpu-operator", "version": "v25.10.0"}]}, indent=2)
        data = {"aicrImage": f"ghcr.io/nvidia/aicr@{random_digest()}" if aicr_image is None else aicr_image,
                "bundle": f"oci://registry.example.com/aicr/cluster/bundles@{digest}" if bundle is None else bundle}
        if source == "recipe":
            data["recipe.json"] = recipe
            data["recipeDigest"] = recipe_digest or digest_of(recipe)
        if render_flags == "default":
            render_flags = ["--deployer", "argocd", "--system-node-selector", "nodeGroup=system"]
        if render_flags is not None:
            data["renderFlags"] = json.dumps(render_flags)
        self.configmap(f"aicr-plan-{digest[7:23]}", data, {"operator.aicr.run/role": "plan"},
                       {"operator.aicr.run/digest": recorded_digest or digest, "operator.aicr.run/source": source})
        return digest

    def runtime(self, active: str | None = None, candidate: str | None = None) -> None:
        from kubernetes.client.exceptions import ApiException
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterRuntime", "metadata": {"name": "cluster"},
                "spec": {"validation": {"deployment": "Enabled"}}}
        try:
            self.custom.create_cluster_custom_object(GROUP, VERSION, "clusterruntimes", body)
        except ApiException as err:
            if err.status != 409:
                raise
        status = {"activePlan": {"digest": active} if active else None,
                  "candidatePlan": {"digest": candidate} if candidate else None}
        self.custom.patch_cluster_custom_object_status(GROUP, VERSION, "clusterruntimes", "cluster",
                                                       {"status": status},
                                                       _content_type="application/merge-patch+json")



# -- the demo's rollouts -------------------------------------------------------------------------

def seed_demo(plane: ControlPlane, salt: str | None = None, shared: str | None = None,
              labels: dict[str, str] | None = None) -> dict[str, str]:
    """The demo's rollouts: {role: name}. With `salt`, the same names every time (a reset puts them back);
    with `shared`, one more waiting for approval, to that plan digest (the same in every cluster of a fleet);
    `labels` on each (a test that lists only these: `list -l`)."""
    def digest(role: str) -> str | None:
        return digest_of(f"aicr-demo {salt} {role}") if salt else None

    seed = Seeder(plane)
    active, candidate = seed.plan(digest=digest("active-plan")), seed.plan(digest=shared or digest("candidate-plan"))
    seed.runtime(active=active, candidate=candidate)
    now = dt.datetime.now(dt.timezone.utc)
    approved = {"user": "bob", "expires": rfc3339(now + dt.timedelta(hours=2)), "reason": "maintenance window"}
    names = {
        "waiting": seed.rollout(labels=labels, report=json.dumps(SAMPLE_REPORT, indent=2), to=digest("waiting")),
        "acknowledgement": seed.rollout(labels=labels, phase="AwaitingAcknowledgement", approval=approved,
                                        awaiting_release="nvsentinel", to=digest("acknowledgement"),
                                        message="waiting for acknowledgement of nvsentinel",
                                        step_states=[{"release": "gpu-operator", "state": "Ready"},
                                                     {"release": "nvsentinel",
                                                      "state": "AwaitingAcknowledgement"}]),
        "validating": seed.rollout(labels=labels, phase="Validating", approval=approved,
                                   message="validating the deployment", to=digest("validating"),
                                   step_states=[{"release": "gpu-operator", "state": "Ready"},
                                                {"release": "nvsentinel", "state": "Ready"}]),
        "ended": seed.rollout(labels=labels, phase="Ended", outcome="Succeeded", approval=approved,
                              message="rollout succeeded", to=digest("ended"),
                              step_states=[{"release": "gpu-operator", "state": "Ready"},
                                           {"release": "nvsentinel", "state": "Ready"}]),
    }
    if shared:
        # No after-apply steps: approved, it runs to its end unattended (the fleet's waves follow it there).
        names["fleet-plan"] = seed.rollout(labels=labels, to=shared, report=json.dumps(SAMPLE_REPORT, indent=2),
                                           records=[SAMPLE_RECORDS[0] | {"afterApply": []}],
                                           step_states=[{"release": "gpu-operator", "state": "Pending"},
                                                        {"release": "nvsentinel", "state": "Pending"}])
    return names


# What each user of the testbed may do, as manifests/ (RBAC and the admission policy) grant it.
USER_ROLES: dict[str, str] = {
    "alice": "approver: describe, list, approve, revoke, acknowledge",
    "bob": "approver, as alice (a second approver: four-eyes)",
    "carol": "approver, as alice (a third: races)",
    "erin": "approver through an exec credential plugin (a bearer token)",
    "victor": "viewer: describe, list, wait, reproduce; every write is refused",
    "pat": "may patch rollouts but is no approver: the admission policy refuses the write",
    "nora": "no permissions: every request is FORBIDDEN",
    "aicr-operator": "the operator's role: creates rollouts, writes their status",
    "admin": "system:masters, for setting up (kubectl apply, seeding); not a user of the plugin",
}
