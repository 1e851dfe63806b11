"""An organisation's plugins, installed beside ours: they work, are listed, fail safely, and go away cleanly.

Nothing is installed into the project's virtualenv: each test's plugins live
in a temporary folder on PYTHONPATH with generated dist-info (plugin_env.py).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from testfixtures import compare

from support.harness import Aicr, error_line
from support.plugin_env import EXAMPLES, PluginPath


def test_plugins_lists_ours_and_theirs(site_package: Aicr) -> None:
    aicr = site_package
    proc = aicr("plugins", "-o", "json")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    rows = {(p["group"], p["name"]): p for p in json.loads(proc.stdout)["plugins"]}
    for key in (("aicr.commands", "identity"), ("aicr.renderers", "csv"), ("aicr.policies", "change-ticket")):
        compare((rows[key]["distribution"], rows[key]["version"], rows[key]["status"]),
                expected=("aicr-site-example", "1.0.0", "ok"))
    compare((rows[("aicr.commands", "approve")]["distribution"], rows[("aicr.renderers", "text")]["status"]),
            expected=("kubectl-aicr", "ok"))
    compare((rows[("aicr.write_inputs", "ticket")]["distribution"], rows[("aicr.write_inputs", "ticket")]["status"]),
            expected=("aicr-site-example", "ok"))
    text = aicr("plugins").stdout
    lines = [line.split()[:2] for line in text.splitlines()]
    assert text.startswith("GROUP") and ["aicr.policies", "change-ticket"] in lines, text
    assert ["aicr.write_inputs", "ticket"] in lines, text


def test_a_broken_command_does_not_stop_the_others(broken_package: Aicr) -> None:
    aicr = broken_package
    proc = aicr("help")
    compare(proc.returncode, expected=0)
    warnings = sorted(proc.stderr.splitlines())
    compare(len(warnings), expected=2, suffix=proc.stderr)
    assert warnings[0].startswith("warning: Could not load 'broken-hook': No module named"), warnings
    assert "'broken' from aicr-broken-example 0.0.1 failed to load: ModuleNotFoundError" in warnings[1]
    assert "  approve " in proc.stdout and "  identity " in proc.stdout
    proc = aicr("broken")
    compare(proc.returncode, expected=1)
    assert error_line(proc).startswith("error: [PLUGIN_ERROR] aicr.commands 'broken' from aicr-broken-example")
    proc = aicr("help", "-o", "broken-format")
    compare(proc.returncode, expected=1)
    assert error_line(proc).startswith("error: [PLUGIN_ERROR] aicr.renderers 'broken-format' from aicr-broken-example")
    compare(aicr("help", "-o", "csv").returncode, expected=0)  # the other renderers still work
    listing = {p["name"]: p["status"] for p in json.loads(aicr("plugins", "-o", "json").stdout)["plugins"]}
    compare((listing["broken"], listing["broken-format"], listing["broken-policy"], listing["change-ticket"]),
            expected=("failed", "failed", "failed", "ok"))


def test_a_name_claimed_twice_is_refused(site_package: Aicr, tmp_path: Path) -> None:
    shadow = PluginPath(tmp_path / "shadow").add(
        "aicr-shadow", "0.1", {"aicr.commands": {"approve": "aicr_shadow:Approve"}},
        modules={"aicr_shadow": "from aicr_commands.approve import Approve\n"})
    aicr = site_package.with_env(PYTHONPATH=f"{shadow.root}:{site_package.extra_env['PYTHONPATH']}")
    proc = aicr("approve", "rollout-3f9a1c0d2b7e4a51-1", "--reason", "x")
    compare(proc.returncode, expected=1)
    assert error_line(proc).startswith(
        "error: [PLUGIN_ERROR] aicr.commands 'approve' is claimed by more than one"), proc.stderr
    assert "aicr-shadow 0.1" in proc.stderr and "kubectl-aicr 0.1.0" in proc.stderr


def test_a_real_pip_install_into_a_target_folder(aicr: Aicr, tmp_path: Path) -> None:
    """What a site does (pip install), into a folder of the test's own: the packaging itself works."""
    target = tmp_path / "target"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--target", str(target), str(EXAMPLES / "aicr-site-example")],
                          capture_output=True, text=True, cwd=tmp_path)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    rows = {p["name"]: p for p in json.loads(aicr("plugins", "-o", "json", PYTHONPATH=str(target)).stdout)["plugins"]}
    compare((rows["identity"]["distribution"], rows["identity"]["status"]), expected=("aicr-site-example", "ok"))


BAD_RESULTS = {
    "when": "Result('Clock', {'now': datetime.datetime(2026, 11, 29, 21, 0)})",
    "tuple": "Result('Pair', {'pair': ('a', 'b')})",
    "nan": "Result('Number', {'x': float('nan')})",
    "keys": "Result('Keys', {'by_id': {1: 'one'}})",
    "names": "Result('Named', {}, names=['runtimerollout.operator.aicr.run/r'])",  # a list: docs/plugins.md
    "nothing": "None",
}


@pytest.fixture
def bad_results(aicr: Aicr, tmp_path: Path) -> Aicr:
    """Site commands whose results no renderer can print unchanged, and a renderer that raises half-way."""
    source = ("import datetime\nfrom aicr_core.framework.command import AicrCommand\n"
              "from aicr_core.framework.result import Result\n")
    for name, result in BAD_RESULTS.items():
        source += f"\n\nclass {name.title()}(AicrCommand):\n    def take_action(self, args):\n        return {result}\n"
    source += ("\n\nclass HalfRenderer:\n    def render(self, result, out):\n"
               "        out.write('first line\\n')\n        raise RuntimeError('disk on fire')\n")
    plugins = PluginPath(tmp_path / "bad").add(
        "aicr-bad-results", "0.1",
        {"aicr.commands": {name: f"aicr_bad_results:{name.title()}" for name in BAD_RESULTS},
         "aicr.renderers": {"half": "aicr_bad_results:HalfRenderer"}},
        modules={"aicr_bad_results": source})
    return aicr.with_env(**plugins.env())


@pytest.mark.parametrize("output", ["text", "json", "yaml"])
@pytest.mark.parametrize("command,problem", [
    ("when", "data.now is a datetime.datetime"), ("tuple", "data.pair is a tuple"),
    ("nan", "data.x is nan, which JSON cannot carry"), ("keys", "data.by_id has a key of type int"),
    ("names", "its names are not a tuple of strings"),
])
def test_a_result_that_cannot_be_printed_is_the_plugins_error(bad_results: Aicr, output: str, command: str,
                                                              problem: str) -> None:
    proc = bad_results(command, "-o", output)
    compare((proc.returncode, proc.stdout, proc.stderr), expected=(
        1, "", f"error: [PLUGIN_ERROR] command '{command}' returned a result that cannot be printed: "
               f"{problem}; nothing was printed\n"))


def test_a_command_that_returns_no_result(bad_results: Aicr) -> None:
    proc = bad_results("nothing")
    compare((proc.returncode, proc.stdout, error_line(proc)), expected=(
        1, "", "error: [PLUGIN_ERROR] command 'nothing' returned NoneType, not a Result; nothing was printed"))


def test_a_renderer_that_fails_half_way_prints_nothing(bad_results: Aicr) -> None:
    proc = bad_results("help", "-o", "half")
    compare((proc.returncode, proc.stdout, error_line(proc)), expected=(
        1, "", "error: [PLUGIN_ERROR] output format 'half' failed to print a Help result: "
               "RuntimeError: disk on fire; nothing was printed"))


def test_an_after_hook_sets_the_exit_code(aicr: Aicr, tmp_path: Path) -> None:
    """cliff's CommandHook.after returns the exit code; the output is printed all the same."""
    hooks = PluginPath(tmp_path / "hooks").add(
        "aicr-exit-hook", "0.1", {"aicr.commands.help": {"exit-three": "aicr_exit_hook:ExitThree"}},
        modules={"aicr_exit_hook": """
            from cliff.hooks import CommandHook

            class ExitThree(CommandHook):
                def get_parser(self, parser):
                    return parser

                def get_epilog(self):
                    return ""

                def before(self, parsed_args):
                    return parsed_args

                def after(self, parsed_args, return_code):
                    return 3
        """})
    proc = aicr.with_env(**hooks.env())("help", "-o", "json")
    compare((proc.returncode, json.loads(proc.stdout)["kind"], proc.stderr), expected=(3, "Help", ""))

