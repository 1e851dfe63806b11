"""What the Kubernetes client logs while one thread loads credentials is that thread's (fleet sessions connect
at once, each on its own thread: another cluster's failure must not fail this one)."""
from __future__ import annotations

import logging
import threading

from testfixtures import compare

from aicr_core import process_owner


def test_client_errors_are_kept_per_thread() -> None:
    loaded, logged, seen = threading.Event(), threading.Event(), {}

    def failing() -> None:
        with process_owner.library_records() as records:
            logging.getLogger().error("exec: missing token or clientCertificateData field")
            logged.set()
            loaded.wait(5)
        seen["failing"] = [r.getMessage() for r in records]

    def healthy() -> None:
        with process_owner.library_records() as records:
            logged.wait(5)
        seen["healthy"] = [r.getMessage() for r in records]
        loaded.set()

    with process_owner.installed(process_owner.ProcessOwner.server("test")):
        threads = [threading.Thread(target=failing), threading.Thread(target=healthy)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    compare(seen, expected={"failing": ["exec: missing token or clientCertificateData field"], "healthy": []})
