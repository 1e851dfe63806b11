"""Whether a wheel's top-level module would shadow a name the program imports (`plugins install` refuses it).

A plugin folder is appended to sys.path, so a module there never replaces one
the program can already import, but it is imported wherever such a name is
missing: a plugin's `brotli.py` would run in every cluster command, named by
no plugin, because urllib3 imports brotli when present. So a top-level module
of a wheel may be neither importable without the folder (the standard
library, what the program carries, another plugin folder's) nor one of the
names the program's dependencies import when present.
"""
from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Iterable

# Top-level names the program's dependencies import when present (try: import X / except ImportError), found
# with an AST walk of the dependency closure (docs/plugins.md): a plugin's brotli.py would run in every
# cluster command, unlisted. With sitecustomize/usercustomize, which Python itself imports at start.
OPTIONAL_IMPORTS = frozenset({
    "AppKit", "Foundation", "IPython", "OpenSSL", "PIL", "PyQt5", "_winreg", "aiodns", "backports", "blinker",
    "brotli", "brotlicffi", "chardet", "compression", "cryptography", "ctags", "cython", "django", "dotenv",
    "email_validator", "google", "h2", "ipywidgets", "jwt", "kubernetes_validate", "linkify_it", "nt",
    "pyodide", "python_socks", "qtpy", "simplejson", "sitecustomize", "socks", "toml", "tomli", "traitlets",
    "usercustomize", "uvloop", "winreg", "wsaccel", "zstandard"})


def shadowing(top_level: Iterable[str], search: list[str]) -> str | None:
    """Why one of a wheel's top-level modules would shadow a name the program (or another plugin folder)
    can import, or one the program's dependencies import when present; None when none does."""
    for module in sorted(top_level):
        if module in OPTIONAL_IMPORTS:
            return (f"its top-level module {module!r} would be imported by the program itself (an optional "
                    "import of its dependencies): refused")
        if importable(module, search):
            return f"its top-level module {module!r} would shadow (or be shadowed by) the importable {module!r}"
    return None


def importable(module: str, search: list[str]) -> bool:
    if module in sys.builtin_module_names or module in sys.stdlib_module_names or module in sys.modules:
        return True
    for finder in sys.meta_path:
        try:
            if finder is importlib.machinery.PathFinder or getattr(finder, "__name__", "") == "PathFinder":
                spec = importlib.machinery.PathFinder.find_spec(module, search)
            else:
                find_spec = getattr(finder, "find_spec", None)
                spec = find_spec(module, None) if find_spec is not None else None
        except Exception:  # noqa: BLE001,S112 - a finder that cannot answer says nothing
            continue
        if spec is not None:
            return True
    return False
