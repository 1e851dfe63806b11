"""The interface of an output format (`-o NAME`), registered under `aicr.renderers`.

A renderer turns a command's `Result` into text on a stream. It knows nothing
of Kubernetes or of any command; it may know the layout of a result `kind`
and must fall back to something sensible for kinds it does not know, since
plugin commands return kinds of their own.
"""
from __future__ import annotations

import abc
from typing import TextIO

from aicr_core.result import Result


class Renderer(abc.ABC):
    # Written between two results of a stream (`describe --watch`) when the output is not a
    # terminal (on a terminal the core redraws instead). YAML's document separator by default.
    separator: str = "---\n"

    @abc.abstractmethod
    def render(self, result: Result, out: TextIO) -> None:
        """Write `result` to `out`."""
