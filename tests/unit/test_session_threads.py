"""What the Kubernetes client logs while one thread loads credentials is that thread's (fleet sessions connect
at once, each on its own thread: another cluster's failure must not fail this one)."""
from __future__ import annotations

import logging
import threading

from testfixtures import compare

from aicr_core.session.kube import _ClientErrors


def test_client_errors_are_kept_per_thread() -> None:
    handler = _ClientErrors.install()
    loaded, logged, seen = threading.Event(), threading.Event(), {}

    def failing() -> None:
        _ClientErrors.install()
        logging.getLogger().error("exec: missing token or clientCertificateData field")
        logged.set()
        loaded.wait(5)
        seen["failing"] = list(handler.messages)

    def healthy() -> None:
        _ClientErrors.install()
        logged.wait(5)
        seen["healthy"] = list(handler.messages)
        loaded.set()

    try:
        threads = [threading.Thread(target=failing), threading.Thread(target=healthy)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    finally:
        logging.getLogger().removeHandler(handler)
    compare(seen, expected={"failing": ["exec: missing token or clientCertificateData field"], "healthy": []})
