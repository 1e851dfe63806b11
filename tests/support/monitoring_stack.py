"""kube-state-metrics, Prometheus and Alertmanager, the real programs, on loopback, with the shipped configs.

The programs come from tools/build_monitoring.py. Each runs in a session of its
own that dies with the test process (the testbed's parent-death signal), and the
stack stops them all when the test ends, however it ends. Every port is one the
kernel handed out for port 0 (envtest.free_port). The only changes to the shipped
files are the contract's: `for:` and a group's `interval:` shortened in a copy of
the rules, and Alertmanager's receivers pointed at a receiver inside the test
with its waits shortened.
"""
from __future__ import annotations

import atexit
import json
import os
import re
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import build_monitoring
import envtest
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "monitoring"
KSM_USER = "aicr-kube-state-metrics"


def binaries() -> Path:
    """The folder of the five programs; without it a skip, or under CI a failure."""
    try:
        folder = build_monitoring.binaries_folder()
    except build_monitoring.BuildError as err:
        folder, why = None, str(err)
    if folder is not None and build_monitoring.complete(folder):
        return folder
    why = f"no {', '.join(build_monitoring.BINARIES)} in {folder}: run python tools/build_monitoring.py"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the alerting end-to-end test, but: {why}")
    pytest.skip(why)


def shortened_rules(waiting: str, interval: str) -> str:
    """rules.yaml with every `for:` and group `interval:` set to the given durations, nothing else changed."""
    text = (MONITORING / "rules.yaml").read_text(encoding="utf-8")
    text = re.sub(r"^(\s+for:) \S+$", rf"\1 {waiting}", text, flags=re.M)
    return re.sub(r"^(\s+interval:) \S+$", rf"\1 {interval}", text, flags=re.M)


def alertmanager_config(receiver_url: str, wait: str, repeat: str) -> str:
    """alertmanager-example.yaml with its receivers at `receiver_url`/NAME and its waits shortened."""
    config = yaml.safe_load((MONITORING / "alertmanager-example.yaml").read_text(encoding="utf-8"))
    for receiver in config["receivers"]:
        for hook in receiver["webhook_configs"]:
            hook["url"] = f"{receiver_url}/{receiver['name']}"
    for route in [config["route"], *config["route"].get("routes", [])]:
        for key in ("group_wait", "group_interval"):
            if key in route:
                route[key] = wait
        if "repeat_interval" in route:
            route["repeat_interval"] = repeat
    return yaml.safe_dump(config, sort_keys=False)


class Receiver:
    """Alertmanager's webhook receiver: keeps every notification with the path it came to and when."""

    def __init__(self) -> None:
        self.notes: list[tuple[float, str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with outer.lock:
                    outer.notes.append((time.monotonic(), self.path, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def alerts(self) -> list[tuple[float, str, dict[str, Any]]]:
        """(when, receiver path, alert) of every alert of every notification so far."""
        with self.lock:
            return [(at, path, alert) for at, path, body in self.notes for alert in body["alerts"]]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Stack:
    """The three programs against one control plane; `stop` ends them all."""

    def __init__(self, plane: envtest.ControlPlane, workdir: Path, waiting: str, repeat: str) -> None:
        self.plane, self.workdir, self.bin = plane, workdir, binaries()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.receiver = Receiver()
        self.waiting, self.repeat = waiting, repeat
        self.bound = False

    # -- kube-state-metrics as a user bound only to the shipped ClusterRole ----------------------------
    def _ksm_kubeconfig(self) -> Path:
        pair = envtest.issue(self.plane.client_ca_cert, self.plane.client_ca_key, KSM_USER)
        path = self.workdir / "kubeconfig-ksm"
        cluster = {"name": "plane", "cluster": {"server": self.plane.url,
                                                "certificate-authority-data": envtest.b64(self.plane.server_ca_pem)}}
        user = {"name": KSM_USER, "user": {"client-certificate-data": envtest.b64(pair.cert_pem),
                                           "client-key-data": envtest.b64(pair.key_pem)}}
        envtest.ControlPlane._write_kubeconfig(path, [cluster], [user],
                                               [{"name": "ksm", "context": {"cluster": "plane", "user": KSM_USER}}],
                                               "ksm")
        return path

    def _bind_role(self) -> None:
        self.plane.kubectl("apply", "-f", str(MONITORING / "kube-state-metrics-rbac.yaml"))
        self.plane.kubectl("create", "clusterrolebinding", KSM_USER, "--clusterrole=aicr-kube-state-metrics",
                           f"--user={KSM_USER}")
        self.bound = True

    def _launch(self, name: str, args: list[str]) -> None:
        with open(self.workdir / f"{name}.log", "ab") as log:
            self.procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               start_new_session=True, preexec_fn=envtest._die_with_parent))

    def start(self) -> Stack:
        atexit.register(self.stop)  # also when the test process exits without its teardown
        self._bind_role()
        self.ksm_port, ksm_telemetry = envtest.free_port(), envtest.free_port()
        self._launch("kube-state-metrics", [
            str(self.bin / "kube-state-metrics"), f"--kubeconfig={self._ksm_kubeconfig()}",
            "--host=127.0.0.1", f"--port={self.ksm_port}",
            "--telemetry-host=127.0.0.1", f"--telemetry-port={ksm_telemetry}",
            "--custom-resource-state-only",
            f"--custom-resource-state-config-file={MONITORING / 'custom-resource-state.yaml'}"])
        self.am_port = envtest.free_port()
        am_config = self.workdir / "alertmanager.yaml"
        am_config.write_text(alertmanager_config(self.receiver.url, "1s", self.repeat))
        self._launch("alertmanager", [
            str(self.bin / "alertmanager"), f"--config.file={am_config}",
            f"--storage.path={self.workdir / 'alertmanager-data'}",
            f"--web.listen-address=127.0.0.1:{self.am_port}", "--cluster.listen-address="])
        rules = self.workdir / "rules.yaml"
        rules.write_text(shortened_rules(self.waiting, "1s"))
        self.prom_port = envtest.free_port()
        prom_config = self.workdir / "prometheus.yaml"
        prom_config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{self.am_port}"]}]}]},
            "scrape_configs": [{"job_name": "kube-state-metrics",
                                "static_configs": [{"targets": [f"127.0.0.1:{self.ksm_port}"]}]}]}))
        self._launch("prometheus", [
            str(self.bin / "prometheus"), f"--config.file={prom_config}",
            f"--storage.tsdb.path={self.workdir / 'prometheus-data'}",
            f"--web.listen-address=127.0.0.1:{self.prom_port}", "--rules.alert.resend-delay=1s"])
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 120) -> None:
        probes = {f"http://127.0.0.1:{self.ksm_port}/healthz": "kube-state-metrics",
                  f"http://127.0.0.1:{self.am_port}/-/ready": "alertmanager",
                  f"http://127.0.0.1:{self.prom_port}/-/ready": "prometheus"}
        ends = time.monotonic() + timeout
        while probes:
            for proc in self.procs:
                if proc.poll() is not None:
                    program = Path(str(list(proc.args)[0])).name  # type: ignore[arg-type]  # Popen's args: a list here
                    raise AssertionError(f"{program} exited with {proc.returncode}\n{self.log_tails()}")
            for url in list(probes):
                try:
                    with urllib.request.urlopen(url, timeout=2) as resp:
                        if resp.status == 200:
                            del probes[url]
                except OSError:
                    pass
            if time.monotonic() > ends:
                raise AssertionError(f"not ready after {timeout:.0f}s: {sorted(probes.values())}\n{self.log_tails()}")
            time.sleep(0.25)

    def ksm_metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ksm_port}/metrics", timeout=10) as resp:
            return resp.read().decode()

    def query(self, promql: str) -> list[dict[str, Any]]:
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())["data"]["result"]  # type: ignore[no-any-return]

    def log_tails(self) -> str:
        return "\n".join(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                         for log in sorted(self.workdir.glob("*.log")))

    def stop(self) -> None:
        atexit.unregister(self.stop)
        for proc in self.procs:
            envtest._terminate(proc, grace=2)
        self.procs = []
        self.receiver.stop()
        if self.bound:
            self.bound = False
            self.plane.kubectl("delete", "clusterrolebinding", KSM_USER, "--ignore-not-found", check=False)
            self.plane.kubectl("delete", "-f", str(MONITORING / "kube-state-metrics-rbac.yaml"), "--ignore-not-found",
                               check=False)
