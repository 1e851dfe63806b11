"""A site's write inputs (aicr_core.write_inputs): the declaration's checks, the values' bounds, the reason shaped,
and the same input from a page's form (aicr_core.framework.write_form) as from the command line.

The site example is "installed" on an isolated sys.path entry (support.plugin_env), as a site installs it.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stevedore import _cache as stevedore_cache
from stevedore.extension import ExtensionManager
from testfixtures import ShouldRaise, compare

from aicr_commands._action_command import ActionCommand
from aicr_core import entry_points
from aicr_core.domain.actions import ACKNOWLEDGE, APPROVE, REVOKE
from aicr_core.domain.write_flags import write_request
from aicr_core.errors import AicrError, Code, UsageError
from aicr_core.framework.app import AicrApp
from aicr_core.framework.result import Result
from aicr_core.framework.write_form import argv_from_form, command_parser, flags_from_form
from aicr_core.testing import approval, policy_verdict
from aicr_core.write_inputs import WriteInput, apply_inputs, declarations, declared_inputs

from support.plugin_env import EXAMPLES, PluginPath

R = "rollout-3f9a1c0d2b7e4a51-1"


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PluginPath]:
    """An isolated sys.path entry holding the site example; a test may add more distributions to it."""
    path = PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example")
    monkeypatch.syspath_prepend(str(path.root))  # the table of entry points is keyed by sys.path
    monkeypatch.setattr(ExtensionManager, "ENTRY_POINT_CACHE", {})  # stevedore's in-process cache is not
    monkeypatch.setattr(stevedore_cache._c, "_dir", str(tmp_path / "cache"))  # no file left in ~/.cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nor of entry_points' table
    entry_points.refresh()
    yield path
    entry_points.refresh()  # a distribution added after the first look-up: the next test reads the table again
    for name in [m for m in sys.modules if m.startswith(("aicr_site_example", "site_input"))]:
        del sys.modules[name]


def declare(plugins: PluginPath, source: str, name: str = "site-input") -> None:
    """One more distribution declaring `INPUT = <source>` under aicr.write_inputs."""
    module = name.replace("-", "_") + ("_" + str(len(list(plugins.root.glob("*.dist-info")))))
    plugins.add(name + module[-1], "0.1", {"aicr.write_inputs": {module: f"{module}:INPUT"}},
                modules={module: f"from aicr_core.plugin import WriteInput\nINPUT = {source}\n"})
    entry_points.refresh()


# -- the declaration ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("item", "problem"), [
    (WriteInput("ticket", "the change ticket"), None),
    (WriteInput("change-ticket", "x", actions=("approve", "revoke", "acknowledge"), required=True), None),
    (WriteInput("Ticket", "x"), "name 'Ticket' is not [a-z][a-z0-9-]* of at most 40 characters"),
    (WriteInput("-ticket", "x"), "name '-ticket' is not [a-z][a-z0-9-]* of at most 40 characters"),
    (WriteInput("t" * 41, "x"), f"name {'t' * 41!r} is not [a-z][a-z0-9-]* of at most 40 characters"),
    *[(WriteInput(name, "x"), f"name {name!r} is reserved (csrf, expires, override, reason are the write's own)")
      for name in ("csrf", "reason", "expires", "override")],
    (WriteInput("ticket", " "), "help must be a non-empty text"),
    (WriteInput("ticket", "x", actions=("approve", "delete")),
     "actions must be a non-empty tuple of approve, revoke, acknowledge: ('approve', 'delete')"),
    (WriteInput("ticket", "x", actions=()), "actions must be a non-empty tuple of approve, revoke, acknowledge: ()"),
    (WriteInput("ticket", "x", actions="approve"),  # type: ignore[arg-type]
     "actions must be a non-empty tuple of approve, revoke, acknowledge: 'approve'"),
    (WriteInput("ticket", "x", required="yes"), "required must be True or False"),  # type: ignore[arg-type]
    (WriteInput("ticket", "x", max_length=0), "max_length must be a positive int: 0"),
])
def test_a_declaration_is_checked(item: WriteInput, problem: str | None) -> None:
    compare(item.problem(), expected=problem)


def test_the_site_example_declares_its_ticket(plugins: PluginPath) -> None:
    compare([(i.name, i.dest, i.flag, i.metavar, i.required, i.max_length) for i in declared_inputs("approve")],
            expected=[("ticket", "ticket", "--ticket", "ID", False, 64)])
    compare((declared_inputs("revoke"), declared_inputs("acknowledge")), expected=([], []))
    compare(declarations()[0].plugin, expected="aicr.write_inputs 'ticket' from aicr-site-example 1.0.0")


def test_a_bad_declaration_is_the_plugins_error(plugins: PluginPath) -> None:
    declare(plugins, "WriteInput('override', help='x')")
    with ShouldRaise(AicrError(Code.PLUGIN_ERROR, "aicr.write_inputs 'site_input_1' from site-input1 0.1: name "
                                                   "'override' is reserved (csrf, expires, override, reason are "
                                                   "the write's own)")):
        declared_inputs("approve")


def test_something_else_than_a_write_input_is_refused(plugins: PluginPath) -> None:
    declare(plugins, "{'name': 'ticket'}")
    with ShouldRaise(AicrError(Code.PLUGIN_ERROR, "aicr.write_inputs 'site_input_1' from site-input1 0.1: is a "
                                                   "dict, not a WriteInput (aicr_core.plugin.WriteInput)")):
        declarations()


def test_a_name_declared_twice_is_refused(plugins: PluginPath) -> None:
    declare(plugins, "WriteInput('ticket', help='mine', actions=('revoke',))")
    with ShouldRaise(AicrError(Code.PLUGIN_ERROR, "write input 'ticket' is declared twice: by aicr.write_inputs "
                                                   "'site_input_1' from site-input1 0.1 and by aicr.write_inputs "
                                                   "'ticket' from aicr-site-example 1.0.0; uninstall one of them")):
        declared_inputs("revoke")


def test_a_name_the_command_already_has_is_refused(plugins: PluginPath) -> None:
    declare(plugins, "WriteInput('plan', help='x')")  # approve --plan DIGEST: the fleet's flag
    with ShouldRaise(AicrError(Code.PLUGIN_ERROR, "aicr.write_inputs 'site_input_1' from site-input1 0.1: --plan is "
                                                   "a flag approve already has; a write input needs a name of its "
                                                   "own")):
        command_parser("approve")
    declare(plugins, "WriteInput('rollout', help='x', actions=('revoke',))")  # no flag, but the positional's dest
    with ShouldRaise(AicrError(Code.PLUGIN_ERROR, "aicr.write_inputs 'site_input_2' from site-input2 0.1: rollout "
                                                   "is an argument's name revoke already has; a write input needs a "
                                                   "name of its own")):
        command_parser("revoke")


# -- the values ----------------------------------------------------------------------------------------

def test_the_reason_is_shaped_unless_it_cites_the_ticket(plugins: PluginPath) -> None:
    compare(apply_inputs("approve", {"ticket": "CHG-7"}, "window"), expected=({"ticket": "CHG-7"}, "window (CHG-7)"))
    compare(apply_inputs("approve", {"ticket": "CHG-7"}, "CHG-7 window")[1], expected="CHG-7 window")
    compare(apply_inputs("approve", {"ticket": ""}, "window"), expected=({"ticket": None}, "window"))
    compare(apply_inputs("approve", {}, "window"), expected=({"ticket": None}, "window"))  # the key is always there
    compare(apply_inputs("revoke", {"ticket": "CHG-7"}, "stop"), expected=({"ticket": "CHG-7"}, "stop"))  # not its


@pytest.mark.parametrize(("value", "message"), [
    ("C" * 65, "--ticket is 65 characters; at most 64 are allowed"),
    ("CHG-1\n", "--ticket 'CHG-1\\n' holds a control character"),
    ("CHG\u202e-1", "--ticket 'CHG\\u202e-1' holds a control character"),
    ("CHG-\udcff", "--ticket holds bytes that are not UTF-8 text; check the terminal's encoding"),
    (["CHG-1"], "--ticket takes one text value, not list"),
])
def test_a_value_past_its_bounds_is_a_usage_error(plugins: PluginPath, value: Any, message: str) -> None:
    with ShouldRaise(UsageError(message)):
        apply_inputs("approve", {"ticket": value}, "window")


def test_a_required_input_left_out_is_a_usage_error(plugins: PluginPath) -> None:
    declare(plugins, "WriteInput('change-id', help='the change', metavar='CHG', actions=('acknowledge',), "
                     "required=True)")
    with ShouldRaise(UsageError("acknowledge needs --change-id CHG: the change")):
        apply_inputs("acknowledge", {}, None)
    compare(apply_inputs("acknowledge", {}, None, checking=True), expected=({"change_id": None}, None))
    compare(write_request({"change_id": "C-1"}, ACKNOWLEDGE, R).flags["change_id"], expected="C-1")
    with ShouldRaise(UsageError("acknowledge needs --change-id CHG: the change")):
        write_request({"change_id": None}, ACKNOWLEDGE, R)


def test_write_request_records_the_shaped_reason_within_its_bound(plugins: PluginPath) -> None:
    request = write_request({"reason": "window", "ticket": "CHG-9"}, APPROVE, R)
    compare((request.reason, request.flags["ticket"]), expected=("window (CHG-9)", "CHG-9"))
    with ShouldRaise(UsageError("--reason is 1025 characters; at most 1024 are allowed")):
        write_request({"reason": "w" * 1017, "ticket": "CHG-9"}, APPROVE, R)  # 1017 + " (CHG-9)"
    compare(write_request({"reason": "stop"}, REVOKE, R).reason, expected="stop")


# -- the page's form and the command line: the same input -----------------------------------------------

def cli_flags(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The flags `kubectl aicr ARGV` hands its write command (the app's own parse: flags before the name too)."""
    seen: list[argparse.Namespace] = []

    def take_action(self: ActionCommand, args: argparse.Namespace) -> Result:
        seen.append(args)
        return Result("Nothing", {})

    monkeypatch.setattr(ActionCommand, "take_action", take_action)
    monkeypatch.setattr(AicrApp, "show", lambda self, output, result: None)
    compare(AicrApp().run(argv), expected=0)
    return vars(seen[0])


@pytest.mark.parametrize(("form", "cli"), [
    ({"reason": ["window"], "expires": ["2h"], "ticket": ["CHG-77"], "csrf": ["t0ken"]},
     ["--ticket", "CHG-77", "approve", R, "--reason", "window", "--expires", "2h"]),
    ({"reason": ["window"], "ticket": [""], "override": ["change-ticket", "x"]},
     ["approve", R, "--override", "change-ticket", "--reason", "window", "--override", "x"]),
    ({"reason": ["CHG-5 window"]}, ["approve", "--reason", "CHG-5 window", R]),
])
def test_the_form_gives_what_the_command_line_gives(plugins: PluginPath, monkeypatch: pytest.MonkeyPatch,
                                                    form: dict[str, list[str]], cli: list[str]) -> None:
    argv, from_page = flags_from_form("approve", R, form)
    from_cli = cli_flags(cli, monkeypatch)
    compare(from_page, expected=from_cli)
    assert "ticket" in from_page and "dry_run" in from_page and "plan" in from_page  # every key of the parser
    page_request, cli_request = write_request(from_page, APPROVE, R), write_request(from_cli, APPROVE, R)
    compare(page_request, expected=cli_request)

    def verdict(request: Any) -> tuple[str, str | None, list[str], dict[str, str]]:
        from aicr_site_example import policy

        decided = policy_verdict(policy, "approve", approval=approval(reason=request.reason), flags=request.flags)
        return decided.verdict, decided.code, decided.messages, decided.facts

    compare(verdict(page_request), expected=verdict(cli_request))
    # and the argv is one the command line runs to the same flags
    compare(cli_flags(argv, monkeypatch), expected=from_cli)


def test_the_page_and_the_command_line_get_the_same_decision(plugins: PluginPath) -> None:
    """With the ticket: allowed by it, and the reason names it; without: denied, as from the command line."""
    from aicr_site_example import policy

    def decide(form: dict[str, list[str]]) -> tuple[str, str | None, str, str]:
        request = write_request(flags_from_form("approve", R, form)[1], APPROVE, R)
        decided = policy_verdict(policy, approval=approval(reason=request.reason or ""), flags=request.flags)
        return decided.verdict, decided.code, decided.facts["ticket"], request.reason or ""

    compare(decide({"reason": ["window"], "ticket": ["CHG-77"]}), expected=("allow", None, "CHG-77", "window (CHG-77)"))
    compare(decide({"reason": ["window"]}), expected=("deny", "POLICY_DENIED", "(none)", "window"))


def test_the_argv_holds_only_the_fields_given(plugins: PluginPath) -> None:
    compare(argv_from_form("approve", R, {"ticket": ["CHG-1"], "override": ["a", "b"], "reason": ["r"],
                                         "expires": [""]}),
            expected=["approve", R, "--reason", "r", "--override", "a", "--override", "b", "--ticket", "CHG-1"])
    compare(argv_from_form("revoke", R, {}), expected=["revoke", R])


@pytest.mark.parametrize(("action", "rollout", "form", "message"), [
    ("approve", R, {"reason": ["r"], "dry_run": ["none"]},
     "approve has no field 'dry_run' (its fields: reason, expires, override, ticket)"),
    ("revoke", R, {"reason": ["r"], "ticket": ["CHG-1"]},
     "revoke has no field 'ticket' (its fields: reason, expires, override)"),
    ("approve", R, {"reason": ["a", "b"]}, "the field reason is given 2 times; once at most"),
    ("approve", R, {"override": ["p"] * 33}, "the field override is given 33 times; at most 32"),
    ("approve", R, {"reason": "r"}, "the field reason takes a list of texts"),
    ("approve", "--yes", {"reason": ["r"]}, "approve needs a rollout's name, not '--yes'"),
    ("approve", "", {"reason": ["r"]}, "approve needs a rollout's name, not ''"),
    ("approve", "Not_A_Name", {"reason": ["r"]}, "argument ROLLOUT: 'Not_A_Name' is not a valid rollout name"),
    ("approve", R, {"expires": ["1d"]}, "argument --expires: time: unknown unit \"d\" in duration \"1d\""),
    ("delete", R, {}, "no write command 'delete' is installed"),
])
def test_a_form_the_command_line_would_refuse_is_refused(plugins: PluginPath, action: str, rollout: str,
                                                         form: dict[str, Any], message: str) -> None:
    with ShouldRaise(UsageError(message)):
        flags_from_form(action, rollout, form)


def test_the_fleet_form_takes_the_input_too(plugins: PluginPath) -> None:
    """approve --plan DIGEST --contexts ...: the fleet's one request carries the ticket and the shaped reason."""
    from aicr_core.fleet import flags as fleet

    digest = "sha256:" + "a" * 64
    args = command_parser("approve").parse_args(["--plan", digest, "--contexts", "a,b", "--reason", "window",
                                                 "--ticket", "CHG-3", "--yes"])
    request = fleet.request_of(args, APPROVE)
    compare((request.reason, request.flags["ticket"], request.flags["contexts"]),
            expected=("window (CHG-3)", "CHG-3", None))
