"""Two rules of docs/architecture.md ("The rooms of the core") that keep the packages readable, checked on
the source as it is:

- one name per module: no two modules (or packages) of one name in our top-level packages (those that
  setup.cfg's `packages.find` includes: a new one is checked as soon as it is listed there), a leading
  `_` not making a name different;
- no dead re-export: a name that a module imports at its top level (an `if TYPE_CHECKING:` or `try:`
  block included) and never uses itself is there only to be imported from it; each one is imported
  from that module by some Python file of the repository (the packages, tests, bench, tools,
  examples: `from MODULE import NAME`, or `MODULE.NAME` through an imported module), named by the
  face's table (`aicr_core/plugin.py`, `_MODULES`) or an entry point of setup.cfg, or listed in the
  module's `__all__`. The face itself, whose imports are its exports, is not concerned.
"""
from __future__ import annotations

import ast
import configparser
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from testfixtures import compare

ROOT = Path(__file__).resolve().parents[2]
FACE = "aicr_core.plugin"
NOT_OURS = {".git", ".venv", "build", "node_modules", "site", "dist"}


def top_level_packages() -> list[str]:
    """The packages setup.cfg's `[options.packages.find] include` lists (`aicr_core*` -> aicr_core)."""
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    patterns = [p.strip() for p in setup["options.packages.find"]["include"].replace("\n", ",").split(",")]
    names = sorted({p.rstrip("*").split(".")[0] for p in patterns if p.strip()})
    assert names and all((ROOT / name / "__init__.py").is_file() for name in names), names
    return names


def module_files() -> dict[str, Path]:
    """Every module of our packages by its dotted name (a package by its own, for its __init__.py)."""
    found = {}
    for package in top_level_packages():
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def test_the_packages_are_found_from_setup_cfg() -> None:
    """The five of today at least (a package added to `include`, the dashboard's, is checked with them)."""
    found = top_level_packages()
    assert {"aicr_core", "aicr_commands", "aicr_renderers", "aicr_policies", "aicr_admission"} <= set(found), found


def test_no_two_modules_share_a_name() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for dotted in module_files():
        *package, name = dotted.split(".")
        if not package or name in ("__main__",):  # the top-level packages, and a package's __main__
            continue
        by_name[name.lstrip("_")].append(dotted)
    compare({name: where for name, where in by_name.items() if len(where) > 1}, expected={})


# -- re-exports -------------------------------------------------------------------------------------

def top_level_imports(tree: ast.Module) -> Iterator[tuple[str, ast.stmt]]:
    """The names bound by the module's own imports (its body, and `if`/`try` blocks at its top)."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for alias in node.names:
                if alias.name != "*":
                    yield alias.asname or alias.name, node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:  # `import a.b` binds `a`, a package, never re-exported by name
                    yield alias.asname, node
        elif isinstance(node, ast.If):
            pending += node.body + node.orelse
        elif isinstance(node, ast.Try):
            pending += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]


def used_names(tree: ast.Module) -> set[str]:
    """The names a module uses: every name it loads, those of its string annotations, its literal __all__."""
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations = [a.annotation for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs,
                                                  node.args.vararg, node.args.kwarg] if a is not None]
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        elif isinstance(node, ast.Call) and node.args and getattr(node.func, "id", getattr(node.func, "attr", "")) \
                == "cast":
            annotations = [node.args[0]]  # typing.cast("Type", value)
        for annotation in annotations:
            for part in ast.walk(annotation) if annotation is not None else ():
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    try:
                        used |= {n.id for n in ast.walk(ast.parse(part.value, mode="eval")) if isinstance(n, ast.Name)}
                    except SyntaxError:
                        pass
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                used |= {e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return used


def re_exports() -> dict[tuple[str, str], int]:
    """(module, name) of every re-export of our packages, with the line that imports it."""
    found = {}
    for dotted, path in module_files().items():
        if dotted == FACE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        used = used_names(tree)
        for name, node in top_level_imports(tree):
            if name not in used:
                found[(dotted, name)] = node.lineno
    return found


def python_files() -> Iterator[Path]:
    for path in ROOT.rglob("*.py"):
        if not NOT_OURS & set(path.relative_to(ROOT).parts):
            yield path


def resolved(node: ast.ImportFrom, path: Path) -> str:
    """The absolute module of a `from ... import` (relative ones from the file's package)."""
    if not node.level:
        return node.module or ""
    package = path.relative_to(ROOT).parent.parts
    base = package[:len(package) - node.level + 1] if node.level > 1 else package
    return ".".join([*base, *([node.module] if node.module else [])])


def dotted_name(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def imported_names(modules: set[str]) -> set[tuple[str, str]]:
    """Every (module, name) some file of the repository imports from one of `modules`."""
    imported: set[tuple[str, str]] = set()
    for path in python_files():
        try:
            tree = ast.parse(path.read_text(), str(path))
        except (SyntaxError, UnicodeDecodeError):
            continue
        aliases: dict[str, str] = {}  # a local name -> the module it is bound to (one map per file: enough here)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = resolved(node, path)
                for alias in node.names:
                    imported.add((module, alias.name))
                    if f"{module}.{alias.name}" in modules:
                        aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            name = dotted_name(node)
            if name is None:
                continue
            head, *rest = name.split(".")
            if head not in aliases:
                continue
            full = ".".join([aliases[head], *rest])
            module, _, attribute = full.rpartition(".")
            if module in modules:
                imported.add((module, attribute))
    face = ast.parse((ROOT / "aicr_core" / "plugin.py").read_text())
    for node in ast.walk(face):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "_MODULES":
            assert node.value is not None
            imported |= {(module, name) for module, names in ast.literal_eval(node.value).items() for name in names}
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    for group in setup["options.entry_points"].values():
        for line in group.splitlines():
            if "=" in line and ":" in line:
                module, _, attribute = line.split("=", 1)[1].strip().partition(":")
                imported.add((module.strip(), attribute.split(".")[0].strip()))
    return imported


def test_no_name_is_re_exported_that_nothing_imports() -> None:
    exports = re_exports()
    imported = imported_names(set(module_files()))
    dead = {f"{module}.{name} (line {line})" for (module, name), line in exports.items()
            if (module, name) not in imported}
    compare(sorted(dead), expected=[])


def test_the_rule_sees_a_dead_re_export_and_a_live_one() -> None:
    """Today's one live re-export (`kubeconfig.merged_context_names`, imported by the contexts' source) is
    found as a re-export and as imported; a made-up one is found and imported by nothing."""
    exports = re_exports()
    assert ("aicr_core.session.kubeconfig", "merged_context_names") in exports, sorted(exports)
    imported = imported_names(set(module_files()))
    assert ("aicr_core.session.kubeconfig", "merged_context_names") in imported
    tree = ast.parse("from aicr_core.session.quoting import first_line, quoted\nfirst_line('x')\n")
    compare([name for name, _ in top_level_imports(tree) if name not in used_names(tree)], expected=["quoted"])
