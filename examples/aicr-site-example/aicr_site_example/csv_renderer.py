"""`-o csv`: one `key,value` row per top-level field (nested values as JSON)."""
from __future__ import annotations

import csv
import json
from typing import TextIO

from aicr_core.plugin import Renderer, Result, safe


class CsvRenderer(Renderer):
    def render(self, result: Result, out: TextIO) -> None:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["kind", result.kind])
        for key, value in result.data.items():
            text = value if isinstance(value, str) else json.dumps(value)
            writer.writerow([key, safe(text, allow_newlines=False)])
