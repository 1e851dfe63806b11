"""Everything a site package needs, in one place: `from aicr_core.plugin import ...`.

commands (and the Kubernetes session from the parsed flags: import `connect_args`
inside `take_action`, since it loads the Kubernetes client), output renderers and
text layouts (with the output options' `listing`, a list's table, `paint`, colour, and `finish`,
the text made safe for a terminal; `registered_layout` and `generic`, the layouts of a kind),
kubectl's `jsonpath` and the `clock` (now, and times as the API writes them),
policies and their settings types, the operator API's values, a rollout read as the built-in
commands read and parse it (`read_rollout`: a `Rollout`, or `rollout NAME not found`; `parse_rollout`
of an object read otherwise), and errors (`UsageError`:
a renderer's bad `-o NAME=ARG`, say): `__all__` (built from `_MODULES` below) is the list.

Names are imported on first use (PEP 562), so a policy that imports
`hookimpl` and `Violation` loads pluggy and nothing else, and a command module
imported by `help` for its summary stays as light as before.
"""
# ruff: noqa: F401 - the TYPE_CHECKING imports are the exports; __all__ is built from _MODULES
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, for type checkers (ruff: they are exported through __all__, built below)
    from cliff.hooks import CommandHook

    from aicr_core import clock
    from aicr_core.domain import local_files
    from aicr_core.domain.hookspecs import Allow, Identity, PolicyContext, Verdict, Violation, hookimpl
    from aicr_core.domain.operator_api import (
        Acknowledgement,
        Approval,
        Assessment,
        ComponentVerdict,
        Override,
        Revocation,
        Rollout,
        Step,
        rollout_path,
        rollout_reference,
        rollouts_path,
        short_digest,
    )
    from aicr_core.domain.policy_file import GoDuration, NonEmptyStr, SettingsModel
    from aicr_core.domain.rollouts import parse_rollout, read_rollout
    from aicr_core.errors import AicrError, Code, UsageError, shown, shown_argument
    from aicr_core.framework import jsonpath
    from aicr_core.framework.command import AicrCommand
    from aicr_core.framework.output_options import finish, paint
    from aicr_core.framework.renderer import Renderer
    from aicr_core.framework.result import Result
    from aicr_core.framework.terminal import safe
    from aicr_core.framework.text_layout import Layout, fields, generic, listing, registered_layout, table, value
    from aicr_core.session.kube import KubeSession, connect_args
    from aicr_core.session.kube import KubeSession as Cluster
    from aicr_core.write_inputs import WriteInput

# The one list of what this module offers, by the module that defines it (the imports above are the
# same names for type checkers only; a test checks that they match).
_MODULES: dict[str, tuple[str, ...]] = {
    "aicr_core.framework.command": ("AicrCommand",),
    "aicr_core.framework.result": ("Result",),
    "cliff.hooks": ("CommandHook",),
    "aicr_core.session.kube": ("KubeSession", "connect_args"),
    "aicr_core.framework.renderer": ("Renderer",),
    "aicr_core.framework.text_layout": ("Layout", "fields", "generic", "listing", "registered_layout", "table",
                                        "value"),
    "aicr_core.framework.output_options": ("finish", "paint"),
    "aicr_core.framework": ("jsonpath",),  # kubectl's jsonpath (client-go's dialect), the module
    "aicr_core.domain": ("local_files",),  # the bounded reader of every file flag (a FIFO refused at once)
    "aicr_core": ("clock",),  # now(), parse_time(), format_time(): the module, so tests can patch its clock
    "aicr_core.framework.terminal": ("safe",),
    "aicr_core.domain.hookspecs": ("Allow", "Identity", "PolicyContext", "Verdict", "Violation", "hookimpl"),
    "aicr_core.domain.policy_file": ("GoDuration", "NonEmptyStr", "SettingsModel"),
    "aicr_core.domain.operator_api": ("Acknowledgement", "Approval", "Assessment", "ComponentVerdict", "Override",
                               "Revocation", "Rollout", "Step", "rollout_path", "rollout_reference",
                               "rollouts_path", "short_digest"),
    # A rollout as the built-in commands read and parse it: the `Rollout` policies get (a record naming an
    # action the Action table lacks left out), `rollout NAME not found`.
    "aicr_core.domain.rollouts": ("parse_rollout", "read_rollout"),
    "aicr_core.errors": ("AicrError", "Code", "UsageError", "shown", "shown_argument"),
    # A site's input of a write (a change ticket): the CLI's flag and the page's form field, one declaration.
    "aicr_core.write_inputs": ("WriteInput",),
}
# Names plugin authors know that now have a better one: the alias and the name it stands for (same module).
_ALIASES = {"Cluster": "KubeSession"}  # a session with one API server (kube.KubeSession)
_WHERE = {name: module for module, names in _MODULES.items() for name in names}
_WHERE.update({alias: _WHERE[name] for alias, name in _ALIASES.items()})

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_WHERE[name])
    if name in _ALIASES:
        value = globals()[name] = getattr(module, _ALIASES[name])
        return value
    value = getattr(module, name, None) or importlib.import_module(f"{_WHERE[name]}.{name}")  # a name or a module
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return __all__
