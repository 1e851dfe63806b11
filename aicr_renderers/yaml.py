"""`-o yaml`: the same document as `-o json`, as YAML."""
from __future__ import annotations

from typing import TextIO

import yaml

from aicr_core.plugin import Renderer, Result


class YamlRenderer(Renderer):
    def render(self, result: Result, out: TextIO) -> None:
        # allow_unicode=False: PyYAML escapes non-printable characters in double quotes.
        out.write(yaml.safe_dump({"kind": result.kind, **result.data}, sort_keys=False,
                                 allow_unicode=False, default_flow_style=False))
