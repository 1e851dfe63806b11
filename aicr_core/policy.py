"""Load approval policies one by one and reach a verdict that fails closed.

pluggy's own `load_setuptools_entrypoints` stops at the first broken plugin
and a misspelt hook would be ignored silently; an approval gate must instead
know about every policy that did not load and refuse. So policies are loaded
by this loop, and each plugin's hook is called separately (through
`subset_hook_caller`) so that one that raises is named and the others still
run: the verdict lists every violation, in an order that does not depend on
registration order.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import pluggy

from aicr_core import hookspecs, plugins
from aicr_core.errors import AicrError, Code

hookimpl = pluggy.HookimplMarker("aicr")


@dataclass(frozen=True, order=True)
class Violation:
    """One reason a policy refuses: which policy, and what it says."""

    policy: str
    message: str


Verdict = Union[None, Violation, list[Violation], tuple[Violation, ...]]


@dataclass(frozen=True)
class PolicyContext:
    """What a policy may want beyond the objects: the command and its flags."""

    command: str
    flags: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_args(cls, command: str, args: argparse.Namespace) -> PolicyContext:
        return cls(command, dict(vars(args)))


@dataclass
class PolicySet:
    manager: pluggy.PluginManager
    names: list[str]
    failures: dict[str, str]  # policy name -> why it did not load

    def check(self, hook: str, **kwargs: Any) -> None:
        """Run every implementation of `hook`; refuse on any violation or failure."""
        if self.failures:
            raise AicrError(Code.POLICY_ERROR, "policy plugins failed to load; refusing (fail closed)",
                            [f"{name}: {why}" for name, why in sorted(self.failures.items())])
        violations: list[Violation] = []
        errors: list[str] = []
        for name in self.names:
            plugin = self.manager.get_plugin(name)
            others = [p for p in self.manager.get_plugins() if p is not plugin]
            caller = self.manager.subset_hook_caller(hook, remove_plugins=others)
            try:
                answers = caller(**kwargs)
            except Exception as err:  # noqa: BLE001 - a raising policy refuses, it never crashes us
                errors.append(f"{name}: raised {type(err).__name__}: {err}")
                continue
            for answer in answers:
                found, bad = _violations(answer)
                violations += found
                if bad:
                    errors.append(f"{name}: returned {bad}, not a Violation")
        if errors:
            raise AicrError(Code.POLICY_ERROR, "a policy failed; refusing (fail closed)", sorted(errors))
        if violations:
            raise AicrError(Code.POLICY_DENIED, f"{len(violations)} policy violation(s); nothing was written",
                            [f"{v.policy}: {v.message}" for v in sorted(violations)])


def _violations(answer: Any) -> tuple[list[Violation], str | None]:
    if answer is None:
        return [], None
    items = list(answer) if isinstance(answer, (list, tuple)) else [answer]
    bad = [type(i).__name__ for i in items if not isinstance(i, Violation)]
    return [i for i in items if isinstance(i, Violation)], (", ".join(bad) or None)


def load_policies() -> PolicySet:
    """Every plugin of the `aicr.policies` group, loaded one at a time."""
    manager = pluggy.PluginManager("aicr")
    manager.add_hookspecs(hookspecs)
    group = plugins.PluginGroup(plugins.POLICIES)
    names, failures = [], {}
    for name in group.names():
        try:
            manager.register(group.load(name), name=name)
            names.append(name)
        except AicrError as err:
            failures[name] = err.message
        except Exception as err:  # noqa: BLE001 - pluggy rejects bad hookimpl signatures here
            failures[name] = f"{type(err).__name__}: {err}"
    try:
        manager.check_pending()  # a hook name we do not know: a typo such as aicr_pre_aprove
    except pluggy.PluginValidationError as err:
        failures[manager.get_name(err.plugin) or repr(err.plugin)] = str(err)
    return PolicySet(manager, names, failures)
