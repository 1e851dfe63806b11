"""`-o json`: the result's kind and data, for scripts. Keys are stable."""
from __future__ import annotations

import json
from typing import TextIO

from aicr_core.plugin import Renderer, Result


class JsonRenderer(Renderer):
    separator = ""  # a stream is a sequence of JSON documents (jq reads them one by one)

    def render(self, result: Result, out: TextIO) -> None:
        # ensure_ascii escapes every control character (\u001b), so a terminal never sees one.
        out.write(json.dumps({"kind": result.kind, **result.data}, indent=2, ensure_ascii=True) + "\n")
