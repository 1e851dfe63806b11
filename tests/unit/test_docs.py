"""The docs site: every page in mkdocs.yml's nav, and code that cites pages which exist.

`mkdocs build --strict` in .ci/run checks links and anchors; these checks need no
MkDocs, so they also hold where the docs extra is not installed.
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from testfixtures import compare

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CODE = ["aicr_core", "aicr_commands", "aicr_renderers", "aicr_policies", "aicr_admission", "aicr_dashboard", "tools",
        "bench", "examples", "manifests", "tests", ".ci"]


def nav_pages(entry: Any) -> Iterator[str]:
    if isinstance(entry, str):
        yield entry
    elif isinstance(entry, list):
        for item in entry:
            yield from nav_pages(item)
    elif isinstance(entry, dict):
        for item in entry.values():
            yield from nav_pages(item)


def code_files() -> Iterator[Path]:
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                yield path


def test_the_nav_lists_every_page_once() -> None:
    nav = list(nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]))
    compare(sorted(nav), expected=sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")))
    compare(len(nav), expected=len(set(nav)))


def test_code_cites_docs_pages_that_exist_and_no_readme_section() -> None:
    missing, readme = [], []
    for path in code_files():
        text = path.read_text(errors="replace")
        where = str(path.relative_to(ROOT))
        missing += [f"{where}: {page}" for page in re.findall(r"\bdocs/([\w-]+\.md)", text)
                    if not (DOCS / page).is_file()]
        # The file README.md (setup.cfg's long description) and its first commands (the demo) are fine;
        # anything else of it is no reference: the docs pages are.
        if path != Path(__file__).resolve():
            readme += [f"{where}: {line.strip()}" for line in text.splitlines()
                       if "README" in re.sub(r"README(\.md|'s demo|'s first command)", "", line)]
    compare(missing, expected=[])
    compare(readme, expected=[])


def test_the_readme_is_a_front_page_that_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150, len(readme.splitlines())
    first_commands = re.search(r"```shell\n(.*?)```", readme, re.S).group(1)  # type: ignore[union-attr]
    assert "tools/testbed.py demo" in first_commands and "bash .ci/run" in first_commands, first_commands
    compare(sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md"
                   and f"(docs/{p.name})" not in readme), expected=[])


MODULE_REFERENCE = re.compile(r"\baicr_(?:core|commands|renderers|policies|admission)\b"
                              r"(?:[./][A-Za-z_][A-Za-z0-9_*]*)*")


def named_in(reference: str) -> bool:
    """A path (`aicr_core/framework/app.py`, `aicr_renderers/jsonpath*.py`) that exists, or a dotted module
    with attributes (`aicr_core.domain.write_decision.decide`) that imports and has them."""
    if "/" in reference:
        return any(ROOT.glob(reference.rstrip("/.")))
    parts = reference.rstrip(".").split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_the_modules_the_pages_name_exist() -> None:
    """The code moved into rooms (issue 20): a page that names a module by its old path misleads."""
    pages = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
    missing = [f"{page.name}: {ref}" for page in pages for ref in MODULE_REFERENCE.findall(page.read_text())
               if not named_in(ref)]
    compare(missing, expected=[])
