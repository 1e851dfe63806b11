"""`-o wide`: the text output with more columns, for the kinds that have them (kubectl's habit)."""
from __future__ import annotations

from aicr_renderers.text import Layout, TextRenderer


class WideRenderer(TextRenderer):
    def layout(self, kind: str) -> Layout:
        from aicr_renderers.layouts import WIDE_LAYOUTS

        return WIDE_LAYOUTS.get(kind) or super().layout(kind)
