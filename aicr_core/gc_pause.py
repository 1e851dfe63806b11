"""Python's cyclic garbage collector, paused where thousands of objects are made at once.

Decoding a list of 5,000 rollouts, or laying out a table of them, allocates
hundreds of thousands of dicts, lists and strings; every generation-2
collection then walks all of them again, which tripled the decoding time and
the text layout's. None of it forms reference cycles, so reference counting
frees it anyway: pausing the collector costs nothing but that time.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cyclic collector off (it stays as it was if already off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
