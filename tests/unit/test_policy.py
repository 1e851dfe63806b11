"""The policy engine: every policy runs, order never matters, failures and bad files refuse (fail closed)."""
from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pydantic
import pytest
from stevedore import _cache as stevedore_cache
from stevedore.extension import ExtensionManager
from testfixtures import ShouldRaise, compare

from aicr_core.domain import policy_file
from aicr_core.domain.hookspecs import Allow, Identity, PolicyContext, Violation, hookimpl
from aicr_core.domain.policy_engine import LoadedPolicies, PolicyEngine, load_policies, policy_set
from aicr_core.errors import AicrError
from aicr_core.testing import approval, rollout

from support.plugin_env import PluginPath

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
HEAD = "apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\n"


class NeedsTicket:
    @hookimpl
    def aicr_pre_approve(self, approval):  # type: ignore[no-untyped-def]  # a subset of the arguments
        return None if "CHG-" in approval.reason else Violation("ticket", "reason must cite a change ticket")


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


class BadSignature:
    @hookimpl
    def aicr_pre_approve(self, approval, ticket_number):  # type: ignore[no-untyped-def]
        return None


class Configured:
    """A policy that runs only when the policy file lists it, with settings of its own."""

    INACTIVE_UNTIL_CONFIGURED = True

    class SETTINGS_MODEL(policy_file.SettingsModel):
        word: str

    @hookimpl
    def aicr_pre_approve(self, approval, context):  # type: ignore[no-untyped-def]
        if context.settings.word in approval.reason:
            return Allow("configured", "word present", {"word": context.settings.word})
        return Violation("configured", f"the reason must contain {context.settings.word!r}",
                         {"word": context.settings.word})


class SeesSettings:
    """A third-party policy without a settings model: its entry arrives as a plain mapping."""

    seen: list[Any] = []

    @hookimpl
    def aicr_pre_approve(self, context):  # type: ignore[no-untyped-def]
        SeesSettings.seen.append((dict(context.settings), context.command, context.now))
        return None


class WantsAssessment:
    @hookimpl
    def aicr_pre_approve(self, assessment):  # type: ignore[no-untyped-def]
        return None if assessment is None else Violation("wants-assessment", f"got {assessment}")


def engine(plugins: list[tuple[str, object]], text: str | None = None) -> PolicyEngine:
    return PolicyEngine.build(policy_set(dict(plugins)), text, "test.yaml")


def decide(plugins: list[tuple[str, object]] | PolicyEngine, reason: str = "no ticket",
           overrides: tuple[str, ...] = (), text: str | None = None) -> AicrError | None:
    built = plugins if isinstance(plugins, PolicyEngine) else engine(plugins, text)
    decision = built.decision("approve", rollout=rollout(), user=Identity("alice"), overrides=overrides,
                            context=PolicyContext("approve", {}, now=NOW), approval=approval(reason=reason))
    return decision.refusal()


def test_all_violations_are_listed_whatever_the_order() -> None:
    plugins = [("ticket", NeedsTicket()), ("fridays", NoFridays())]
    verdicts = set()
    for order in itertools.permutations(plugins):
        err = decide(list(order))
        assert err is not None
        verdicts.add((err.code, err.message, tuple(err.details)))
    compare(verdicts, expected={("POLICY_DENIED", "3 policy violation(s); nothing was written",
                                 ("fridays: no approvals on Friday", "fridays: really",
                                  "ticket: reason must cite a change ticket"))})


def test_no_violation_passes() -> None:
    compare(decide([("ticket", NeedsTicket())], reason="CHG-1234 window"), expected=None)


class MalformedViolation:
    @hookimpl
    def aicr_pre_approve(self):  # type: ignore[no-untyped-def]
        return Violation(7, "the policy's name is no string")  # type: ignore[arg-type]


class MalformedFacts:
    @hookimpl
    def aicr_pre_approve(self):  # type: ignore[no-untyped-def]
        return Allow("bad", "fine", ["not", "a", "mapping"])  # type: ignore[arg-type]


@pytest.mark.parametrize("bad,detail", [(Raises(), "bad: raised RuntimeError: database down"),
                                        (ReturnsJunk(), "bad: returned str, not a Violation"),
                                        (MalformedViolation(), "bad: returned a Violation whose policy is int, "
                                                               "not a string"),
                                        (MalformedFacts(), "bad: returned an Allow whose facts is list, "
                                                           "not a mapping")])
def test_a_failing_policy_fails_closed_and_the_others_still_run(bad: object, detail: str) -> None:
    built = engine([("bad", bad), ("ticket", NeedsTicket())])
    decision = built.decision("approve", rollout=rollout(), user=Identity("alice"),
                            context=PolicyContext("approve"), approval=approval(reason="no ticket"))
    err = decision.refusal()
    assert err is not None
    compare((err.code, err.details), expected=("POLICY_ERROR", [detail]))
    compare({o.policy: o.verdict for o in decision.outcomes}, expected={"bad": "error", "ticket": "deny"})
    compare(decision.record()["code"], expected="POLICY_ERROR")  # what `policy check -o json` prints


def test_load_failures_refuse_every_decision() -> None:
    loaded = policy_set({})
    loaded.failures["broken"] = "ImportError: no module named site_policy"
    with ShouldRaise(AicrError("POLICY_ERROR", "policy plugins failed to load; refusing (fail closed)",
                               ["broken: ImportError: no module named site_policy"])):
        raise decide(PolicyEngine.build(loaded, None, None)) or AssertionError("allowed")


@pytest.mark.parametrize("plugin,why", [(Misspelt(), "unknown hook 'aicr_pre_aprove'"),
                                        (BadSignature(), "ticket_number")])
def test_a_misspelt_hook_or_a_bad_signature_is_a_load_failure(plugin: object, why: str) -> None:
    loaded = policy_set({"typo": plugin, "ticket": NeedsTicket()})
    compare((sorted(loaded.plugins), list(loaded.failures)), expected=(["ticket"], ["typo"]))
    assert why in loaded.failures["typo"], loaded.failures
    err = decide(PolicyEngine.build(loaded, None, None), reason="CHG-1")
    assert err is not None and err.code == "POLICY_ERROR" and err.details[0].startswith("typo: "), err


@pytest.fixture
def installed_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], LoadedPolicies]:
    """`load_policies()` with one generated policy distribution on an isolated sys.path entry."""
    def load(source: str) -> LoadedPolicies:
        PluginPath(tmp_path / "site").add("site-policy", "1.0", {"aicr.policies": {"site": "site_policy"}},
                                          modules={"site_policy": source})
        monkeypatch.syspath_prepend(str(tmp_path / "site"))  # stevedore's file cache is keyed by sys.path
        monkeypatch.setattr(ExtensionManager, "ENTRY_POINT_CACHE", {})  # its in-process cache is not
        monkeypatch.setattr(stevedore_cache._c, "_dir", str(tmp_path / "cache"))  # no file left in ~/.cache
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nor of entry_points' table
        monkeypatch.delitem(sys.modules, "site_policy", raising=False)
        return load_policies()
    return load


def test_load_policies_refuses_a_misspelt_hook(installed_policy: Callable[[str], LoadedPolicies]) -> None:
    loaded = installed_policy("""
        from aicr_core.plugin import hookimpl

        @hookimpl
        def aicr_pre_aprove(approval):
            return None
    """)
    compare(list(loaded.failures), expected=["site"])
    assert "unknown hook 'aicr_pre_aprove'" in loaded.failures["site"], loaded.failures
    err = decide(PolicyEngine.build(loaded, None, None), reason="CHG-1")
    compare(err.code if err else None, expected="POLICY_ERROR")


def test_load_policies_refuses_a_bad_signature(installed_policy: Callable[[str], LoadedPolicies]) -> None:
    loaded = installed_policy("""
        from aicr_core.plugin import hookimpl

        @hookimpl
        def aicr_pre_approve(approval, colour_of_the_sky):
            return None
    """)
    compare(list(loaded.failures), expected=["site"])
    assert "colour_of_the_sky" in loaded.failures["site"], loaded.failures


def test_load_policies_registers_a_good_one_beside_the_builtin_pack(
        installed_policy: Callable[[str], LoadedPolicies]) -> None:
    loaded = installed_policy("""
        from aicr_core.plugin import Violation, hookimpl

        @hookimpl
        def aicr_pre_approve(approval):
            return Violation("site", "no")
    """)
    compare((sorted(loaded.plugins), loaded.failures), expected=(
        ["approver-groups", "assessment", "change-window", "crd-changes", "four-eyes", "max-approval",
         "reason-format", "site"], {}))
    err = decide(PolicyEngine.build(loaded, None, None), reason="CHG-1")  # the built-ins are inactive
    compare((err.code, err.details) if err else None, expected=("POLICY_DENIED", ["site: no"]))


# -- the policy file -------------------------------------------------------------------------------

def test_an_unconfigured_builtin_style_policy_does_not_run_and_a_configured_one_does() -> None:
    compare(decide([("configured", Configured())]), expected=None)
    built = engine([("configured", Configured())], HEAD + "policies:\n  configured: {word: CHG}\n")
    err = decide(built)
    assert err is not None
    compare(err.details, expected=["configured: the reason must contain 'CHG'"])
    compare(decide(built, reason="CHG-7"), expected=None)


def test_a_third_party_policy_gets_its_entry_as_settings_and_the_decision_time() -> None:
    SeesSettings.seen.clear()
    decide([("site", SeesSettings())], text=HEAD + "policies:\n  site: {mode: warn, window: 3, teams: [a]}\n")
    compare(SeesSettings.seen, expected=[({"window": 3, "teams": ["a"]}, "approve", NOW)])
    SeesSettings.seen.clear()
    decide([("site", SeesSettings())])  # no file: installed means enabled, with no settings
    compare(SeesSettings.seen, expected=[({}, "approve", NOW)])


def test_warn_mode_prints_instead_of_refusing() -> None:
    built = engine([("ticket", NeedsTicket())], HEAD + "policies:\n  ticket: {mode: warn}\n")
    decision = built.decision("approve", rollout=rollout(), user=Identity("alice"), context=PolicyContext("approve"),
                            approval=approval(reason="no ticket"))
    compare((decision.refusal(), decision.warnings(), decision.outcomes[0].verdict),
            expected=(None, ["ticket: reason must cite a change ticket"], "warn"))


def test_overrides() -> None:
    text = HEAD + "policies:\n  ticket: {overridable: true}\n  fridays: {}\n"
    plugins = [("ticket", NeedsTicket()), ("fridays", NoFridays())]
    err = decide(plugins, overrides=("ticket", "fridays"), text=text)
    assert err is not None
    compare((err.code, err.details), expected=("POLICY_DENIED", [
        "fridays: no approvals on Friday", "fridays: really", "--override fridays: the policy is not overridable"]))
    built = engine([("ticket", NeedsTicket())], HEAD + "policies:\n  ticket: {overridable: true}\n")
    decision = built.decision("approve", rollout=rollout(), user=Identity("alice"), overrides=["ticket"],
                            context=PolicyContext("approve"), approval=approval(reason="no ticket"))
    compare((decision.refusal(), decision.overridden, decision.warnings()),
            expected=(None, ["ticket"], ["ticket: reason must cite a change ticket (overridden)"]))
    err = decide(built, reason="CHG-1", overrides=("ticket",))  # it did not refuse
    assert err is not None
    compare((err.code, err.message, err.details), expected=(
        "POLICY_DENIED", "override refused; nothing was written",
        ["--override ticket: the policy did not refuse (allow)"]))
    err = decide(built, reason="CHG-1", overrides=("tikcet",))
    assert err is not None and err.details == ["--override tikcet: no active policy of that name decides approve"], err


def test_a_bad_file_refuses_every_decision_naming_source_and_key_path() -> None:
    text = HEAD + "policies:\n  configured: {word: 3, extra: x}\n  typo-policy: {}\nrequired: [{name: absent}]\n"
    err = decide([("configured", Configured()), ("ticket", NeedsTicket())], reason="CHG-1", text=text)
    assert err is not None
    compare((err.code, err.message, err.details), expected=(
        "POLICY_ERROR",
        "policy file test.yaml does not validate; refusing every approval, revocation and acknowledgement "
        "(fail closed)",
        ["policies.typo-policy: no installed policy plugin is named 'typo-policy' (installed: configured, ticket)",
         "required[0]: required policy plugin 'absent' is not installed",
         "policies.configured.word: Input should be a valid string (got 3)",
         "policies.configured.extra: unknown key"]))


class BuggySettings:
    class SETTINGS_MODEL(policy_file.SettingsModel):
        word: str = ""

        @pydantic.field_validator("word")
        @classmethod
        def _check(cls, word: str) -> str:
            raise TypeError("a bug")  # pydantic turns only ValueError and AssertionError into errors

    @hookimpl
    def aicr_pre_approve(self):  # type: ignore[no-untyped-def]
        return None


def test_a_settings_model_that_raises_refuses_every_decision() -> None:
    err = decide([("buggy", BuggySettings())], text=HEAD + "policies:\n  buggy: {word: x}\n")
    assert err is not None
    compare((err.code, err.details), expected=(
        "POLICY_ERROR", ["policies.buggy: the plugin's SETTINGS_MODEL raised TypeError: a bug (a bug in the plugin)"]))


def test_a_file_nested_too_deeply_is_a_problem_not_a_crash() -> None:
    err = decide([("ticket", NeedsTicket())], reason="CHG-1", text=HEAD + "policies: " + "[" * 5000 + "]" * 5000)
    assert err is not None
    compare((err.code, err.details), expected=("POLICY_ERROR", ["(YAML): nested too deeply (more than 100 levels)"]))


class Versioned(LoadedPolicies):
    def distribution(self, name: str) -> tuple[str, str]:
        return ("aicr-site-example", "1.2.0")


@pytest.mark.parametrize("requirement,problem", [
    ("{name: ticket}", None),
    ("{name: ticket, distribution: aicr_site.example, minVersion: '1.2'}", None),  # names compare normalised
    ("{name: ticket, distribution: other-dist}",
     "required[0]: policy 'ticket' comes from aicr-site-example, not from the required other-dist"),
    ("{name: ticket, minVersion: '1.10'}",
     "required[0]: policy 'ticket' is aicr-site-example 1.2.0; at least 1.10 is required"),
])
def test_required_plugins(requirement: str, problem: str | None) -> None:
    base = policy_set({"ticket": NeedsTicket()})
    loaded = Versioned(base.manager, base.plugins, base.failures)
    built = PolicyEngine.build(loaded, HEAD + f"required: [{requirement}]\n", "test.yaml")
    compare(built.problems, expected=[problem] if problem else [])


def test_the_assessment_is_asked_for_only_by_policies_that_declare_it() -> None:
    compare(engine([("ticket", NeedsTicket())]).wants("approve", "assessment"), expected=False)
    built = engine([("wa", WantsAssessment())])
    compare(built.wants("approve", "assessment"), expected=True)
    # A caller that does not pass it (no policy wanted it, say) passes None: never a missing argument.
    decision = built.decision("approve", rollout=rollout(), user=Identity("alice"), context=PolicyContext("x"),
                            approval=approval())
    compare(decision.refusal(), expected=None)


def test_the_decision_record() -> None:
    built = engine([("configured", Configured()), ("ticket", NeedsTicket())],
                   HEAD + "policies:\n  configured: {word: window, mode: warn}\n")
    decision = built.decision("approve", rollout=rollout(), user=Identity("alice"),
                            context=PolicyContext("approve", now=NOW), approval=approval(reason="CHG-1"))
    compare(decision.record(), expected={
        "action": "approve", "time": "2026-11-30T10:00:00Z",
        "policyFile": {"source": "test.yaml", "found": True, "digest": built.digest},
        "allowed": True, "code": None, "message": None, "errors": [], "overrideProblems": [],
        "policies": [
            {"name": "configured", "mode": "warn", "overridable": False, "verdict": "warn",
             "messages": ["the reason must contain 'window'"], "facts": {"word": "window"}},
            {"name": "ticket", "mode": "enforce", "overridable": False, "verdict": "allow", "messages": [],
             "facts": {}}]})
    assert built.digest is not None and built.digest.startswith("sha256:")


class SwallowsEverything:
    """Reads the reason inside a broad `except Exception`: NotGiven must still reach the engine."""

    @hookimpl
    def aicr_pre_approve(self, approval):  # type: ignore[no-untyped-def]
        try:
            return None if approval.reason.startswith("CHG-") else Violation("swallow", "no ticket")
        except Exception:  # noqa: BLE001 - the point of this plugin
            return None


def test_a_policy_that_reads_a_missing_reason_is_skipped_never_run_on_a_placeholder() -> None:
    from aicr_core.domain.policy_engine import with_field_not_given

    proposed = with_field_not_given(approval(reason=""), "reason", "--reason TEXT")
    compare(proposed.user, expected=approval(reason="").user)  # the other fields read as usual
    policies = engine([("ticket", NeedsTicket()), ("swallow", SwallowsEverything()), ("fridays", NoFridays())])
    decision = policies.decision(
        "approve", rollout=rollout(), user=Identity("alice", ()), context=PolicyContext("approve", now=NOW),
        approval=proposed)
    compare({o.policy: o.verdict for o in decision.outcomes},
            expected={"ticket": "skipped", "swallow": "skipped", "fridays": "deny"})
    compare({p["name"]: p["messages"] for p in decision.record()["policies"]}["ticket"],
            expected=["not checked: it reads the reason, which was not given (pass --reason TEXT)"])
    refusal = decision.refusal()
    assert refusal is not None and refusal.details == ["fridays: no approvals on Friday", "fridays: really"]


def _revoke(policies: PolicyEngine, reason: str | None, overrides: tuple[str, ...] = ()) -> Any:
    """The decision on a revocation with `reason` (None: not given, as `policy check` without --reason)."""
    from aicr_core.domain.policy_engine import with_field_not_given
    from aicr_core.testing import revocation

    proposed = revocation(reason=reason or "")
    if reason is None:
        proposed = with_field_not_given(proposed, "reason", "--reason TEXT")
    return policies.decision("revoke", rollout=rollout(), user=Identity("alice"), overrides=overrides,
                             context=PolicyContext("revoke", now=NOW), revocation=proposed)


def test_a_policy_not_set_up_for_an_action_is_neither_run_nor_listed_for_it() -> None:
    from aicr_policies import four_eyes, reason_format

    text = HEAD + "policies:\n  reason-format:\n    pattern: '^CHG-'\n  four-eyes: {}\n"
    policies = engine([("reason-format", reason_format), ("four-eyes", four_eyes)], text)
    for reason in (None, "x"):  # without --reason, and with one its pattern would refuse
        decision = _revoke(policies, reason)
        compare(decision.record()["policies"], expected=[])  # default actions [approve]; four-eyes revoke: false
        compare(decision.refusal(), expected=None)
    compare(_revoke(policies, "x", ("reason-format",)).override_problems,
            expected=["--override reason-format: no active policy of that name decides revoke"])
    both = engine([("reason-format", reason_format)],
                  HEAD + "policies:\n  reason-format:\n    pattern: '^CHG-'\n    actions: [approve, revoke]\n")
    compare([(o.policy, o.verdict) for o in _revoke(both, "x").outcomes], expected=[("reason-format", "deny")])
    compare([(o.policy, o.verdict) for o in _revoke(both, None).outcomes], expected=[("reason-format", "skipped")])


class CoversBadly:
    class SETTINGS_MODEL(policy_file.SettingsModel):
        def covers(self, action: str) -> bool:
            raise RuntimeError("cannot tell")

    @hookimpl
    def aicr_pre_approve(self):  # type: ignore[no-untyped-def]
        return None


def test_settings_whose_covers_raises_fail_closed() -> None:
    refusal = decide([("covers-badly", CoversBadly())])
    assert refusal is not None
    compare(refusal.details,
            expected=["covers-badly: its settings' covers('approve') raised RuntimeError: cannot tell"])
