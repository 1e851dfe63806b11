"""`-o wide`: the text output with more columns, for the kinds that have them (kubectl's habit).

A kind's wide layout is registered under `aicr.layouts` as `<Kind>-wide`
(`RolloutList-wide`); a kind without one prints as with `-o text`.
"""
from __future__ import annotations

from aicr_core.plugin import Layout, registered_layout
from aicr_renderers.text import TextRenderer, find_layout

WIDE = "-wide"


class WideRenderer(TextRenderer):
    def layout(self, kind: str) -> Layout:
        return registered_layout(kind + WIDE) or find_layout(kind)
