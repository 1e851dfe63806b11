"""The end of the process once a command is over: Python's exit, without its teardown.

When a program ends, Python (1) waits for the threads that are not daemons, (2) runs the
`atexit` functions, (3) flushes `sys.stdout` and `sys.stderr`, and then (4) frees every object
of every module one by one. The fourth step changes nothing anyone can see (the operating system
takes the whole memory back at once), yet it is a fifth of a short command's time: `help` spends
about 40 ms of its 210 ms in it, and commands that import the Kubernetes client more
(bench/bench.py; docs/performance.md). So a command ends with the first three steps done as
Python does them, then `os._exit`. mypy ends its runs the same way, for the same reason.

Whatever must happen at exit is an `atexit` function and still runs: the removal of the
process's private temporary folder (the client's key files), the end of credential plugins
still running, logging's last flush. Where the three steps cannot be done as Python would (a
thread that is not a daemon still runs, or an output cannot be flushed), Python's own exit is
used, teardown included, so nothing is lost or reported differently.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_without_teardown(code: int) -> NoReturn:
    """End the process with CODE after the waits, `atexit` functions and flushes of Python's exit."""
    if _threads_python_would_wait_for():
        sys.exit(code)
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)  # CPython's step 2, as its exit calls it
    if run_exit_functions is None:
        sys.exit(code)
    run_exit_functions()  # the list is emptied: a fallback exit below does not run them twice
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(code)  # Python's exit reports it as it always did
    os._exit(code)


def _threads_python_would_wait_for() -> bool:
    main = threading.main_thread()
    return any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate())
