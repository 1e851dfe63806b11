"""The approval policy engine: load policies one by one, set them up from the policy file, decide, fail closed.

Three steps, each usable on its own (the CLI and an admission webhook share them):

1. `load_policies()` imports every `aicr.policies` entry point, one at a time:
   pluggy's own `load_setuptools_entrypoints` stops at the first broken
   plugin and a misspelt hook would be ignored silently, whereas an approval
   gate must know about every policy that did not load and refuse.
2. `PolicyEngine.build(loaded, text, source)` applies the cluster's policy file
   (its text, or None when there is none): which policies are active, in which
   mode, with which settings. It never raises for a bad file or a missing
   required plugin; it remembers the problems and refuses every decision.
3. `engine.decision(action, rollout=..., user=..., context=..., <proposed>=...)`
   calls each active policy's hook separately (through `subset_hook_caller`),
   so one that raises is named and the others still run, and returns a
   `Decision`: one `Outcome` per policy, and `refusal()`, the error the
   action must fail with (or None). The verdict never depends on call order.

No Kubernetes I/O happens here: the caller reads the policy file and the
objects its own way. A write is decided by `aicr_core.domain.write_decision`,
which every caller (the commands, `policy check`, the webhook) uses.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import pluggy

from aicr_core import clock
from aicr_core.domain import hookspecs, policy_file
from aicr_core.domain.actions import ACTIONS, Action
from aicr_core.domain.hookspecs import Allow, PolicyContext, Violation
from aicr_core.entry_points import POLICIES, PluginGroup, PluginInfo, distribution_and_version
from aicr_core.errors import AicrError, Code, VerdictWord, shown, shown_argument

# What a policy plugin may declare (documented in hookspecs.py).
SETTINGS_MODEL = "SETTINGS_MODEL"
INACTIVE_UNTIL_CONFIGURED = "INACTIVE_UNTIL_CONFIGURED"


class NotGiven(BaseException):
    """Raised by a field of a proposed write the caller does not have (`policy check` without --reason).

    A BaseException, so that a policy's own `except Exception` cannot swallow it and decide on a
    placeholder: the engine alone catches it, and the policy is `skipped`, never allowed or refused.
    """

    def __init__(self, field_name: str, flag: str) -> None:
        super().__init__(field_name)
        self.field_name, self.flag = field_name, flag


W = TypeVar("W", bound=tuple)  # type: ignore[type-arg]


def with_field_not_given(write: W, field_name: str, flag: str) -> W:
    """A copy of `write` (a NamedTuple: an Approval, a Revocation) whose `field_name` raises NotGiven when read."""
    def missing(_self: object) -> Any:
        raise NotGiven(field_name, flag)

    cls = type(write)
    partial = type(f"{cls.__name__}Without{field_name.title()}", (cls,),
                   {"__slots__": (), field_name: property(missing)})
    return partial(*write)  # type: ignore[no-any-return]


# -- 1. loading --------------------------------------------------------------------------------

@dataclass
class LoadedPolicies:
    """The installed policy plugins, by entry-point name, and those that failed to load."""

    manager: pluggy.PluginManager
    plugins: dict[str, object]
    failures: dict[str, str]  # policy name -> why it did not load
    infos: dict[str, PluginInfo] = field(default_factory=dict)  # empty for in-memory sets

    def distribution(self, name: str) -> tuple[str, str]:
        """(distribution, version) that provides policy `name`."""
        info = self.infos.get(name)
        return distribution_and_version(info) if info else ("unknown", "")

    def __contains__(self, name: str) -> bool:
        return name in self.plugins or name in self.failures


def _manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager("aicr")
    manager.add_hookspecs(hookspecs)
    for action in ACTIONS.values():  # an action whose hook is not in hookspecs brings its own spec
        if not hasattr(manager.hook, action.hook):
            spec = action.rules.hookspec
            if spec is None:
                raise AicrError(Code.INTERNAL, f"action {action.name}: no hookspec declares {action.hook}")
            manager.add_hookspecs(spec)
    return manager


def load_policies() -> LoadedPolicies:
    """Every plugin of the `aicr.policies` group, loaded one at a time."""
    manager = _manager()
    group = PluginGroup(POLICIES)
    loaded: dict[str, object] = {}
    failures: dict[str, str] = {}
    infos: dict[str, PluginInfo] = {}
    for name in group.names():
        infos[name] = group.infos(name)[0]
        try:
            plugin = group.load(name)
            manager.register(plugin, name=name)
            loaded[name] = plugin
        except AicrError as err:
            failures[name] = err.message
        except Exception as err:  # noqa: BLE001 - pluggy rejects bad hookimpl signatures here
            failures[name] = f"{type(err).__name__}: {err}"
    _check_pending(manager, loaded, failures)
    return LoadedPolicies(manager, loaded, failures, infos)


def policy_set(policies: Mapping[str, object]) -> LoadedPolicies:
    """Policies given as objects rather than entry points (tests, the site authors' kit)."""
    manager = _manager()
    loaded: dict[str, object] = {}
    failures: dict[str, str] = {}
    for name, plugin in policies.items():
        try:
            manager.register(plugin, name=name)
            loaded[name] = plugin
        except Exception as err:  # noqa: BLE001 - as in load_policies
            failures[name] = f"{type(err).__name__}: {err}"
    _check_pending(manager, loaded, failures)
    return LoadedPolicies(manager, loaded, failures)


def _check_pending(manager: pluggy.PluginManager, loaded: dict[str, object], failures: dict[str, str]) -> None:
    """A hook name we do not know (a typo such as aicr_pre_aprove) makes that plugin a failure."""
    while True:
        try:
            manager.check_pending()
            return
        except pluggy.PluginValidationError as err:
            name = manager.get_name(err.plugin) or repr(err.plugin)
            failures[name] = str(err)
            loaded.pop(name, None)
            manager.unregister(err.plugin)


# -- 2. setting up from the policy file -------------------------------------------------------

@dataclass(frozen=True)
class PolicySetup:
    """One installed policy as the policy file sets it up."""

    name: str
    active: bool
    why: str  # in words: configured, installed, or inactive until configured
    mode: str = "enforce"
    overridable: bool = False
    settings: Any = field(default_factory=dict)
    configured: bool = False


class PolicyEngine:
    def __init__(self, loaded: LoadedPolicies, setups: list[PolicySetup], problems: list[str],
                 source: str | None, digest: str | None) -> None:
        self.loaded = loaded
        self.setups = {s.name: s for s in setups}
        self.problems = problems  # the policy file's, each "key.path: what is wrong"
        self.source = source  # where the file is, or was looked for
        self.digest = digest  # sha256 of its text; None when there is no file
        self._callers: dict[tuple[str, str], Any] = {}

    @classmethod
    def build(cls, loaded: LoadedPolicies, text: str | None, source: str | None) -> PolicyEngine:
        """Apply the policy file `text` (None: there is none) read from `source` (for messages)."""
        parsed = policy_file.parse(text, source or "(policy file)") if text is not None else policy_file.ParsedFile()
        problems = list(parsed.problems)
        digest = None if text is None else "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        configured = parsed.policies
        for name in sorted(configured):
            if name not in loaded:
                installed = ", ".join(sorted(loaded.plugins)) or "none"
                problems.append(f"policies.{shown_argument(name)}: no installed policy plugin is named {shown(name)} "
                                f"(installed: {installed})")
        problems += _unmet_requirements(loaded, parsed.required)
        setups = []
        for name, plugin in sorted(loaded.plugins.items()):
            setup, trouble = _setup(name, plugin, configured.get(name), source or "(policy file)")
            setups.append(setup)
            problems += trouble
        return cls(loaded, setups, problems, source, digest)

    def active(self) -> list[PolicySetup]:
        return [s for s in sorted(self.setups.values(), key=lambda s: s.name) if s.active]

    def setup(self, name: str) -> PolicySetup | None:
        return self.setups.get(name)

    def errors(self) -> AicrError | None:
        """Why every decision is refused before any policy runs (load failures, a bad file), if so."""
        failures = [f"{name}: {why}" for name, why in sorted(self.loaded.failures.items())]
        if failures:
            return AicrError(Code.POLICY_ERROR, "policy plugins failed to load; refusing (fail closed)",
                             failures + self.problems)
        if self.problems:
            return policy_file.PolicyFileError(self.source or "(policy file)", self.problems).as_error()
        return None

    def wants(self, action: Action | str, argument: str) -> bool:
        """Does an active policy's hook for `action` (or its name) declare `argument`? (Read costly facts only then.)"""
        hook = getattr(self.loaded.manager.hook, _action(action).hook)
        active = {s.name for s in self.active()}
        return any(argument in impl.argnames for impl in hook.get_hookimpls() if impl.plugin_name in active)

    # -- 3. deciding --------------------------------------------------------------------------

    def decision(self, action: Action | str, *, rollout: Any, user: hookspecs.Identity, context: PolicyContext,
                 overrides: Iterable[str] = (), **proposed: Any) -> Decision:
        """Run every active policy's hook for `action` (or its name); `proposed` is the object about to be written."""
        action = _action(action)
        hook = action.hook
        now = context.now or clock.now()
        arguments = {"rollout": rollout, "user": user, **proposed}
        for name in getattr(self.loaded.manager.hook, hook).spec.argnames:
            arguments.setdefault(name, None)  # arguments a caller does not have (yet): None, never missing
        decision = Decision(action.name, now, self.source, self.digest, self.errors())
        if decision.error is not None:
            return decision  # refused whatever the policies say; running them on broken settings shows nothing
        implementers = {impl.plugin_name for impl in getattr(self.loaded.manager.hook, hook).get_hookimpls()}
        setups = [s for s in self.active() if s.name in implementers]  # a policy with nothing to say is no line
        for setup in setups:
            covered = _covers(setup, action.name)
            if isinstance(covered, Outcome):
                decision.outcomes.append(covered)
                continue
            if not covered:
                continue  # not configured for this action: it decides nothing, so it is no line either
            arguments["context"] = dataclasses.replace(context, settings=setup.settings, now=now)
            decision.outcomes.append(self._run(setup, hook, arguments))
        decision.apply_overrides(sorted(set(overrides)), {s.name: s for s in setups})
        return decision

    def _run(self, setup: PolicySetup, hook: str, arguments: dict[str, Any]) -> Outcome:
        outcome = Outcome(setup.name, setup.mode, setup.overridable)
        caller = self._caller(setup.name, hook)
        try:
            answers = caller(**arguments)
        except NotGiven as missing:
            outcome.verdict = VerdictWord.SKIPPED
            outcome.notes.append(Allow(setup.name, f"not checked: it reads the {missing.field_name}, which was not "
                                                   f"given (pass {missing.flag})"))
            return outcome
        except Exception as err:  # noqa: BLE001 - a raising policy refuses, it never crashes us
            outcome.verdict, outcome.error = VerdictWord.ERROR, f"{setup.name}: raised {type(err).__name__}: {err}"
            return outcome
        junk: list[str] = []
        for answer in answers:
            items = list(answer) if isinstance(answer, (list, tuple)) else [answer]
            for item in items:
                if isinstance(item, (Violation, Allow)) and _malformed(item):
                    kind = type(item).__name__
                    junk.append(f"returned {'an' if kind[0] in 'AEIOU' else 'a'} {kind} whose {_malformed(item)}")
                elif isinstance(item, Violation):
                    outcome.violations.append(item)
                elif isinstance(item, Allow):
                    outcome.notes.append(item)
                elif item is not None:
                    junk.append(f"returned {type(item).__name__}, not a Violation")
        if junk:
            outcome.verdict = VerdictWord.ERROR
            outcome.error = f"{setup.name}: {'; '.join(junk)}"
        elif outcome.violations:
            outcome.verdict = VerdictWord.WARN if setup.mode == "warn" else VerdictWord.DENY
        return outcome

    def _caller(self, name: str, hook: str) -> Callable[..., list[Any]]:
        key = (name, hook)
        if key not in self._callers:
            manager = self.loaded.manager
            plugin = manager.get_plugin(name)
            others = [p for p in manager.get_plugins() if p is not plugin]
            self._callers[key] = manager.subset_hook_caller(hook, remove_plugins=others)
        return self._callers[key]


def _action(action: Action | str) -> Action:
    if isinstance(action, Action):
        return action
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    return ACTIONS[action]


def _covers(setup: PolicySetup, action: str) -> bool | Outcome:
    """Whether the policy's settings say it decides `action` (see SettingsModel.covers); a raising or
    non-boolean answer is the policy's failure (an error Outcome), so the write is refused, never let through."""
    covers = getattr(setup.settings, "covers", None)
    if not callable(covers):
        return True  # settings as a plain mapping, or a model that does not say: every implemented hook
    try:
        answer = covers(action)
    except Exception as err:  # noqa: BLE001 - as in _run: a raising policy refuses
        why = f"raised {type(err).__name__}: {err}"
    else:
        if isinstance(answer, bool):
            return answer
        why = f"returned {type(answer).__name__}, not a bool"
    return Outcome(setup.name, setup.mode, setup.overridable, VerdictWord.ERROR,
                   error=f"{setup.name}: its settings' covers({action!r}) {why}")


def _malformed(item: Violation | Allow) -> str | None:
    """What is wrong with a policy's Violation or Allow, if anything: sorting, printing and the
    decision record need strings and a mapping (a plugin's int there crashed them)."""
    for name, kind, words in (("policy", str, "a string"), ("message", str, "a string"),
                              ("facts", Mapping, "a mapping")):
        found = getattr(item, name)
        if not isinstance(found, kind):
            return f"{name} is {type(found).__name__}, not {words}"
    return None


def _setup(name: str, plugin: object, entry: policy_file.PolicyEntry | None,
           source: str) -> tuple[PolicySetup, list[str]]:
    model = getattr(plugin, SETTINGS_MODEL, None)
    if model is not None and not (isinstance(model, type) and issubclass(model, policy_file.BaseModel)):
        return PolicySetup(name, True, "broken"), [f"policies.{name}: the plugin's {SETTINGS_MODEL} "
                                                  "is not a pydantic model (a bug in the plugin)"]
    if entry is None:
        if getattr(plugin, INACTIVE_UNTIL_CONFIGURED, False):
            return PolicySetup(name, False, "inactive until the policy file configures it"), []
        why = "installed (an installed policy is active; the policy file does not list it)"
        raw: Mapping[str, Any] = {}
        mode, overridable, configured = "enforce", False, False
    else:
        why = f"configured in {source}"
        raw, mode, overridable, configured = entry.settings, entry.mode, entry.overridable, True
    try:
        settings = policy_file.validate_settings(model, raw, source, name) if model else dict(raw)
    except policy_file.PolicyFileError as err:
        return PolicySetup(name, True, why, mode, overridable, None, configured), err.problems
    except Exception as err:  # noqa: BLE001 - pydantic passes on what a plugin's validator raises but ValueError
        return PolicySetup(name, True, why, mode, overridable, None, configured), [
            f"policies.{name}: the plugin's {SETTINGS_MODEL} raised {type(err).__name__}: {err} (a bug in the plugin)"]
    return PolicySetup(name, True, why, mode, overridable, settings, configured), []


def _unmet_requirements(loaded: LoadedPolicies, required: list[policy_file.Requirement]) -> list[str]:
    from packaging.version import InvalidVersion, Version

    problems = []
    for i, need in enumerate(required):
        where = f"required[{i}]"
        if need.name not in loaded:
            problems.append(f"{where}: required policy plugin {shown(need.name)} is not installed")
            continue
        if need.distribution is None and need.min_version is None:
            continue
        distribution, version = loaded.distribution(need.name)
        if need.distribution is not None and _normal(distribution) != _normal(need.distribution):
            problems.append(f"{where}: policy {shown(need.name)} comes from {distribution}, "
                            f"not from the required {need.distribution}")
            continue
        if need.min_version is not None:
            try:
                too_old = Version(version) < Version(need.min_version)
            except InvalidVersion:
                too_old = True
            if too_old:
                problems.append(f"{where}: policy {shown(need.name)} is {distribution} {version or '(no version)'}; "
                                f"at least {need.min_version} is required")
    return problems


def _normal(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


# -- the decision -------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What one policy said."""

    policy: str
    mode: str
    overridable: bool
    verdict: VerdictWord = VerdictWord.ALLOW
    violations: list[Violation] = field(default_factory=list)
    notes: list[Allow] = field(default_factory=list)
    error: str | None = None

    @property
    def messages(self) -> list[str]:
        if self.error:
            return [self.error]
        return [v.message for v in sorted(self.violations)] or [n.message for n in sorted(self.notes) if n.message]

    @property
    def facts(self) -> dict[str, str]:
        facts: dict[str, str] = {}
        items: list[Allow | Violation] = [*self.notes, *self.violations]
        for item in items:
            facts.update({str(k): str(v) for k, v in item.facts.items()})
        return facts


@dataclass
class Decision:
    action: str
    now: datetime
    source: str | None
    digest: str | None
    error: AicrError | None  # the engine's own (load failures, a bad policy file)
    outcomes: list[Outcome] = field(default_factory=list)
    override_problems: list[str] = field(default_factory=list)
    # Set when no policy ran because the user may read no policy file and may not write at all: the API
    # server refuses the write whatever the policies say. A command lets it say so (its message is the
    # one a user knows); `policy check` reports this refusal.
    server_refuses: AicrError | None = None
    # The command's own refusal (ENDED, ALREADY_APPROVED, NOT_APPROVED, ...): no policy ran, none was read.
    own_refusal: AicrError | None = None

    @classmethod
    def refused_by_command(cls, action: str, now: datetime, refusal: AicrError) -> Decision:
        return cls(action, now, None, None, None, own_refusal=refusal)

    def apply_overrides(self, names: list[str], setups: Mapping[str, PolicySetup]) -> None:
        by_name = {o.policy: o for o in self.outcomes}
        for name in names:
            outcome = by_name.get(name)
            if outcome is None:
                self.override_problems.append(f"--override {shown_argument(name)}: no active policy of that name "
                                              f"decides {self.action}")
            elif outcome.verdict == VerdictWord.DENY and setups[name].overridable:
                outcome.verdict = VerdictWord.OVERRIDDEN
            elif outcome.verdict == VerdictWord.DENY:
                self.override_problems.append(f"--override {shown_argument(name)}: the policy is not overridable")
            else:
                self.override_problems.append(f"--override {shown_argument(name)}: the policy did not refuse "
                                              f"({outcome.verdict})")

    @property
    def overridden(self) -> list[str]:
        return [o.policy for o in self.outcomes if o.verdict == VerdictWord.OVERRIDDEN]

    def refusal(self) -> AicrError | None:
        """The error the action fails with, or None when it may go ahead."""
        if self.own_refusal is not None:
            return self.own_refusal
        if self.error is not None:
            return self.error
        failed = sorted(o.error for o in self.outcomes if o.verdict == VerdictWord.ERROR and o.error)
        if failed:
            return AicrError(Code.POLICY_ERROR, "a policy failed; refusing (fail closed)", failed)
        denials = sorted(v for o in self.outcomes if o.verdict == VerdictWord.DENY for v in o.violations)
        if denials:
            return AicrError(Code.POLICY_DENIED, f"{len(denials)} policy violation(s); nothing was written",
                             [f"{v.policy}: {v.message}" for v in denials] + self.override_problems)
        if self.override_problems:
            return AicrError(Code.POLICY_DENIED, "override refused; nothing was written", self.override_problems)
        return None

    def warnings(self) -> list[str]:
        """`<policy>: <message>` of each violation that did not refuse (warn mode, or overridden)."""
        lines = []
        for o in self.outcomes:
            if o.verdict in (VerdictWord.WARN, VerdictWord.OVERRIDDEN):
                suffix = " (overridden)" if o.verdict == VerdictWord.OVERRIDDEN else ""
                lines += [f"{v.policy}: {v.message}{suffix}" for v in sorted(o.violations)]
        return lines

    def record(self) -> dict[str, Any]:
        """The decision as plain data (`policy check -o json`), for a site to archive."""
        if self.own_refusal is not None:  # no policy file was read, no policy ran
            return {"action": self.action, "time": clock.format_time(self.now), "policyFile": None,
                    "allowed": False, "code": str(self.own_refusal.code), "message": self.own_refusal.message,
                    "errors": list(self.own_refusal.details), "overrideProblems": [], "policies": []}
        refusal = self.refusal() or self.server_refuses
        return {
            "action": self.action,
            "time": clock.format_time(self.now),
            "policyFile": {"source": self.source, "found": self.digest is not None, "digest": self.digest},
            "allowed": refusal is None,
            "code": str(refusal.code) if refusal else None,
            "message": refusal.message if refusal else None,
            "errors": list(self.error.details) if self.error else [],
            "overrideProblems": list(self.override_problems),
            "policies": [{"name": o.policy, "mode": o.mode, "overridable": o.overridable, "verdict": o.verdict.value,
                          "messages": o.messages, "facts": o.facts} for o in self.outcomes],
        }
