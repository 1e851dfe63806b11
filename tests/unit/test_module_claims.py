"""What module comments claim of their imports, checked in a fresh interpreter."""
from __future__ import annotations

import json
import subprocess
import sys

from testfixtures import compare

NEW_MODULES = """import json, sys
before = set(sys.modules)
import {module}
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.split(".")[0] not in sys.stdlib_module_names)))
"""


def imported_by(module: str) -> list[str]:
    """The modules beyond the standard library that importing `module` loads."""
    proc = subprocess.run([sys.executable, "-c", NEW_MODULES.format(module=module)], capture_output=True, text=True)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_the_hook_specs_import_pluggy_and_the_sessions_identity_only() -> None:
    compare([m for m in imported_by("aicr_core.domain.hookspecs") if m.split(".")[0] != "pluggy"],
            expected=["aicr_core", "aicr_core.domain", "aicr_core.domain.hookspecs", "aicr_core.session",
                      "aicr_core.session.identity"])
