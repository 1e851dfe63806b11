"""Policy verdicts: every implementation runs, order never matters, failures refuse (fail closed)."""
from __future__ import annotations

import itertools

import pluggy
import pytest
from testfixtures import ShouldRaise, compare

from aicr_core import hookspecs
from aicr_core.errors import AicrError
from aicr_core.policy import PolicySet, Violation, hookimpl


class NeedsTicket:
    @hookimpl
    def aicr_pre_approve(self, approval):  # type: ignore[no-untyped-def]  # a subset of the arguments
        return None if "CHG-" in approval else Violation("ticket", "reason must cite a change ticket")


class NoFridays:
    @hookimpl
    def aicr_pre_approve(self):  # type: ignore[no-untyped-def]
        return [Violation("fridays", "no approvals on Friday"), Violation("fridays", "really")]


class Raises:
    @hookimpl
    def aicr_pre_approve(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("database down")


class ReturnsJunk:
    @hookimpl
    def aicr_pre_approve(self):  # type: ignore[no-untyped-def]
        return "no"


class Misspelt:
    @hookimpl
    def aicr_pre_aprove(self):  # type: ignore[no-untyped-def]
        return None


def policy_set(plugins: list[tuple[str, object]]) -> PolicySet:
    manager = pluggy.PluginManager("aicr")
    manager.add_hookspecs(hookspecs)
    for name, plugin in plugins:
        manager.register(plugin, name=name)
    return PolicySet(manager, [n for n, _ in plugins], {})


def check(plugins: list[tuple[str, object]], reason: str = "no ticket") -> AicrError | None:
    try:
        policy_set(plugins).check("aicr_pre_approve", rollout=None, approval=reason, user=None, context=None)
    except AicrError as err:
        return err
    return None


def test_all_violations_are_listed_whatever_the_order() -> None:
    plugins = [("ticket", NeedsTicket()), ("fridays", NoFridays())]
    verdicts = set()
    for order in itertools.permutations(plugins):
        err = check(list(order))
        assert err is not None
        verdicts.add((err.code, err.message, tuple(err.details)))
    compare(verdicts, expected={("POLICY_DENIED", "3 policy violation(s); nothing was written",
                                 ("fridays: no approvals on Friday", "fridays: really",
                                  "ticket: reason must cite a change ticket"))})


def test_no_violation_passes() -> None:
    compare(check([("ticket", NeedsTicket())], reason="CHG-1234 window"), expected=None)


@pytest.mark.parametrize("bad,detail", [(Raises(), "bad: raised RuntimeError: database down"),
                                        (ReturnsJunk(), "bad: returned str, not a Violation")])
def test_a_failing_policy_fails_closed_and_the_others_still_run(bad: object, detail: str) -> None:
    err = check([("bad", bad), ("ticket", NeedsTicket())], reason="CHG-1")
    assert err is not None
    compare((err.code, err.details), expected=("POLICY_ERROR", [detail]))


def test_load_failures_refuse_every_check() -> None:
    policies = policy_set([])
    policies.failures["broken"] = "ImportError: no module named site_policy"
    with ShouldRaise(AicrError("POLICY_ERROR", "policy plugins failed to load; refusing (fail closed)",
                               ["broken: ImportError: no module named site_policy"])):
        policies.check("aicr_pre_approve", rollout=None, approval="x", user=None, context=None)


def test_a_misspelt_hook_is_caught_by_check_pending() -> None:
    manager = pluggy.PluginManager("aicr")
    manager.add_hookspecs(hookspecs)
    manager.register(Misspelt(), name="typo")
    with pytest.raises(pluggy.PluginValidationError, match="aicr_pre_aprove"):
        manager.check_pending()
