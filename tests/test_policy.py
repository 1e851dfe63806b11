"""Policy verdicts: every implementation runs, order never matters, failures refuse (fail closed)."""
from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path

import pluggy
import pytest
from stevedore import _cache as stevedore_cache
from stevedore.extension import ExtensionManager
from testfixtures import ShouldRaise, compare

from aicr_core import hookspecs
from aicr_core.errors import AicrError
from aicr_core.policy import PolicySet, Violation, hookimpl, load_policies

from plugin_env import PluginPath


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


@pytest.fixture
def installed_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], PolicySet]:
    """`load_policies()` with one generated policy distribution on an isolated sys.path entry."""
    def load(source: str) -> PolicySet:
        PluginPath(tmp_path / "site").add("site-policy", "1.0", {"aicr.policies": {"site": "site_policy"}},
                                          modules={"site_policy": source})
        monkeypatch.syspath_prepend(str(tmp_path / "site"))  # stevedore's file cache is keyed by sys.path
        monkeypatch.setattr(ExtensionManager, "ENTRY_POINT_CACHE", {})  # its in-process cache is not
        monkeypatch.setattr(stevedore_cache._c, "_dir", str(tmp_path / "cache"))  # no file left in ~/.cache
        monkeypatch.delitem(sys.modules, "site_policy", raising=False)
        return load_policies()
    return load


def test_load_policies_refuses_a_misspelt_hook(installed_policy: Callable[[str], PolicySet]) -> None:
    policies = installed_policy("""
        from aicr_core.policy import hookimpl

        @hookimpl
        def aicr_pre_aprove(approval):
            return None
    """)
    compare(list(policies.failures), expected=["site"])
    assert "unknown hook 'aicr_pre_aprove'" in policies.failures["site"], policies.failures
    with ShouldRaise(AicrError) as caught:
        policies.check("aicr_pre_approve", rollout=None, approval="x", user=None, context=None)
    compare(caught.raised.code, expected="POLICY_ERROR")


def test_load_policies_refuses_a_bad_signature(installed_policy: Callable[[str], PolicySet]) -> None:
    policies = installed_policy("""
        from aicr_core.policy import hookimpl

        @hookimpl
        def aicr_pre_approve(approval, colour_of_the_sky):
            return None
    """)
    compare(list(policies.failures), expected=["site"])
    assert "colour_of_the_sky" in policies.failures["site"], policies.failures


def test_load_policies_registers_a_good_one(installed_policy: Callable[[str], PolicySet]) -> None:
    policies = installed_policy("""
        from aicr_core.policy import Violation, hookimpl

        @hookimpl
        def aicr_pre_approve(approval):
            return Violation("site", "no")
    """)
    compare((policies.names, policies.failures), expected=(["site"], {}))
    with ShouldRaise(AicrError) as caught:
        policies.check("aicr_pre_approve", rollout=None, approval="x", user=None, context=None)
    compare((caught.raised.code, caught.raised.details), expected=("POLICY_DENIED", ["site: no"]))
