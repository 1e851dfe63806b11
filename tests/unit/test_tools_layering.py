"""tools/: the test environment's library imports no other tools module, and nothing imports the command line.

tools/envtest.py is what the tests, the benches and the demo's modules build on; tools/testbed.py is
only its command line. An import of testbed from the library's users (or of a demo module from the
library) would bring the circle back that made `testbed` import itself as a module.
"""
from __future__ import annotations

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def tools_modules() -> set[str]:
    return {p.stem for p in TOOLS.glob("*.py")}


def test_the_library_imports_no_other_tools_module() -> None:
    assert imported_modules(TOOLS / "envtest.py") & tools_modules() == set()


def test_only_the_command_line_is_testbed_and_nothing_imports_it() -> None:
    root = TOOLS.parent
    importers = sorted(str(p.relative_to(root)) for folder in ("tools", "tests", "bench")
                       for p in (root / folder).rglob("*.py") if "testbed" in imported_modules(p))
    assert importers == []
