"""`help COMMAND`: one layout for every command, ours and plugins', from docstrings (no cluster needed)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from aicr_commands.help import API_LINE, command_help, parse_doc
from aicr_core import entry_points
from aicr_core.errors import Code
from aicr_core.framework.app import AicrApp
from aicr_core.framework.command import AicrCommand

from support.harness import Aicr
from support.plugin_env import EXAMPLES, PluginPath

BUILT_IN = ["acknowledge", "approve", "describe", "help", "list", "plugins", "reproduce", "revoke", "version", "wait",
            "whoami"]
SECTIONS = ["Usage:", "Flags:", "Global flags:", "Examples:", "Codes (on failure"]


def sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith(" ") and line.endswith(":")
            or line.startswith("Codes (")]


@pytest.mark.parametrize("name", ["approve", "list", "wait", "version"])
def test_the_layout(aicr: Aicr, name: str) -> None:
    proc = aicr("help", name)
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    heads = [h for h in sections(proc.stdout) if h.split(" (")[0] in [s.split(" (")[0] for s in SECTIONS]]
    compare([h.split(" (")[0] for h in heads], expected=[s.split(" (")[0] for s in SECTIONS])
    lines = proc.stdout.splitlines()
    assert lines[1].startswith(f"  kubectl aicr {name} ") and lines[1].endswith("[flags]"), lines[1]
    assert lines[3] and not lines[3].startswith(" "), lines[3]  # what it does, right after the usage
    assert "\n  and, as every command: " in proc.stdout


def test_flags_the_command_uses_and_the_global_ones(aicr: Aicr) -> None:
    out = aicr("help", "approve").stdout
    own, rest = out.split("Flags:\n", 1)[1].split("\nGlobal flags:\n", 1)
    glob = rest.split("\nExamples:\n", 1)[0]
    for flag in ("--dry-run MODE", "--expires DURATION", "--reason TEXT", "--override POLICY", "--policy-file PATH"):
        assert flag in own and flag not in glob, flag
    for flag in ("--kubeconfig PATH", "--context NAME", "-o, --output NAME", "--as USER", "--request-timeout"):
        assert flag in glob and flag not in own, flag
    assert "--dir PATH" not in out  # accepted by every command, used by reproduce only
    out = aicr("help", "list").stdout
    assert "--reason" not in out and "--pending" in out.split("Global flags:")[0]
    assert "--override" not in out and "--policy-file" not in out  # what only the writes and policy read
    assert "--dir PATH" in aicr("help", "reproduce").stdout.split("Global flags:")[0]


def test_every_built_in_command_has_examples_and_known_codes() -> None:
    group = entry_points.PluginGroup(entry_points.COMMANDS)
    for name in BUILT_IN:
        doc = parse_doc(group.load(name).__doc__ or "")
        assert doc.summary and 2 <= len(doc.examples) <= 3, (name, doc.examples)
        assert all(e["command"].startswith("kubectl aicr ") for e in doc.examples), name
        assert all(e["description"] for e in doc.examples), name
        for code in doc.codes:
            if code["code"] != API_LINE:
                Code(code["code"])  # a ValueError names a code that does not exist
            # A meaning a docstring gives says what the code means for this command, not what Code says.
            assert code["meaning"] != _code_meaning(code["code"]), (name, code)
    compare([c for c in Code if not c.meaning], expected=[])  # every code has a meaning to show


def _code_meaning(code: str) -> str | None:
    return Code(code).meaning if code in Code.__members__ else None


def test_the_api_codes_are_named_once_and_listed_for_every_api_command() -> None:
    from aicr_core.errors import API_CODES

    group = entry_points.PluginGroup(entry_points.COMMANDS)
    for name in ("approve", "revoke", "acknowledge", "describe", "list", "wait", "version", "reproduce"):
        docstring = group.load(name).__doc__ or ""
        listed = [c["code"] for c in parse_doc(docstring).codes]
        assert API_LINE in listed, name
        shown = [c["code"] for c in command_help(group.load(name)(_app(), None, cmd_name=name), name)["codes"]]
        assert set(c.value for c in API_CODES) <= set(shown), (name, shown)
        compare(len(shown), expected=len(set(shown)), prefix=name)


def _app():  # type: ignore[no-untyped-def]
    from aicr_core.framework.app import AicrApp

    return AicrApp()


def test_a_plugin_command_gets_the_same_layout(aicr: Aicr, tmp_path: Path) -> None:
    site = PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example")
    proc = aicr.with_env(**site.env())("help", "identity")
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    assert proc.stdout.startswith("Usage:\n  kubectl aicr identity [flags]\n\n"
                                  "Show the username and groups the API server reports for your credentials.\n")
    assert "Examples:\n  # Who am I on the current context?\n  kubectl aicr identity\n" in proc.stdout
    assert "  UNAUTHORIZED  the credentials are not accepted\n" in proc.stdout
    assert proc.stdout.endswith("\nThis command is provided by the aicr-site-example plugin.\n")


def test_command_help_json_keys(aicr: Aicr) -> None:
    doc = json.loads(aicr("help", "wait", "-o", "json").stdout)
    compare(sorted(doc), expected=sorted(["kind", "command", "usage", "summary", "description", "arguments", "flags",
                                          "globalFlags", "examples", "codes", "everyCommandCodes", "providedBy",
                                          "notes"]))
    compare((doc["kind"], doc["usage"], doc["providedBy"]),
            expected=("CommandHelp", "kubectl aicr wait ROLLOUT [flags]", None))
    assert {"code": "UNREACHABLE", "meaning": "the condition can never hold"} in doc["codes"]
    assert {"flag": "    --for CONDITION", "help": "approval, acknowledgement, approved, ended or phase=PHASE "
            "(required)"} in doc["flags"]


def test_a_percent_sign_in_a_plugins_flag_help_is_shown_as_written() -> None:
    class Drain(AicrCommand):
        """Drain some nodes."""

        def add_arguments(self, parser: Any) -> None:
            parser.add_argument("--share", default="10", help="at most 50% of the nodes (default %(default)s%)")
            parser.add_argument("--pool", default="gpu", help="the pool (default %(default)s)")

    app = AicrApp()
    doc = command_help(Drain(app, None, cmd_name="drain"), "drain")
    compare([f["help"] for f in doc["flags"]],
            expected=["the pool (default gpu)", "at most 50% of the nodes (default %(default)s%)"])
    compare([f["flag"] for f in doc["globalFlags"]][:2], expected=["    --kubeconfig PATH", "    --context NAME"])


def test_parse_doc() -> None:
    doc = parse_doc('''One line.

        More about it.

        Examples:
          # First
          kubectl aicr x a
            --long-flag

          # Second
          kubectl aicr x b

        Codes:
          NOT_FOUND   it is not there
          FORBIDDEN
        ''')
    compare(doc.summary, expected="One line.")
    compare(doc.description, expected="More about it.")
    compare(doc.examples, expected=[{"description": "First", "command": "kubectl aicr x a\n  --long-flag"},
                                    {"description": "Second", "command": "kubectl aicr x b"}])
    compare(doc.codes, expected=[{"code": "NOT_FOUND", "meaning": "it is not there"},
                                 {"code": "FORBIDDEN", "meaning": ""}])


def test_help_of_any_command_imports_nothing_heavy() -> None:
    """Of the domain, only the Action table (a list of names and words: approve's help is its Action's)."""
    code = ("import sys, io; from aicr_core.framework.app import AicrApp; out = io.StringIO(); "
            f"codes = [AicrApp(stdout=out, stderr=out).run(['help', n]) for n in {BUILT_IN!r}]; "
            "assert codes == [0] * len(codes), out.getvalue(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'urllib3', 'yaml', 'pluggy') "
            "or m.startswith(('aicr_core.domain', 'aicr_core.session.kube', 'aicr_core.session.watch', "
            "'aicr_core.fleet.fan_out')) "
            "and m not in ('aicr_core.domain', 'aicr_core.domain.actions')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    compare((proc.returncode, proc.stdout.strip()), expected=(0, "[]"), suffix=proc.stderr)
