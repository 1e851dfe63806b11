"""Everything a site package needs, in one place: `from aicr_core.plugin import ...`.

- commands: `AicrCommand`, `Result`, `CommandHook` (cliff's, to add flags to a command),
  `connect_args` and `Cluster` (the Kubernetes session from the parsed flags, kubectl's
  connection flags included; import `connect_args` inside `take_action`, since it loads
  the Kubernetes client);
- output: `Renderer`, and for text layouts `Layout`, `value`, `table`, `fields`, `safe`, and the
  output options' `listing` (a list's table: no header with --no-headers) and `paint` (colour);
- policies: `hookimpl`, `Violation`, `Allow`, `Verdict`, `PolicyContext`, `Identity`,
  `SettingsModel` and the setting types `GoDuration`, `NonEmptyStr`;
- the operator API's values: `Rollout`, `Step`, `Approval`, `Revocation`,
  `Acknowledgement`, `Override`, `Assessment`, `ComponentVerdict`;
- errors: `AicrError`, `Code`, `UsageError` (a renderer's bad `-o NAME=ARG`, say).

Names are imported on first use (PEP 562), so a policy that imports
`hookimpl` and `Violation` loads pluggy and nothing else, and a command module
imported by `help` for its summary stays as light as before.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cliff.hooks import CommandHook

    from aicr_core.command import AicrCommand
    from aicr_core.errors import AicrError, Code, UsageError
    from aicr_core.hookspecs import Allow, Identity, PolicyContext, Verdict, Violation, hookimpl
    from aicr_core.kube import Cluster, connect_args
    from aicr_core.lines import Layout, fields, listing, table, value
    from aicr_core.operator_api import (
        Acknowledgement,
        Approval,
        Assessment,
        ComponentVerdict,
        Override,
        Revocation,
        Rollout,
        Step,
    )
    from aicr_core.output import paint
    from aicr_core.policy_file import GoDuration, NonEmptyStr, SettingsModel
    from aicr_core.renderer import Renderer
    from aicr_core.result import Result
    from aicr_core.terminal import safe

_WHERE = {
    "AicrCommand": "aicr_core.command",
    "Result": "aicr_core.result",
    "CommandHook": "cliff.hooks",
    "connect_args": "aicr_core.kube",
    "Cluster": "aicr_core.kube",
    "Renderer": "aicr_core.renderer",
    "Layout": "aicr_core.lines",
    "value": "aicr_core.lines",
    "table": "aicr_core.lines",
    "fields": "aicr_core.lines",
    "listing": "aicr_core.lines",
    "paint": "aicr_core.output",
    "safe": "aicr_core.terminal",
    "hookimpl": "aicr_core.hookspecs",
    "Violation": "aicr_core.hookspecs",
    "Allow": "aicr_core.hookspecs",
    "Verdict": "aicr_core.hookspecs",
    "PolicyContext": "aicr_core.hookspecs",
    "Identity": "aicr_core.hookspecs",
    "SettingsModel": "aicr_core.policy_file",
    "GoDuration": "aicr_core.policy_file",
    "NonEmptyStr": "aicr_core.policy_file",
    "Rollout": "aicr_core.operator_api",
    "Step": "aicr_core.operator_api",
    "Approval": "aicr_core.operator_api",
    "Revocation": "aicr_core.operator_api",
    "Acknowledgement": "aicr_core.operator_api",
    "Override": "aicr_core.operator_api",
    "Assessment": "aicr_core.operator_api",
    "ComponentVerdict": "aicr_core.operator_api",
    "AicrError": "aicr_core.errors",
    "Code": "aicr_core.errors",
    "UsageError": "aicr_core.errors",
}

__all__ = ["Acknowledgement", "AicrCommand", "AicrError", "Allow", "Approval", "Assessment", "Cluster",
           "Code", "CommandHook", "ComponentVerdict", "GoDuration", "Identity", "Layout", "NonEmptyStr",
           "Override", "PolicyContext", "Renderer", "Result", "Revocation", "Rollout", "SettingsModel",
           "Step", "UsageError", "Verdict", "Violation", "connect_args", "fields", "hookimpl", "listing", "paint",
           "safe", "table", "value"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return __all__
