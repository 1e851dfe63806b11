"""The webhook's Prometheus metrics (prometheus_client), served on a plain-HTTP listener of their own.

A registry of our own (not the library's global one): the names below, plus
the process's CPU, memory and file descriptors. docs/webhook.md ("Metrics")
says what to alert on, beside the API server's own admission metrics.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    start_http_server,
)

from aicr_core.domain.actions import ACTIONS
from aicr_core.errors import Code, VerdictWord

if TYPE_CHECKING:
    from aicr_admission.review import Answer

# Without this, prometheus_client adds a `_created` gauge beside every counter and histogram: a second
# series per series that nothing reads, and one `promtool check metrics` reports. (A process-wide switch
# of the library: the webhook's process has no other metrics.)
disable_created_metrics()

# The buckets span what a review takes, from a kept connection's to an assessment read at its deadline,
# chosen from measurement (bench/admission_bench.py; the figures: docs/performance.md, "The admission
# webhook"); fine steps below the latency target resolve it, and the API server's own bounds are among them.
BUCKETS = (0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 3.0)


def labels_of(answer: Answer) -> tuple[str, str]:
    """(action, verdict) of a decided review: the one action it adds (else `other`); allow, deny or error."""
    action = answer.actions[0] if len(answer.actions) == 1 and answer.actions[0] in ACTIONS else "other"
    if answer.allowed:
        return action, VerdictWord.ALLOW.value
    failed = answer.code == Code.POLICY_ERROR or answer.malformed  # fail closed: an error, not a policy's "no"
    return action, (VerdictWord.ERROR if failed else VerdictWord.DENY).value


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.reviews = Counter("aicr_admission_reviews", "AdmissionReviews answered, by the action the write adds "
                               "and the verdict (error: a policy or the policy file failed, or a bad review).",
                               ["action", "verdict"], registry=self.registry)
        self.duration = Histogram("aicr_admission_review_duration_seconds",
                                  "From a review's first byte (a new connection's: its accept, TLS handshake "
                                  "included) to its answer.", buckets=BUCKETS, registry=self.registry)
        self.connections = Counter("aicr_admission_connections", "Connections accepted (kept connections are "
                                   "reused: far fewer than reviews).", registry=self.registry)
        self.policy_file_ok = Gauge("aicr_admission_policy_file_ok", "1 when the last read of the policy file "
                                    "succeeded and it is in force; 0 when every decided write is being denied.",
                                    registry=self.registry)
        self.policy_file_age = Gauge("aicr_admission_policy_file_age_seconds", "Seconds since the policy file was "
                                     "last read successfully (+Inf before the first).", registry=self.registry)
        self.events_dropped = Counter("aicr_admission_events_dropped", "Audit Events not sent (queue full, or "
                                      "the API server refused them).", registry=self.registry)
        ProcessCollector(registry=self.registry)
        for action in (*ACTIONS, "other"):  # every series from the start: a rate() needs a zero to begin
            for verdict in (VerdictWord.ALLOW.value, VerdictWord.DENY.value, VerdictWord.ERROR.value):
                self.reviews.labels(action, verdict)
        self.policy_file_ok.set(0)
        self.policy_file_age.set(math.inf)
        self._server: Any = None

    def reviewed(self, action: str, verdict: str, seconds: float) -> None:
        self.reviews.labels(action, verdict).inc()
        self.duration.observe(seconds)

    def watch_policy_file(self, health: Callable[[], tuple[bool, float]]) -> None:
        """Read (ok, age in seconds) at each scrape."""
        self.policy_file_ok.set_function(lambda: 1.0 if health()[0] else 0.0)
        self.policy_file_age.set_function(lambda: health()[1])

    def serve(self, address: str, port: int) -> int:
        """Serve /metrics on address:port (plain HTTP, a daemon thread); the port bound."""
        self._server, _thread = start_http_server(port, address, registry=self.registry)
        return int(self._server.server_port)

    def stop(self) -> None:
        if self._server is not None:
            threading.Thread(target=self._server.shutdown, daemon=True).start()
            self._server.server_close()
