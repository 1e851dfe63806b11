"""A listing item in the CLI's words: the cells of its row in `kubectl aicr list -o wide`, by column.

The page says a rollout's phase, approval, deadline (absolute in UTC and the time left) and
assessment as the CLI says them: the RolloutList-wide layout, found by entry point (`aicr.layouts`)
as the text renderer finds it, never imported, renders the item's row; its cells are cut at the
header's columns (the colour marks taken off first: they take no width). Where no layout is
registered the page has none of these words and shows the document's values.
"""
from __future__ import annotations

import re
from typing import Any

WIDE = "RolloutList-wide"
_COLUMN = re.compile(r"\S+")


def row_words(item: dict[str, Any]) -> dict[str, str]:
    """{column: the CLI's text} of the item's row (NAME, PHASE, APPROVAL, DEADLINE, WAITING-ON, ASSESSMENT, ...)."""
    from aicr_core.errors import AicrError
    from aicr_core.framework.output_options import strip_marks
    from aicr_core.framework.text_layout import registered_layout

    try:
        layout = registered_layout(WIDE)
    except AicrError:  # a broken layout plugin: the page's own words
        return {}
    if layout is None:
        return {}
    lines = [strip_marks(line) for line in layout({"items": [{k: v for k, v in item.items() if k != "context"}]})]
    if len(lines) < 2:
        return {}
    header, row = lines[0], lines[1]
    columns = [(m.start(), m.group()) for m in _COLUMN.finditer(header)]
    cells = {}
    for i, (start, name) in enumerate(columns):
        end = columns[i + 1][0] if i + 1 < len(columns) else None
        cells[name] = row[start:end].strip()
    return cells
