"""`kubectl aicr policy test` through the real kubectl and plugin, with KUBECONFIG pointing at no file:
the example suite, a failing expectation, invalid test files, fixtures that cannot be read, selection,
discovery, the JSON and JUnit reports, a third-party policy, completion."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml
from testfixtures import compare

from support.harness import ROOT, Aicr, complete, error_line, words
from support.plugin_env import EXAMPLES, PluginPath

SUITE = EXAMPLES / "policy-tests"
MAIN = "approval-policy.aicr-test.yaml"
CASES = 27 + 3  # the example suite: approval-policy.aicr-test.yaml and trial-policy.aicr-test.yaml


def run(aicr: Aicr, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return aicr("policy", "test", *args, kubeconfig=tmp_path / "no-such-kubeconfig")


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A copy of examples/ (the suite, its fixtures and the policy files it names), to change."""
    shutil.copytree(EXAMPLES / "policy-tests", tmp_path / "examples" / "policy-tests")
    shutil.copy(EXAMPLES / "approval-policy.yaml", tmp_path / "examples" / "approval-policy.yaml")
    return tmp_path / "examples" / "policy-tests"


def edit(path: Path, change: Any) -> None:
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def case(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in doc["cases"] if c["name"] == name)  # type: ignore[no-any-return]


def test_the_example_suite_passes_without_a_kubeconfig(aicr: Aicr, tmp_path: Path) -> None:
    proc = run(aicr, tmp_path, str(SUITE))
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    lines = proc.stdout.splitlines()
    compare(lines[-1], expected=f"{CASES} passed, 0 failed")
    assert all(line.startswith(f"PASS  {SUITE}/") for line in lines[:-1]), proc.stdout
    compare(len(lines), expected=CASES + 1)
    # path order: approval-policy.aicr-test.yaml before trial-policy.aicr-test.yaml; cases in file order
    assert lines[0] == f"PASS  {SUITE}/{MAIN}  approve inside the Wednesday window", lines[0]
    assert lines[-2].startswith(f"PASS  {SUITE}/trial-policy.aicr-test.yaml  "), lines[-2]


def test_a_wrong_expectation_fails_naming_the_case_and_the_difference(aicr: Aicr, tmp_path: Path,
                                                                      suite: Path) -> None:
    def wrong(doc: dict[str, Any]) -> None:
        outside = case(doc, "approve after the window has closed")
        outside["expect"] = {"allowed": True, "policies": {"change-window": "allow", "four-eyes": "allow"}}

    edit(suite / MAIN, wrong)
    proc = run(aicr, tmp_path, "examples/policy-tests")
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    lines = proc.stdout.splitlines()
    at = lines.index(f"FAIL  examples/policy-tests/{MAIN}  approve after the window has closed")
    details = []
    for line in lines[at + 1:]:
        if not line.startswith("    "):
            break
        details.append(line.strip())
    compare(details[:4], expected=[
        "allowed: want true, got false",
        "policies.change-window: want allow, got deny",
        "policies.four-eyes: want allow, got none (the policy did not decide this approve)",
        "decision: [POLICY_DENIED] 1 policy violation(s); nothing was written",
    ])
    assert any(d.startswith("change-window: deny: it is Wed 2027-02-03 18:30 CET, outside every change window")
               and "(now: Wed 2027-02-03 18:30 CET, timeZone: Europe/Berlin" in d for d in details), details
    compare(lines[-1], expected=f"{CASES - 1} passed, 1 failed")


def test_fail_only_and_case_select_what_runs_and_shows(aicr: Aicr, tmp_path: Path, suite: Path) -> None:
    edit(suite / MAIN, lambda doc: case(doc, "a viewer may not approve")["expect"].update(allowed=True, code=None))
    proc = run(aicr, tmp_path, str(suite), "--fail-only")
    compare(proc.returncode, expected=1)
    compare([line for line in proc.stdout.splitlines() if not line.startswith("    ")],
            expected=[f"FAIL  {suite}/{MAIN}  a viewer may not approve", f"{CASES - 1} passed, 1 failed"])
    proc = run(aicr, tmp_path, str(suite), "--case", "*window*")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare([line.split("  ")[-1] for line in proc.stdout.splitlines()], expected=[
        "approve inside the Wednesday window", "approve after the window has closed",
        "approve on Friday night, the window runs into Saturday", "an approval that outlives its window",
        "approve in the year-end freeze, inside window hours", "override the change window (it is overridable)",
        "6 passed, 0 failed"])
    proc = run(aicr, tmp_path, str(suite), "--case", "no such case")
    compare((proc.returncode, proc.stdout, error_line(proc)),
            expected=(2, "", "error: [USAGE] no case matches --case 'no such case'"))


def test_directories_are_searched_for_test_files(aicr: Aicr, tmp_path: Path, suite: Path) -> None:
    (suite / "nested" / "deeper").mkdir(parents=True)
    shutil.move(suite / "trial-policy.aicr-test.yaml", suite / "nested" / "deeper" / "trial-policy.aicr-test.yaml")
    edit(suite / "nested" / "deeper" / "trial-policy.aicr-test.yaml",
         lambda doc: doc.update(policy="../../trial-policy.yaml"))
    (suite / ".hidden").mkdir()
    shutil.copy(suite / MAIN, suite / ".hidden" / MAIN)  # hidden folders (.git, .venv) are not searched
    shutil.copy(suite / MAIN, suite / "not-a-test.yaml")  # nor files not named *.aicr-test.yaml
    proc = run(aicr, tmp_path, "no-such-folder")
    compare((proc.returncode, error_line(proc)),
            expected=(2, "error: [USAGE] no-such-folder: no such file or directory"))
    proc = run(aicr, tmp_path)  # default: . (the test's folder)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    files = sorted({line.split("  ")[1] for line in proc.stdout.splitlines()[:-1]})
    compare(files, expected=[f"examples/policy-tests/{MAIN}",
                             "examples/policy-tests/nested/deeper/trial-policy.aicr-test.yaml"])
    # a test file named directly runs whatever its name
    proc = run(aicr, tmp_path, str(suite / "not-a-test.yaml"), "--case", "nothing to revoke")
    compare((proc.returncode, proc.stdout.splitlines()[-1]), expected=(0, "1 passed, 0 failed"))
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run(aicr, tmp_path, str(empty))
    compare((proc.returncode, error_line(proc)),
            expected=(2, f"error: [USAGE] no test file (*.aicr-test.yaml) under {empty}"))


INVALID = [
    (lambda doc: case(doc, "a viewer may not approve")["expect"].update(allowed="yes"),
     "cases[11].expect.allowed: Input should be a valid boolean (got 'yes')"),
    (lambda doc: case(doc, "a viewer may not approve").update(colour="blue"), "cases[11].colour: unknown key"),
    (lambda doc: case(doc, "a viewer may not approve").pop("at"), "cases[11].at: required key is missing"),
    (lambda doc: case(doc, "a viewer may not approve").pop("reason"),
     "cases[11].reason: required key is missing (approve needs a reason, as --reason for the real command)"),
    (lambda doc: case(doc, "a viewer may not approve").update(name="nothing to revoke"),
     "cases[26].name: duplicate case name 'nothing to revoke' (also cases[11])"),
    (lambda doc: case(doc, "a viewer may not approve").update(expires="1d"),
     'cases[11].expires: time: unknown unit "d" in duration "1d" (a Go duration such as 2h or 90m)'),
    (lambda doc: case(doc, "a viewer may not approve").update(expires="30s"),
     "cases[11].expires: 30s is shorter than the minimum, 1m (as --expires refuses it)"),
    (lambda doc: case(doc, "a viewer may not approve").update(at="2027-02-03T10:00:00"),
     "cases[11].at: '2027-02-03T10:00:00' has no time zone offset (add Z or +01:00)"),
    (lambda doc: case(doc, "a viewer may not approve").update(at="next Tuesday"),
     "cases[11].at: 'next Tuesday' is not an RFC 3339 time such as 2026-12-02T10:00:00+01:00"),
    (lambda doc: case(doc, "a viewer may not approve").update(action="approves"),
     "cases[11].action: Input should be 'approve', 'revoke' or 'acknowledge' (got 'approves')"),
    (lambda doc: case(doc, "a viewer may not approve")["expect"].update(policies={"four-eyes": "denied"}),
     "cases[11].expect.policies.four-eyes: Input should be 'allow', 'deny', 'warn', 'overridden', 'error' or "
     "'skipped' (got 'denied')"),
    (lambda doc: case(doc, "a viewer may not approve")["expect"].update(code="POLICY_DENY"),
     "cases[11].expect.code: 'POLICY_DENY' is no CODE of kubectl aicr (USAGE, "),
    (lambda doc: doc.pop("policy"), "policy: required key is missing"),
    (lambda doc: doc.update(kind="ApprovalPolicy"),
     "kind: Input should be 'ApprovalPolicyTest' (got 'ApprovalPolicy')"),
    (lambda doc: doc["rollouts"].append(7), "rollouts[1]: a file name (relative to the test file) or an object, not "
                                            "a int"),
    (lambda doc: doc["rollouts"].append({"kind": "Pod", "metadata": {"name": "p"}}),
     "rollouts[1].kind: expected RuntimeRollout, got 'Pod'"),
]


@pytest.mark.parametrize(("change", "problem"), INVALID)
def test_an_invalid_test_file_is_a_usage_error_naming_file_and_key_path(aicr: Aicr, tmp_path: Path, suite: Path,
                                                                        change: Any, problem: str) -> None:
    edit(suite / MAIN, change)
    # the valid file first in path order: still nothing runs
    shutil.move(suite / "trial-policy.aicr-test.yaml", suite / "a-trial-policy.aicr-test.yaml")
    proc = run(aicr, tmp_path, "examples/policy-tests")
    compare((proc.returncode, proc.stdout), expected=(2, ""), suffix=proc.stderr)
    line = error_line(proc)
    assert line.startswith(f"error: [USAGE] test file examples/policy-tests/{MAIN}: {problem}"), line
    compare(len(proc.stderr.splitlines()), expected=1, suffix=proc.stderr)  # one line: one problem


def test_every_problem_is_listed_and_yaml_errors_name_the_line(aicr: Aicr, tmp_path: Path) -> None:
    path = tmp_path / "t.aicr-test.yaml"
    path.write_text("apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicyTest\npolicy: p.yaml\ncases:\n"
                    "- {name: a, rollout: r, action: acknowledge, user: u, reason: x, at: '2027-01-01T00:00:00Z',"
                    " expect: {allowed: true}}\n- 3\n")
    proc = run(aicr, tmp_path, str(path))
    compare((proc.returncode, proc.stderr.splitlines()), expected=(2, [
        f"error: [USAGE] test file {path}: cases[0].reason: acknowledge takes no reason (and 1 more problem(s) below)",
        "  cases[1]: a case (a mapping of name, rollout, action, ...), not a int"]))
    path.write_text("cases:\n  - name: a\n    name: b\n")
    proc = run(aicr, tmp_path, str(path))
    compare(error_line(proc),
            expected=f"error: [USAGE] test file {path}: (YAML) line 3, column 5: duplicate key 'name'")


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8))


def test_yaml_aliases_are_bounded_in_test_files_and_fixtures(aicr: Aicr, tmp_path: Path, suite: Path) -> None:
    bomb = tmp_path / "bomb.aicr-test.yaml"
    bomb.write_text(BOMB)  # 10^9 nodes once expanded
    proc = run(aicr, tmp_path, str(bomb))
    refused = "(YAML): aliases expand too far: more than "  # the one bounded loader (session/bounded_yaml)
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    assert error_line(proc).startswith(f"error: [USAGE] test file {bomb}: {refused}"), proc.stderr
    (suite / "fixtures" / "reports.yaml").write_text(BOMB)
    proc = run(aicr, tmp_path, str(suite), "--fail-only")
    compare(proc.returncode, expected=1)
    assert (f"    could not be decided: fixture {suite}/fixtures/reports.yaml does not parse: {refused}"
            ) in proc.stdout, proc.stdout
    compare(proc.stdout.splitlines()[-1], expected="3 passed, 27 failed")  # the other test file still ran


def test_a_missing_fixture_or_policy_file_fails_that_files_cases_only(aicr: Aicr, tmp_path: Path,
                                                                        suite: Path) -> None:
    (suite / "fixtures" / "rollouts.yaml").unlink()
    edit(suite / "trial-policy.aicr-test.yaml", lambda doc: doc.update(policy="gone.yaml"))
    proc = run(aicr, tmp_path, "examples/policy-tests", "-o", "json")
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    report = json.loads(proc.stdout)
    compare((report["passed"], report["failed"]), expected=(0, CASES))
    errors = {(item["file"], item["error"]) for item in report["items"]}
    compare(errors, expected={
        (f"examples/policy-tests/{MAIN}",
         "fixture examples/policy-tests/fixtures/rollouts.yaml: cannot read it: No such file or directory"),
        ("examples/policy-tests/trial-policy.aicr-test.yaml",
         "policy file examples/policy-tests/gone.yaml: cannot read it: No such file or directory")})
    assert all(item["decision"] is None and not item["passed"] for item in report["items"])


def test_a_case_naming_no_fixture_rollout_fails(aicr: Aicr, tmp_path: Path, suite: Path) -> None:
    edit(suite / MAIN, lambda doc: case(doc, "nothing to revoke").update(rollout="rollout-typo"))
    proc = run(aicr, tmp_path, str(suite), "--fail-only")
    compare(proc.returncode, expected=1)
    assert ("    could not be decided: rollout rollout-typo is not among the fixture rollouts (they are: "
            "approved-by-alice, awaiting-ack, blocked-upgrade, crd-upgrade, driver-upgrade, due-soon, finished, "
            "no-report, report-gone, tampered-report)") in proc.stdout, proc.stdout


def test_json_carries_each_cases_policy_decision(aicr: Aicr, tmp_path: Path) -> None:
    proc = run(aicr, tmp_path, str(SUITE), "-o", "json", "--case", "a viewer may not approve")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    report = json.loads(proc.stdout)
    compare({k: report[k] for k in ("kind", "passed", "failed")},
            expected={"kind": "PolicyTestReport", "passed": 1, "failed": 0})
    [item] = report["items"]
    decision = item.pop("decision")
    compare(item, expected={"file": f"{SUITE}/{MAIN}", "case": "a viewer may not approve", "passed": True,
                            "differences": [], "error": None})
    compare({k: decision[k] for k in ("rollout", "user", "action", "time", "allowed", "code")}, expected={
        "rollout": "driver-upgrade", "user": {"username": "victor", "groups": ["aicr:viewers"]}, "action": "approve",
        "time": "2027-02-03T09:00:00Z", "allowed": False, "code": "POLICY_DENIED"})
    compare(decision["policyFile"]["source"], expected=str(EXAMPLES / "approval-policy.yaml"))
    verdicts = {p["name"]: p["verdict"] for p in decision["policies"]}
    compare(verdicts, expected={"approver-groups": "deny", "assessment": "allow", "change-window": "allow",
                                "crd-changes": "allow", "max-approval": "allow", "reason-format": "allow"})
    yaml_report = yaml.safe_load(run(aicr, tmp_path, str(SUITE), "-o", "yaml").stdout)
    compare((yaml_report["kind"], len(yaml_report["items"])), expected=("PolicyTestReport", CASES))


def test_junit_reads_back_with_an_xml_parser(aicr: Aicr, tmp_path: Path, suite: Path) -> None:
    edit(suite / MAIN, lambda doc: case(doc, "a viewer may not approve")["expect"].update(allowed=True, code=None))
    edit(suite / "trial-policy.aicr-test.yaml",
         lambda doc: doc["cases"][0].update(name="<evil> & \x1b[31m \"quoted\""))
    proc = run(aicr, tmp_path, "examples/policy-tests", "-o", "junit")
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    root = ElementTree.fromstring(proc.stdout)
    compare((root.tag, root.get("tests"), root.get("failures")), expected=("testsuites", str(CASES), "1"))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    main, trial = f"examples/policy-tests/{MAIN}", "examples/policy-tests/trial-policy.aicr-test.yaml"
    compare(list(suites), expected=[main, trial])
    compare([(s.get("tests"), s.get("failures")) for s in suites.values()], expected=[("27", "1"), ("3", "0")])
    cases = suites[main].findall("testcase")
    compare({c.get("classname") for c in cases}, expected={main})
    failed = [c for c in cases if c.find("failure") is not None]
    compare([c.get("name") for c in failed], expected=["a viewer may not approve"])
    failure = failed[0].find("failure")
    assert failure is not None and failure.text is not None
    compare(failure.get("message"), expected="allowed: want true, got false")
    assert "approver-groups: deny: to approve needs a member of aicr:approvers" in failure.text, failure.text
    compare(suites[trial].findall("testcase")[0].get("name"), expected='<evil> & \\x1b[31m "quoted"')


def test_junit_is_for_policy_test_only(aicr: Aicr, tmp_path: Path) -> None:
    for args in (("approve", "r1", "--reason", "x"), ("policy", "check", "r1"), ("policy", "validate", "f.yaml"),
                 ("version", "--client")):
        proc = aicr(*args, "-o", "junit", kubeconfig=tmp_path / "none")
        compare((proc.returncode, proc.stdout), expected=(2, ""))
        assert error_line(proc).startswith('error: [USAGE] output format "junit" prints only PolicyTestReport '
                                           "results, not those of "), proc.stderr


def test_a_third_party_policy_is_decided_like_the_built_ins(site_package: Aicr, aicr: Aicr, tmp_path: Path,
                                                            suite: Path) -> None:
    """aicr-site-example's change-ticket (warn mode there), required by the site's policy file."""
    shutil.copy(EXAMPLES / "aicr-site-example" / "approval-policy.yaml", suite / "site-policy.yaml")
    site = suite / "site.aicr-test.yaml"
    base = {"rollout": "driver-upgrade", "action": "approve", "user": "alice", "groups": ["aicr:approvers"],
            "expires": "2h", "at": "2027-02-03T10:00:00+01:00"}
    site.write_text(yaml.safe_dump({
        "apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicyTest", "policy": "site-policy.yaml",
        "rollouts": ["fixtures/rollouts.yaml"], "reports": ["fixtures/reports.yaml"], "cases": [
            {"name": "a ticket in the reason", **base, "reason": "CHG-4711 driver 580",
             "expect": {"allowed": True, "policies": {"change-ticket": "allow", "reason-format": "allow"}}},
            {"name": "an INC ticket is not a change ticket", **base, "reason": "INC-9 driver 580",
             "expect": {"allowed": False, "code": "POLICY_DENIED",
                        "policies": {"change-ticket": "warn", "reason-format": "deny"}}}]}))
    proc = run(site_package, tmp_path, str(site), "-o", "json")
    compare(proc.returncode, expected=0, suffix=proc.stdout + proc.stderr)
    second = json.loads(proc.stdout)["items"][1]["decision"]
    ticket = next(p for p in second["policies"] if p["name"] == "change-ticket")
    compare((ticket["mode"], ticket["messages"], ticket["facts"]), expected=(
        "warn", ["the reason must cite a change ticket (CHG-1234): 'INC-9 driver 580'"],
        {"prefix": "CHG", "ticket": "(none)"}))
    # Without the site package the file requires a plugin that is not installed: every case is refused.
    proc = run(aicr, tmp_path, str(site), "--case", "a ticket*")
    compare(proc.returncode, expected=1)
    compare(proc.stdout.splitlines()[1:3], expected=[
        "    allowed: want true, got false",
        "    policies.change-ticket: want allow, got none (the policy did not decide this approve)"])
    assert f"    decision: [POLICY_ERROR] policy file {suite}/site-policy.yaml does not validate" in proc.stdout, \
        proc.stdout


def test_completion_of_paths_and_case_names(aicr: Aicr, tmp_path: Path, suite: Path) -> None:
    candidates, directive = complete(aicr, "policy", "test", "")
    compare(directive, expected=":0")  # the shell completes files and folders
    candidates, directive = complete(aicr, "policy", "test", "examples", "")
    compare(directive, expected=":0")
    candidates, directive = complete(aicr, "policy", "test", "examples/policy-tests", "--case", "a?viewer")
    compare((words(candidates), directive), expected=(["a?viewer?may?not?approve", "a?viewer?may?not?revoke"], ":4"))
    candidates, _ = complete(aicr, "policy", "test", "--case", "override?the")  # no path: .
    compare(candidates, expected=["override?the?change?window?(it?is?overridable)\toverride the change window "
                                  f"(it is overridable) (examples/policy-tests/{MAIN})"])
    edit(suite / MAIN, lambda doc: case(doc, "nothing to revoke").update(name="nothing-to-revoke"))
    candidates, _ = complete(aicr, "policy", "test", "--case", "nothing-")
    compare(candidates, expected=[f"nothing-to-revoke\texamples/policy-tests/{MAIN}"])
    proc = run(aicr, tmp_path, "--case", "override?the?change?window?(it?is?overridable)")
    compare((proc.returncode, proc.stdout.splitlines()[-1]), expected=(0, "1 passed, 0 failed"))
    candidates, _ = complete(aicr, "policy", "")
    compare(words(candidates), expected=["check", "validate", "test"])


def test_the_suite_in_ci_is_the_documented_command() -> None:
    """.ci/run runs the example suite (through the venv's kubectl-aicr, KUBECONFIG pointing at no file)."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert "kubectl-aicr policy test examples/policy-tests" in ci, ci


def test_colour_as_the_other_commands(aicr: Aicr, tmp_path: Path, suite: Path) -> None:
    edit(suite / MAIN, lambda doc: case(doc, "nothing to revoke")["expect"].update(code="ENDED"))
    proc = run(aicr, tmp_path, str(suite), "--case", "nothing to*", "--color", "always")
    compare(proc.stdout.splitlines()[0], expected=f"\x1b[32mPASS\x1b[0m  {suite}/{MAIN}  nothing to acknowledge")
    compare(proc.stdout.splitlines()[1], expected=f"\x1b[31mFAIL\x1b[0m  {suite}/{MAIN}  nothing to revoke")
    compare(proc.stdout.splitlines()[-1], expected="1 passed, \x1b[31m1 failed\x1b[0m")
    proc = run(aicr, tmp_path, str(suite), "--case", "nothing to*")  # not a terminal: no colour
    assert "\x1b" not in proc.stdout, proc.stdout


def test_junit_names_stay_distinct_and_an_undecided_case_is_an_error(aicr: Aicr, tmp_path: Path,
                                                                     suite: Path) -> None:
    names = ["a\x01", "a\\x01", "b\ufffe", "b\ufffd", "b\\ufffe", "c\td", "c d", "c\\x09d"]

    def rename(doc: dict[str, Any]) -> None:
        for entry, name in zip(doc["cases"], names, strict=False):
            entry["name"] = name

    edit(suite / MAIN, rename)
    edit(suite / "trial-policy.aicr-test.yaml", lambda doc: doc.update(policy="gone.yaml"))
    proc = run(aicr, tmp_path, "examples/policy-tests", "-o", "junit")
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    root = ElementTree.fromstring(proc.stdout)
    main, trial = (s for s in root.findall("testsuite"))
    shown = [c.get("name") for c in main.findall("testcase")][:len(names)]
    compare(len(set(shown)), expected=len(names), suffix=str(shown))
    compare(shown[:3], expected=["a\\x01", "a\\\\x01", "b\\ufffe"])
    compare((root.get("failures"), root.get("errors")), expected=("0", "3"))
    compare((trial.get("failures"), trial.get("errors")), expected=("0", "3"))
    for testcase in trial.findall("testcase"):
        error = testcase.find("error")
        assert error is not None and testcase.find("failure") is None, ElementTree.tostring(testcase)
        assert "policy file examples/policy-tests/gone.yaml: cannot read it" in (error.get("message") or "")


@pytest.mark.parametrize("at", ["'9999-12-31T23:59:59-23:59'", "9999-12-31T23:59:59-23:59",
                                "'0001-01-01T00:00:00+23:59'", "0001-01-01T00:00:00+23:59",
                                "'2026-W49-3T10:00:00Z'", "'2026-12-02T10:00:00,5Z'", "'20261202T100000Z'"])
def test_an_at_out_of_utc_or_of_rfc3339_is_usage_naming_its_key(aicr: Aicr, tmp_path: Path, suite: Path,
                                                                at: str) -> None:
    doc = yaml.safe_load((suite / MAIN).read_text())
    doc["cases"][0]["at"] = "PLACEHOLDER"  # written as given: quoted, or a YAML timestamp
    (suite / MAIN).write_text(yaml.safe_dump(doc, sort_keys=False).replace("PLACEHOLDER", at))
    proc = run(aicr, tmp_path, "examples/policy-tests")
    compare((proc.returncode, proc.stdout), expected=(2, ""), suffix=proc.stderr)
    line = error_line(proc)
    assert line.startswith(f"error: [USAGE] test file examples/policy-tests/{MAIN}: cases[0].at: "), proc.stderr
    assert "INTERNAL" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_space_for_the_t_is_rfc3339s_own(aicr: Aicr, tmp_path: Path, suite: Path) -> None:
    edit(suite / MAIN, lambda doc: doc["cases"][0].update(at="2027-02-03 10:00:00+01:00"))  # was ...T10:00:00...
    proc = run(aicr, tmp_path, "examples/policy-tests", "--case", yaml.safe_load((suite / MAIN).read_text())
               ["cases"][0]["name"])
    compare(proc.returncode, expected=0, suffix=proc.stdout + proc.stderr)


ALWAYS_ON = """
from aicr_core.plugin import Allow, hookimpl

@hookimpl
def aicr_pre_approve(approval, context):
    return Allow("always-on", "installed, not INACTIVE_UNTIL_CONFIGURED: takes part everywhere")
"""


def test_an_installed_policy_the_suites_policy_file_does_not_name_is_reported(aicr: Aicr, tmp_path: Path,
                                                                              suite: Path) -> None:
    """The example suite's policy file names the built-ins only: a site policy installed beside them that does
    not wait to be configured (no INACTIVE_UNTIL_CONFIGURED) decides its approvals too, and the text report and
    JUnit's properties say so. (The example site's change-ticket waits to be configured: it takes no part.)"""
    plugins = PluginPath(tmp_path / "always-on").add(
        "aicr-always-on", "1.0", {"aicr.policies": {"always-on": "aicr_always_on"}},
        modules={"aicr_always_on": ALWAYS_ON})
    site_package = aicr.with_env(**plugins.env())
    proc = run(site_package, tmp_path, "examples/policy-tests/approval-policy.aicr-test.yaml", "--case",
               "approve inside the Wednesday window")
    lines = proc.stdout.splitlines()
    compare(lines[-2], expected="note: examples/policy-tests/approval-policy.aicr-test.yaml: installed policies "
                                "took part that examples/approval-policy.yaml does not name: "
                                "always-on", suffix=proc.stdout)
    junit = run(site_package, tmp_path, "examples/policy-tests/approval-policy.aicr-test.yaml", "--case",
                "approve inside the Wednesday window", "-o", "junit")
    [testsuite] = ElementTree.fromstring(junit.stdout).findall("testsuite")
    compare([(p.get("name"), p.get("value")) for p in testsuite.findall("properties/property")],
            expected=[("aicr.unnamed-policy", "always-on")])
    compare(testsuite[0].tag, expected="properties")
    # The built-ins alone: the policy file names every one that took part; nothing to report.
    alone = run(aicr, tmp_path, "examples/policy-tests/approval-policy.aicr-test.yaml", "-o", "junit")
    compare(ElementTree.fromstring(alone.stdout).findall("testsuite/properties"), expected=[])
    compare(json.loads(run(aicr, tmp_path, str(SUITE), "-o", "json").stdout)["unnamedPolicies"], expected=[])
