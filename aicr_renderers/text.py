"""`-o text` (the default): the upstream plugin's plain-text output.

The layout of a result's kind comes from the `aicr.layouts` entry-point group
(`aicr_core.framework.text_layout`; ours are in `layouts.py`, registered like anyone's): this
renderer knows no kind. A kind without a layout, or whose layout fails, is
printed as indented `key: value` lines. Every value from the result is
escaped (`safe`), so a newline or an escape sequence in cluster data cannot
forge a line or steer the terminal; the colour a layout marks (`output.paint`)
is written after that escaping, and only with colour on (`--color`).
"""
from __future__ import annotations

import logging
from typing import TextIO

from aicr_core.plugin import Layout, Renderer, Result, finish, generic, registered_layout


class TextRenderer(Renderer):
    table = True  # a list's layout is a table: a stream of rows (list --watch) shows its header once
    def layout(self, kind: str) -> Layout:
        return find_layout(kind)

    def render(self, result: Result, out: TextIO) -> None:
        data = dict(result.data)
        try:
            lines = self.layout(result.kind)(data)
        except Exception as err:  # noqa: BLE001 - the command has run (maybe written): still show its result
            logging.getLogger("aicr.renderers.text").warning(
                "the text layout of %r failed (%s: %s); showing the result as key: value lines",
                result.kind, type(err).__name__, err)
            lines = generic(data)
        text = "\n".join(lines)
        out.write(finish(text, self.options.color) + ("\n" if text else ""))


def find_layout(kind: str) -> Layout:
    """The layout registered for `kind`, else the generic one; PLUGIN_ERROR if it does not load."""
    return registered_layout(kind) or generic
