"""The text layout of this package's result kind `Identity` (registered under `aicr.layouts`).

The command returns data and knows nothing of how it is printed; `-o text`
finds this layout by the kind, `-o json`, `-o yaml` and `-o csv` ignore it.
"""
from __future__ import annotations

from typing import Any

from aicr_core.plugin import fields, value


def identity(data: dict[str, Any]) -> list[str]:
    return fields([("Username", value(data.get("username"))),
                   ("Groups", ", ".join(value(g) for g in data.get("groups") or []) or "-")])
