"""What a site author gets: one module to import from, light policies, a pytest kit, text layouts, documented CODEs."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from testfixtures import compare

from aicr_core import plugin
from aicr_core.errors import Code

from support.harness import Aicr, error_line
from support.plugin_env import EXAMPLES, PluginPath

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("kubernetes", "urllib3", "cliff", "stevedore", "yaml")


def imported_after(code: str, **env: str) -> list[str]:
    """The heavy modules loaded by running `code` in a fresh interpreter."""
    probe = f"import sys\n{code}\nprint(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env or None)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.replace("'", '"'))  # type: ignore[no-any-return]


@pytest.mark.parametrize("module", ["aicr_policies.change_window", "aicr_policies.max_approval",
                                    "aicr_policies.reason_format", "aicr_policies.groups",
                                    "aicr_policies.assessment", "aicr_policies.four_eyes"])
def test_a_builtin_policy_imports_nothing_heavy(module: str) -> None:
    compare(imported_after(f"import {module}"), expected=[])


def test_the_site_policy_imports_nothing_heavy(tmp_path: Path) -> None:
    env = PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example").env()
    import os
    compare(imported_after("import aicr_site_example.policy", **{**os.environ, **env}), expected=[])


def test_every_name_of_the_plugin_module_resolves_and_loads_only_what_it_needs() -> None:
    for name in plugin.__all__:
        assert getattr(plugin, name) is not None, name
    compare(imported_after("from aicr_core.plugin import hookimpl, Violation, Allow, PolicyContext, Identity"),
            expected=[])
    compare(sorted(plugin.__all__), expected=sorted(plugin._WHERE))
    with pytest.raises(AttributeError):
        plugin.NoSuchName  # noqa: B018


def test_the_plugin_guide_names_every_export_of_the_plugin_module() -> None:
    guide = (ROOT / "docs" / "plugins.md").read_text().split("# Writing plugins", 1)[1].split("```", 1)[0]
    compare([name for name in sorted(plugin.__all__) if f"`{name}`" not in guide], expected=[])


def test_the_plugin_module_lists_each_name_once_and_its_typing_imports_match() -> None:
    """`_MODULES` is the one list; the TYPE_CHECKING imports (for type checkers) name exactly the same."""
    import ast

    tree = ast.parse((ROOT / "aicr_core" / "plugin.py").read_text())
    typing_block = next(node for node in tree.body
                        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    imported = {(node.module, alias.name) for node in ast.walk(typing_block)
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    compare(sorted(imported), expected=sorted((m, n) for m, names in plugin._MODULES.items() for n in names))
    compare(len(plugin.__all__), expected=len(set(plugin.__all__)))


def test_no_compatibility_shims_are_left() -> None:
    """0.1.0 has no one to stay compatible with: a name lives where it is defined, and in aicr_core.plugin."""
    from aicr_core.domain import policy_engine as policy
    from aicr_core.session import kube

    for module, name in ((kube, "Identity"), (policy, "hookimpl"), (policy, "Identity"), (policy, "Verdict")):
        assert name not in vars(module), (module.__name__, name)


def test_the_site_example_imports_only_from_the_plugin_module() -> None:
    for source in (EXAMPLES / "aicr-site-example" / "aicr_site_example").glob("*.py"):
        modules = re.findall(r"^\s*(?:from|import) (aicr_core[.\w]*|cliff[.\w]*)", source.read_text(), re.M)
        assert set(modules) <= {"aicr_core.plugin"}, (source.name, modules)


def test_the_docs_code_table_is_the_codes_with_their_meanings() -> None:
    """The table of codes (docs/usage.md, or wherever the docs keep it) says of each code what `Code.meaning` says."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    tables = [rows for page in pages
              if (rows := re.findall(r"^\| `([A-Z_]+)` \| (\d+) \| (.*) \|$", page.read_text(), re.M))
              and any(code == "POLICY_DENIED" for code, _, _ in rows)]
    compare(len(tables), expected=1)  # one table, wherever the docs keep it
    (rows,) = tables
    compare(sorted(code for code, _, _ in rows), expected=sorted(c.value for c in Code))
    compare({code: (int(exit), meaning.replace("`", "").replace("\\|", "|")) for code, exit, meaning in rows},
            expected={c.value: (c.exit_code, c.meaning) for c in Code})


def test_the_site_examples_own_tests_pass_with_the_kit(tmp_path: Path) -> None:
    """As a site runs them: its package installed, kubectl-aicr's pytest plugin found through its entry point."""
    import os
    env = {**os.environ, **PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example").env()}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           str(EXAMPLES / "aicr-site-example" / "tests")],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    compare(proc.returncode, expected=0, suffix=proc.stdout + proc.stderr)
    assert re.search(r"\b10 passed\b", proc.stdout), proc.stdout  # every test of the example, none skipped


def test_the_example_policy_file_is_valid_out_of_the_box(aicr: Aicr) -> None:
    """A newcomer's `policy validate examples/approval-policy.yaml` passes with nothing else installed."""
    proc = aicr("policy", "validate", str(EXAMPLES / "approval-policy.yaml"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    assert proc.stdout.startswith(f"policy file {EXAMPLES / 'approval-policy.yaml'} is valid (sha256:"), proc.stdout
    doc = json.loads(aicr("policy", "validate", str(EXAMPLES / "approval-policy.yaml"), "-o", "json").stdout)
    compare(sorted(p["name"] for p in doc["policies"] if p["active"]),
            expected=["approver-groups", "assessment", "change-window", "crd-changes", "four-eyes", "max-approval",
                      "reason-format"])


def test_the_site_example_policy_file_is_the_example_plus_its_policy(aicr: Aicr, tmp_path: Path) -> None:
    site_file = EXAMPLES / "aicr-site-example" / "approval-policy.yaml"
    site = aicr.with_env(**PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example").env())
    doc = json.loads(site("policy", "validate", str(site_file), "-o", "json").stdout)
    compare(sorted(p["name"] for p in doc["policies"] if p["active"]),
            expected=["approver-groups", "assessment", "change-ticket", "change-window", "crd-changes",
                      "four-eyes", "max-approval", "reason-format"])
    # Without the site package, its required plugin is missing: the same file refuses every write.
    proc = aicr("policy", "validate", str(site_file))
    compare(proc.returncode, expected=1)
    assert "  required[0]: required policy plugin 'change-ticket' is not installed" in proc.stderr, proc.stderr
    # The two stay one file apart: the site's adds its policy and the requirement, nothing else.
    theirs = yaml.safe_load(site_file.read_text())
    ours = yaml.safe_load((EXAMPLES / "approval-policy.yaml").read_text())
    compare((theirs.pop("required"), theirs["policies"].pop("change-ticket")),
            expected=([{"name": "change-ticket", "distribution": "aicr-site-example", "minVersion": "1.0"}],
                      {"mode": "warn", "prefix": "CHG"}))
    compare(theirs, expected=ours)


def test_the_policies_page_shows_the_example_policy_file() -> None:
    page = (ROOT / "docs" / "policies.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", page.split("\n## A complete file", 1)[1], re.S)
    compare(blocks[0], expected=(EXAMPLES / "approval-policy.yaml").read_text())


def test_policy_validate_reports_each_problem_with_its_key_path(aicr: Aicr, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\nsurprise: 1\npolicies:\n"
                   "  change-window:\n    timeZone: Mars/Olympus\n    windows:\n"
                   "      - {days: [Mon, Funday], from: '09:00', to: 17:00}\n")
    proc = aicr("policy", "validate", str(bad))
    compare((proc.returncode, proc.stdout), expected=(1, ""))
    compare(proc.stderr.splitlines(), expected=[
        f"error: [POLICY_ERROR] policy file {bad} does not validate; refusing every approval, revocation and "
        "acknowledgement (fail closed)",
        "  surprise: unknown key",
        "  policies.change-window.timeZone: 'Mars/Olympus' is not an IANA time zone (such as Europe/Berlin or UTC)",
        "  policies.change-window.windows[0].days[1]: 'Funday' is not a day: use Mon, Tue, Wed, Thu, Fri, Sat, Sun",
        "  policies.change-window.windows[0].to: 1020 is a number: quote times (\"17:00\"), since YAML reads an "
        "unquoted 17:00 as the number 1020"])
    proc = aicr("policy", "validate", str(tmp_path / "absent.yaml"))
    compare((proc.returncode, error_line(proc)), expected=(
        2, f"error: [USAGE] --policy-file {tmp_path / 'absent.yaml'}: cannot read it: No such file or directory"))


def test_a_write_refuses_a_local_policy_file(aicr: Aicr, tmp_path: Path) -> None:
    """Trying a file is for `policy check` and dry runs: a real write follows the cluster's file, or a local one
    could stand in for it."""
    local = tmp_path / "p.yaml"
    local.write_text("apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\n")
    for command in (["approve", "--reason", "r"], ["revoke", "--reason", "r"], ["acknowledge"]):
        proc = aicr(*command, "rollout-3f9a1c0d2b7e4a51-1", "--policy-file", str(local))
        compare((proc.returncode, error_line(proc)), expected=(
            2, "error: [USAGE] --policy-file only tries a policy file: use it with --dry-run=client|server or policy "
               f"check; a real {command[0]} always follows the cluster's policy file"))


def test_a_kind_without_a_layout_or_with_a_broken_one_is_still_printed(aicr: Aicr, tmp_path: Path) -> None:
    layouts = PluginPath(tmp_path / "layouts").add(
        "aicr-layout-test", "0.1",
        {"aicr.commands": {"facts": "aicr_layout_test:Facts", "nolayout": "aicr_layout_test:NoLayout"},
         "aicr.layouts": {"Facts": "aicr_layout_test:facts"}},
        modules={"aicr_layout_test": '''
            from aicr_core.plugin import AicrCommand, Result

            class Facts(AicrCommand):
                """Facts."""
                def take_action(self, args):
                    return Result("Facts", {"answer": 42})

            class NoLayout(AicrCommand):
                """No layout."""
                def take_action(self, args):
                    return Result("Unlaid", {"answer": 42, "nested": {"a": "b"}})

            def facts(data):
                raise RuntimeError("layout bug")
            '''})
    run = aicr.with_env(**layouts.env())
    proc = run("nolayout")
    compare((proc.returncode, proc.stdout, proc.stderr), expected=(0, "answer: 42\nnested:\n  a: b\n", ""))
    proc = run("facts")
    compare((proc.returncode, proc.stdout, proc.stderr), expected=(
        0, "answer: 42\n", "warning: the text layout of 'Facts' failed (RuntimeError: layout bug); showing the "
                           "result as key: value lines\n"))

