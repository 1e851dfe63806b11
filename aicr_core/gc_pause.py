"""Python's cyclic garbage collector, paused where thousands of objects are made at once (the CLI's only).

Decoding a list of 5,000 rollouts, or laying out a table of them, allocates
hundreds of thousands of dicts, lists and strings; every generation-2
collection then walks all of them again, which tripled the decoding time and
the text layout's. None of it forms reference cycles, so reference counting
frees it anyway: pausing the collector costs nothing but that time.

The collector is the process's, so only a process whose owner says so pauses it
(`aicr_core.process_owner`: the command line's); elsewhere (a server, library
use) `paused_gc()` does nothing. The pauses of several threads (a fleet's
clusters each parse their list) overlap: the collector is off from the first
pause's start to the last one's end, and then as it was before the first.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aicr_core import process_owner

_lock = threading.Lock()
_pauses = 0  # the paused_gc() blocks running now, on every thread
_was_enabled = False  # the collector's state when the first of them started


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cyclic collector off, when the process's owner pauses it."""
    global _pauses, _was_enabled
    if not process_owner.current().pauses_gc:
        yield
        return
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()
