"""`aicr-admission`: the command line, the routes, the structured log, signals.

Flags are named as Kubernetes components name them (kube-apiserver's
`--tls-cert-file`, `--secure-port`, `--request-timeout`,
`--shutdown-delay-duration`, ...); durations are Go durations (`5s`, `1m`).
Every log line is one JSON object on stderr; each decided write gets exactly
one (`"msg": "decision"`: user, rollout, actions, verdict, violated policies),
never a token, the user's extra attributes or the object. The process is a
server's (aicr_core.process_owner): no prompt, no SIGALRM, no GC pause, and
what the libraries log reaches the JSON log through its owner.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
from datetime import datetime, timezone
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code, UsageError, shown

if TYPE_CHECKING:
    from aicr_admission.audit import EventRecorder
    from aicr_admission.metrics import Metrics
    from aicr_admission.policy_source import PolicySource
    from aicr_admission.server import Request, Response
    from aicr_core.domain import operator_api as api
    from aicr_core.session.kube import KubeSession

DEFAULT_PORT = 8443
DEFAULT_METRICS_PORT = 8080
READ_SECONDS = 2.0  # each read of the API server (the policy file, an assessment report)
# kube-apiserver's webhook client closes a connection idle for 90 s (client-go's transport takes Go's
# http.DefaultTransport IdleConnTimeout; docs/webhook.md cites the source): ours must be longer.
IDLE_TIMEOUT = 120.0
# What the `admission` extra installs (setup.cfg): the server's HTTP/1.1 parser and its metrics. A plain
# `pip install kubectl-aicr` installs this program too, without them.
EXTRA_MODULES = ("h11", "prometheus_client")
INSTALL_EXTRA = "pip install 'kubectl-aicr[admission]'"


class JsonLog:
    """One JSON object per line; lines from several threads never interleave."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._lock = threading.Lock()

    def __call__(self, msg: str, level: str = "info", **fields: Any) -> None:
        now = datetime.now(timezone.utc)
        line = {"time": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z", "level": level,
                "msg": msg, **{k: v for k, v in fields.items() if v is not None}}
        text = json.dumps(line, ensure_ascii=False, default=str)
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()


class LibraryLog(logging.Handler):
    """What libraries log (urllib3, the Kubernetes client) becomes JSON lines too, warnings and up.

    The process owner's `library_log`: its one handler on the root logger hands it every record but
    those a session collects while it loads its credentials (reported as that session's error).
    """

    def __init__(self, log: JsonLog) -> None:
        super().__init__(logging.WARNING)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        self.log("library", level=record.levelname.lower(), logger=record.name, error=record.getMessage()[:2000])


def parser() -> argparse.ArgumentParser:
    from aicr_core.go_duration import parse_duration

    def seconds(text: str) -> float:
        return parse_duration(text).total_seconds()

    def size(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not a number of bytes") from None
        if value < 1:
            raise argparse.ArgumentTypeError("must be at least 1")
        return value

    p = argparse.ArgumentParser(
        prog="aicr-admission", allow_abbrev=False,
        description="Validating admission webhook: runs the approval policies of kubectl aicr (aicr.policies "
                    "plugins and the cluster's policy file) on every write that adds an approval, a revocation "
                    "or an acknowledgement. Serves POST /validate (AdmissionReview v1), GET /healthz, /readyz.")
    p.add_argument("--tls-cert-file", required=True, metavar="PATH",
                   help="serving certificate (PEM; with intermediates after it); reloaded when it changes")
    p.add_argument("--tls-private-key-file", required=True, metavar="PATH", help="its private key (PEM)")
    p.add_argument("--bind-address", default="0.0.0.0", metavar="IP", help="address to listen on (default 0.0.0.0)")
    p.add_argument("--secure-port", type=int, default=DEFAULT_PORT, metavar="PORT",
                   help=f"HTTPS port (default {DEFAULT_PORT}; 0 picks a free one and logs it)")
    p.add_argument("--kubeconfig", metavar="PATH",
                   help="credentials to read the policy file; without it, the pod's service account")
    p.add_argument("--operator-namespace", default="aicr-system", metavar="NAMESPACE",
                   help="where assessment reports live (default aicr-system); the policy file is where the "
                        "cluster says (the ClusterRuntime's annotation aicr.run/policy-namespace), as for kubectl aicr")
    p.add_argument("--request-timeout", type=seconds, default=5.0, metavar="DURATION",
                   help="the whole of one request: TLS handshake, headers, body, decision (default 5s)")
    p.add_argument("--tls-handshake-timeout", type=seconds, default=3.0, metavar="DURATION",
                   help="the TLS handshake (default 3s)")
    p.add_argument("--max-request-bytes", type=size, default=4 * 1024 * 1024, metavar="BYTES",
                   help="largest request body accepted (default 4 MiB)")
    p.add_argument("--max-requests-inflight", type=size, default=16, metavar="N",
                   help="requests decided at once; more wait their turn (default 16)")
    p.add_argument("--max-connections", type=size, default=256, metavar="N",
                   help="connections open at once, idle kept ones included; more wait to be accepted (default 256)")
    p.add_argument("--idle-timeout", type=seconds, default=IDLE_TIMEOUT, metavar="DURATION",
                   help="close a kept connection idle this long (default 2m: longer than kube-apiserver's own 90s, "
                        "so that the client closes first)")
    p.add_argument("--metrics-port", type=int, default=DEFAULT_METRICS_PORT, metavar="PORT",
                   help=f"plain-HTTP port of GET /metrics (Prometheus), on --bind-address (default "
                        f"{DEFAULT_METRICS_PORT}; 0 disables)")
    p.add_argument("--policy-refresh-interval", type=seconds, default=2.0, metavar="DURATION",
                   help="how often the policy file is re-read (default 2s)")
    p.add_argument("--event-queue-size", type=size, default=256, metavar="N",
                   help="audit Events waiting to be sent; more are dropped and counted (default 256)")
    p.add_argument("--shutdown-delay-duration", type=seconds, default=0.0, metavar="DURATION",
                   help="after SIGTERM, keep serving this long while /readyz fails, each answer closing its "
                        "connection, so endpoints drain (default 0s)")
    return p


def main(argv: list[str] | None = None) -> int:
    log = JsonLog(sys.stderr)
    missing = missing_extra()
    if missing:  # before the flags (even --help) and the certificate files: nothing here works without them
        log("cannot start", level="error", error=f"the admission extra is not installed (no module "
            f"{', '.join(missing)}): {INSTALL_EXTRA}")
        return 1
    try:
        args = parse_args(argv)
        return run(args, log)
    except AicrError as err:
        log("cannot start", level="error", error=str(err), details=err.details or None)
        return err.exit_code


def missing_extra() -> list[str]:
    """The modules of the `admission` extra that cannot be found (found, not imported: that is run's)."""
    from importlib.util import find_spec

    return [name for name in EXTRA_MODULES if find_spec(name) is None]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # `error: [USAGE] ...`, exit 2, as the CLI
            raise UsageError(message)

    p = parser()
    p.__class__ = Parser
    args = p.parse_args(argv)
    for flag in ("secure_port", "metrics_port"):
        if not 0 <= getattr(args, flag) <= 65535:
            raise UsageError(f"--{flag.replace('_', '-')} {getattr(args, flag)} is not a port")
    for flag in ("request_timeout", "tls_handshake_timeout", "policy_refresh_interval", "idle_timeout"):
        if not 0 < getattr(args, flag) < math.inf:
            raise UsageError(f"--{flag.replace('_', '-')} must be positive")
    return args


def run(args: argparse.Namespace, log: JsonLog) -> int:
    from aicr_admission.audit import EVENTS_PATH, EventRecorder
    from aicr_admission.metrics import Metrics
    from aicr_admission.policy_source import PolicySource
    from aicr_admission.server import Limits, Server, ServingCertificate
    from aicr_core import process_owner
    from aicr_core.domain import rollouts
    from aicr_core.domain.policy_engine import load_policies

    process_owner.install(process_owner.ProcessOwner.server("aicr-admission", library_log=LibraryLog(log)))
    try:
        certificate = ServingCertificate(args.tls_cert_file, args.tls_private_key_file, log)
    except (OSError, ValueError) as err:
        raise AicrError(Code.USAGE, f"cannot load the serving certificate: {err}") from None
    base = service_session(args.kubeconfig)
    namespace = args.operator_namespace

    def session() -> KubeSession:
        """A session on the shared connection pool with a deadline of its own (one per read)."""
        from aicr_core.session.deadline import Deadline

        return base.with_deadline(Deadline(READ_SECONDS))

    loaded = load_policies()
    log("policies loaded", policies=sorted(loaded.plugins), failed=dict(sorted(loaded.failures.items())) or None,
        level="error" if loaded.failures else "info")
    source = PolicySource(loaded, lambda: rollouts.read_policy_file(session()),
                          interval=args.policy_refresh_interval, log=log)

    def read_assessment(rollout: api.Rollout) -> api.Assessment:
        return rollouts.read_report(session(), namespace, rollout.assessment_digest).for_policies()

    metrics = Metrics()
    metrics.watch_policy_file(source.health)
    events = EventRecorder(lambda event: session().create(EVENTS_PATH, event),
                           lambda path, body: session().patch(path, body), metrics.events_dropped.inc, log,
                           size=args.event_queue_size).start()
    stopping, stop = threading.Event(), threading.Event()
    webhook = Webhook(source, read_assessment, log, stopping, metrics, events)
    limits = Limits(args.request_timeout, args.tls_handshake_timeout, args.max_request_bytes,
                    args.max_requests_inflight, args.max_connections, args.idle_timeout)
    try:
        server = Server(args.bind_address, args.secure_port, certificate.context, webhook.routes(), limits, log,
                        on_connection=metrics.connections.inc)
    except OSError as err:
        raise AicrError(Code.USAGE, f"cannot listen on {args.bind_address}:{args.secure_port}: {err}") from None
    metrics_port = None
    if args.metrics_port:
        try:
            metrics_port = metrics.serve(args.bind_address, args.metrics_port)
        except OSError as err:
            raise AicrError(Code.USAGE, f"cannot listen on {args.bind_address}:{args.metrics_port} for the "
                            f"metrics: {err}") from None

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if stopping.is_set():
            return
        stopping.set()  # /readyz fails from now on
        log("shutting down", signal=signal.Signals(signum).name, delaySeconds=args.shutdown_delay_duration)
        threading.Timer(args.shutdown_delay_duration, stop.set).start()

    # The event loop hands each review to a worker thread and takes the answer back: with CPython's default
    # 5 ms GIL switch interval, either side may wait up to that for the other at every hand-over.
    sys.setswitchinterval(0.0005)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    source.start(stop)
    log("serving", address=args.bind_address, port=server.port, metricsPort=metrics_port, namespace=namespace,
        state=source.state())
    server.serve(stop, draining=stopping)  # while stopping: every answer carries Connection: close
    events.stop()  # what is queued is sent (for at most 2 s)
    metrics.stop()
    log("stopped")
    return 0


def service_session(kubeconfig: str | None) -> KubeSession:
    """A session from --kubeconfig, else from the pod's service account (the official client's in-cluster loader)."""
    from aicr_core.session import kube
    from aicr_core.session.deadline import Deadline

    if kubeconfig:
        return kube.connect(kubeconfig, None, Deadline(30.0))
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import load_incluster_config

    from aicr_core.session.kubeconfig import Impersonation, Settings

    configuration = Configuration()
    configuration.retries = False
    try:
        load_incluster_config(client_configuration=configuration)  # re-reads the projected token as it rotates
    except ConfigException as err:
        raise AicrError(Code.KUBECONFIG, f"no --kubeconfig, and not running in a pod: {err}") from None
    return kube.KubeSession(Settings(configuration, Impersonation(), "the pod's service account"), Deadline(30.0))


class Webhook:
    """The routes: POST /validate, GET /healthz, GET /readyz."""

    def __init__(self, source: PolicySource, read_assessment: Any, log: JsonLog, stopping: threading.Event,
                 metrics: Metrics, events: EventRecorder | None = None) -> None:
        self.source, self.read_assessment, self.log, self.stopping = source, read_assessment, log, stopping
        self.metrics, self.events = metrics, events
        self.instance = os.environ.get("POD_NAME") or socket.gethostname()  # the Events' reportingInstance

    def routes(self) -> dict[tuple[str, str], Any]:
        return {("POST", "/validate"): self.validate, ("GET", "/healthz"): self.healthz,
                ("GET", "/readyz"): self.readyz}

    def validate(self, request: Request) -> Response:
        from aicr_admission import audit, review
        from aicr_admission.metrics import labels_of
        from aicr_admission.server import Response
        from aicr_core.session import bounded_json

        try:
            # Bounded nesting, as the CLI reads a server: 100,000 `[` ended in a RecursionError, answered 500.
            admission = review.request_of(bounded_json.loads(request.body))
        except (ValueError, review.BadReview) as err:  # bounded_json.TooDeep is a ValueError
            self.log("bad admission review", level="warning", error=str(err))
            self.metrics.reviewed("other", "error", time.monotonic() - request.started)
            return Response.text(f"bad AdmissionReview: {err}", 400)
        engine = self.source.engine()
        answer = review.answer_review(admission, engine, self.read_assessment)
        now = time.monotonic()
        # The decision's result, taken at this boundary: metrics, audit annotations, the Event.
        self.metrics.reviewed(*labels_of(answer), now - request.started)
        document = answer.response()
        notes = audit.audit_annotations(answer)
        if notes:
            document["response"]["auditAnnotations"] = notes
        if answer.actions and not answer.dry_run and self.events is not None:  # NoneOnDryRun
            self.events.record(audit.event_of(answer, audit.Regarding.of(admission), self.instance,
                                              datetime.now(timezone.utc)))
        # durationMs: from the request's first byte (a new connection's: its accept, so the TLS handshake too)
        # to the answer; decideMs: the decision alone.
        self.log("decision", **answer.log_fields(), durationMs=round((now - request.started) * 1000, 1),
                 decideMs=round((now - request.received) * 1000, 1))
        return Response.json(document)

    def healthz(self, request: Request) -> Response:
        from aicr_admission.server import Response

        return Response.text("ok")

    def readyz(self, request: Request) -> Response:
        from aicr_admission.server import Response

        if self.stopping.is_set():
            return Response.text("shutting down", 503)
        return Response.text(self.source.state())


def console_script() -> None:
    sys.exit(main())
