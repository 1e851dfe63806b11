"""`-o name`: one line per object the result is about (`Result.names`), as `kubectl get -o name` prints.

The command supplies the references (`runtimerollout.operator.aicr.run/<name>`);
this renderer only writes them. A result about no object prints nothing.
"""
from __future__ import annotations

from typing import TextIO

from aicr_core.plugin import Renderer, Result, safe


class NameRenderer(Renderer):
    separator = ""  # a stream of names is just more lines

    def render(self, result: Result, out: TextIO) -> None:
        for name in result.names:
            out.write(safe(name, allow_newlines=False) + "\n")
