"""kubectl's output habits through the real `kubectl aicr` on the real control plane (issue 17).

-o jsonpath / jsonpath-file / custom-columns / custom-columns-file, --no-headers,
--sort-by, -l/--selector, list --watch, and colour. The plane is shared: each
test labels the rollouts it seeds with a label of its own and selects by it.
"""
from __future__ import annotations

import json
import os
import pty
import re
import secrets
import select
import subprocess
import time
from pathlib import Path

import envtest
from testfixtures import compare

from support.harness import Aicr, aicr_env, error_line

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}
SGR = re.compile("\x1b\\[([0-9;]*)m")


def labelled(seed: envtest.Seeder, name: str, **labels: str) -> str:
    seed.custom.patch_cluster_custom_object(envtest.GROUP, envtest.VERSION, "runtimerollouts", name,
                                            {"metadata": {"labels": labels}})
    return name


def run_label() -> tuple[str, str]:
    return "test.aicr.run/run", secrets.token_hex(6)


def test_jsonpath_prints_the_json_document(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    key, run = run_label()
    name = labelled(seed, seed.rollout(), **{key: run})
    proc = aicr("describe", name, "-o", "jsonpath={.rollout} {.phase} {.approval.required}",
                kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stdout, proc.stderr), expected=(0, f"{name} AwaitingApproval true", ""))
    proc = aicr("list", "-l", f"{key}={run}", "-o", 'jsonpath={range .items[*]}{.name}:{.phase}{"\\n"}{end}',
                kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stdout), expected=(0, f"{name}:AwaitingApproval\n"))


def test_jsonpath_file_and_missing_keys(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                        tmp_path: Path) -> None:
    name = seed.rollout()
    template = tmp_path / "t.jsonpath"
    template.write_text("{.kind}/{.rollout}{.nope}\n", encoding="utf-8")
    proc = aicr("describe", name, "-o", f"jsonpath-file={template}", kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stdout), expected=(0, f"RolloutDescription/{name}\n"))
    proc = aicr("describe", name, "-o", f"jsonpath-file={template}", "--allow-missing-template-keys=false",
                kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stdout, error_line(proc)), expected=(
        2, "", "error: [USAGE] error executing jsonpath {.kind}/{.rollout}{.nope}\\n: nope is not found; "
               "nothing was printed"))


def test_a_bad_argument_is_usage_before_any_api_call(aicr: Aicr, plane: envtest.ControlPlane,
                                                     tmp_path: Path) -> None:
    log = tmp_path / "requests.log"
    cases = {
        ("describe", "r", "-o", "jsonpath={.a"): "error: [USAGE] error parsing jsonpath {.a: unclosed action",
        ("list", "-o", "jsonpath="): "error: [USAGE] template format specified but no template given",
        ("list", "-o", "jsonpath"): 'error: [USAGE] output format "jsonpath" needs an argument: -o jsonpath=TEMPLATE',
        ("list", "-o", f"jsonpath-file={tmp_path / 'none'}"):
            f"error: [USAGE] error reading jsonpath-file {tmp_path / 'none'}: No such file or directory",
        ("list", "-o", "custom-columns=NAME"):
            "error: [USAGE] unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>",
        ("list", "-o", "json=x"): 'error: [USAGE] output format "json" takes no argument (got "json=x")',
        ("list", "-l", "a b"): "error: [USAGE] argument -l/--selector: invalid selector 'a b': found 'b', expected "
                               "an operator (=, ==, !=, in, notin, >, <), ',' or the end",
        ("list", "--sort-by", "{.a"): "error: [USAGE] argument --sort-by: --sort-by {.a: unexpected path string, "
                                      "expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or "
                                      "'{.name1.name2}'",
    }
    for args, expected in cases.items():
        proc = aicr(*args, kubeconfig=plane.kubeconfig_for("victor"), AICR_REQUEST_LOG=str(log))
        compare((proc.returncode, proc.stdout, error_line(proc)), expected=(2, "", expected), prefix=str(args))
    assert not log.exists() or log.read_text() == "", log.read_text()


def test_custom_columns_on_each_item(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                     tmp_path: Path) -> None:
    key, run = run_label()
    name = labelled(seed, seed.rollout(report=json.dumps(envtest.SAMPLE_REPORT)), **{key: run})
    spec = "NAME:.name,PHASE:phase,VERDICT:{.assessment.verdict},USER:.approval.user,NOPE:.nope"
    proc = aicr("list", "-l", f"{key}={run}", "-o", f"custom-columns={spec}", kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    width = len(name) + 3
    compare(proc.stdout.splitlines(), expected=[
        f"{'NAME':<{width}}PHASE              VERDICT   USER    NOPE",
        f"{name:<{width}}AwaitingApproval   manual    <nil>   <none>"])
    spec_file = tmp_path / "columns.txt"
    spec_file.write_text("NAME   PHASE\n.name  {.phase}\n", encoding="utf-8")
    proc = aicr("list", "-l", f"{key}={run}", "-o", f"custom-columns-file={spec_file}", "--no-headers",
                kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stdout), expected=(0, f"{name:<{width}}AwaitingApproval\n"))


def test_no_headers_for_every_table(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    key, run = run_label()
    name = labelled(seed, seed.rollout(), **{key: run})
    for output in ("text", "wide", "custom-columns=N:.name"):
        with_headers = aicr("list", "-l", f"{key}={run}", "-o", output, kubeconfig=plane.kubeconfig_for("victor"))
        without = aicr("list", "-l", f"{key}={run}", "-o", output, "--no-headers",
                       kubeconfig=plane.kubeconfig_for("victor"))
        compare((without.returncode, len(with_headers.stdout.splitlines())), expected=(0, 2), prefix=output)
        compare(timeless(without.stdout).splitlines(), expected=timeless(with_headers.stdout).splitlines()[1:],
                prefix=output)
        assert without.stdout.startswith(name), without.stdout


def test_a_seeded_ended_rollout_carries_the_outcome_label_the_operator_sets(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    succeeded = seed.rollout(phase="Ended", outcome="Succeeded", approval=APPROVED)
    failed = seed.rollout(phase="Ended", outcome="Failed", approval=APPROVED)
    waiting = seed.rollout()

    def names(*args: str) -> list[str]:
        proc = aicr("list", *args, "-o", "name", kubeconfig=plane.kubeconfig_for("victor"))
        compare((proc.returncode, proc.stderr), expected=(0, ""), prefix=str(args))
        return [line.split("/", 1)[1] for line in proc.stdout.splitlines()]

    found = names("--all", "-l", "operator.aicr.run/outcome=Succeeded")  # as docs/output-options.md shows it
    assert succeeded in found and failed not in found and waiting not in found, found
    assert failed in names("--all", "-l", "operator.aicr.run/outcome=Failed")
    labels = json.loads(plane.kubectl("get", "runtimerollout", waiting, "-o", "json").stdout)["metadata"]
    assert envtest.OUTCOME_LABEL not in labels.get("labels", {}), labels  # not ended: no outcome yet


def test_sort_by_and_selector(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, tmp_path: Path) -> None:
    import datetime as dt

    key, run = run_label()
    now = dt.datetime.now(dt.timezone.utc)
    late = labelled(seed, seed.rollout(deadline=now + dt.timedelta(hours=9)), **{key: run})
    early = labelled(seed, seed.rollout(deadline=now + dt.timedelta(hours=1)), **{key: run})
    middle = labelled(seed, seed.rollout(deadline=now + dt.timedelta(hours=5)), **{key: run})
    failed = labelled(seed, seed.rollout(phase="Ended", outcome="Failed", approval=APPROVED),
                      **{key: run, "operator.aicr.run/outcome": "Failed"})
    seed.rollout()  # not labelled: never listed here
    log = tmp_path / "requests.log"

    def names(*args: str) -> list[str]:
        proc = aicr("list", *args, "-o", "name", kubeconfig=plane.kubeconfig_for("victor"), AICR_REQUEST_LOG=str(log))
        compare((proc.returncode, proc.stderr), expected=(0, ""), prefix=str(args))
        return [line.split("/", 1)[1] for line in proc.stdout.splitlines()]

    compare(names("-l", f"{key}={run}", "--sort-by", ".deadline"), expected=[early, middle, late])
    compare(names("--selector", f"{key} in ({run})", "--sort-by", "{.deadline}"), expected=[early, middle, late])
    compare(names("-l", f"{key}={run}", "--all", "--sort-by", "deadline")[-1], expected=late)
    compare(names("--all", "-l", f"{key}={run},operator.aicr.run/outcome=Failed"), expected=[failed])
    compare(names("-l", f"{key}={run},operator.aicr.run/outcome=Failed"), expected=[])  # ended: only with --all
    assert f"labelSelector=test.aicr.run%2Frun%3D{run}" in log.read_text(), log.read_text()
    proc = aicr("list", "-l", f"{key}={run}", "--sort-by", ".nope", kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, error_line(proc)), expected=(
        2, "error: [USAGE] couldn't find any field with path '{.nope}' in the list of objects"))


def documents(text: str) -> list[dict]:  # type: ignore[type-arg]
    decoder, found, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        while text[at].isspace():
            at += 1
        doc, at = decoder.raw_decode(text, at)
        found.append(doc)
    return found


class Watching:
    """`kubectl aicr list --watch ...` (or another command's watch) running; its stdout read as it comes."""

    def __init__(self, aicr: Aicr, kubeconfig: Path, *args: str,
                 command: tuple[str, ...] = ("list", "--watch")) -> None:
        self.proc = subprocess.Popen([aicr.kubectl, "aicr", *command, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=aicr_env(aicr.home, kubeconfig), cwd=aicr.cwd)
        self.out = ""

    def until(self, done: object, timeout: float = 30) -> str:
        assert self.proc.stdout is not None
        ends = time.monotonic() + timeout
        while not done(self.out):  # type: ignore[operator]
            left = ends - time.monotonic()
            assert left > 0, f"not seen in {timeout}s: {self.out!r}"
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536).decode()
                assert chunk, f"ended: {self.out!r} {self.proc.stderr.read() if self.proc.stderr else ''}"
                self.out += chunk
        return self.out

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def test_list_watch_prints_a_row_per_change(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    key, run = run_label()
    first = labelled(seed, seed.rollout(), **{key: run})
    watching = Watching(aicr, plane.kubeconfig_for("victor"), "-l", f"{key}={run}", "--all")
    try:
        lines = watching.until(lambda out: len(out.splitlines()) >= 2).splitlines()
        compare(lines[0].split()[:2], expected=["NAME", "PHASE"])
        assert lines[1].startswith(f"{first} ") and "AwaitingApproval" in lines[1], lines
        seed.set_rollout_status(first, {"phase": "Progressing"})
        lines = watching.until(lambda out: len(out.splitlines()) >= 3).splitlines()
        assert lines[2].startswith(f"{first} ") and "Progressing" in lines[2], lines
        second = labelled(seed, seed.rollout(), **{key: run})
        lines = watching.until(lambda out: second in out).splitlines()
        assert not any(line.startswith("NAME") for line in lines[1:]), lines  # the header once
    finally:
        watching.stop()


def test_list_watch_json_is_one_item_document_per_row(aicr: Aicr, plane: envtest.ControlPlane,
                                                      seed: envtest.Seeder) -> None:
    key, run = run_label()
    first = labelled(seed, seed.rollout(), **{key: run})
    second = labelled(seed, seed.rollout(), **{key: run})
    watching = Watching(aicr, plane.kubeconfig_for("victor"), "-l", f"{key}={run}", "-o", "json")
    try:
        docs = documents(watching.until(lambda out: len(documents(out)) >= 2 if out.rstrip().endswith("}") else False))
        compare(sorted(d["name"] for d in docs), expected=sorted([first, second]))
        compare({d["kind"] for d in docs}, expected={"RolloutListItem"})
        seed.set_rollout_status(second, {"phase": "Ended", "outcome": "Succeeded"})  # ends: shown leaving
        docs = documents(watching.until(lambda out: out.rstrip().endswith("}") and len(documents(out)) >= 3))
        compare((docs[2]["name"], docs[2]["phase"], docs[2]["outcome"]), expected=(second, "Ended", "Succeeded"))
        compare(set(docs[2]), expected={"kind", *docs[0]})
    finally:
        watching.stop()


def test_a_watch_applies_the_template_to_each_document(aicr: Aicr, plane: envtest.ControlPlane,
                                                       seed: envtest.Seeder) -> None:
    """describe -w and list -w with a template: once per document, nothing between them (kubectl get -w)."""
    key, run = run_label()
    name = labelled(seed, seed.rollout(), **{key: run})
    describing = Watching(aicr, plane.kubeconfig_for("victor"), name, "-o", 'jsonpath={.phase}{"\\n"}',
                          command=("describe", "--watch"))
    listing = Watching(aicr, plane.kubeconfig_for("victor"), "-l", f"{key}={run}", "--all",
                       "-o", "custom-columns=NAME:.name,PHASE:.phase")
    try:
        compare(describing.until(lambda out: out.endswith("\n")), expected="AwaitingApproval\n")
        listing.until(lambda out: len(out.splitlines()) >= 2)
        seed.set_rollout_status(name, {"phase": "Ended", "outcome": "Succeeded"})
        compare(describing.until(lambda out: out.count("\n") >= 2), expected="AwaitingApproval\nEnded\n")
        compare(describing.proc.wait(timeout=30), expected=0)  # describe -w ends with the rollout
        width = len(name) + 3
        compare(listing.until(lambda out: len(out.splitlines()) >= 3).splitlines(), expected=[
            f"{'NAME':<{width}}PHASE", f"{name:<{width}}AwaitingApproval", f"{name:<{width}}Ended"])
    finally:
        describing.stop()
        listing.stop()


def strip(text: str) -> str:
    return SGR.sub("", text)


def timeless(text: str) -> str:
    """Two runs a second apart differ in AGE and `in 7h59m`: those, and the padding they move, left out."""
    text = re.sub(r"\bin [0-9][0-9dhms]*", "in T", re.sub(r" [0-9]+s( |$)", r" Ns\1", text, flags=re.M))
    text = re.sub(r" at [0-9T:-]+Z$", " at TIME", text, flags=re.M)  # policy check's first line
    return re.sub(" +", " ", text)


POLICY = """apiVersion: aicr.run/v1alpha1
kind: ApprovalPolicy
policies:
  reason-format:
    pattern: '^CHG-[0-9]+'
"""


def test_colour_never_changes_the_text(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                       tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    key, run = run_label()
    name = labelled(seed, seed.rollout(report=json.dumps(envtest.SAMPLE_REPORT),
                                       message="evil \x1b[2J\x1b[31mred\x1b[0m \u202e"), **{key: run})
    labelled(seed, seed.rollout(phase="Ended", outcome="Failed", approval=APPROVED), **{key: run})
    runs = [("list", "--all", "-l", f"{key}={run}"), ("list", "--all", "-l", f"{key}={run}", "-o", "wide"),
            ("describe", name), ("policy", "check", name, "--reason", "r", "--policy-file", str(policy))]
    for args in runs:
        never = aicr(*args, "--color=never", kubeconfig=plane.kubeconfig_for("alice"))
        always = aicr(*args, "--color=always", kubeconfig=plane.kubeconfig_for("alice"), NO_COLOR="1")
        default = aicr(*args, kubeconfig=plane.kubeconfig_for("alice"))  # not a terminal: none
        assert never.returncode in (0, 1) and "\x1b" not in never.stdout, never.stdout
        compare((always.returncode, timeless(strip(always.stdout)), timeless(default.stdout)), expected=(
            never.returncode, timeless(never.stdout), timeless(never.stdout)), prefix=str(args))
        if args[0] == "describe":  # no time of its own: the bytes themselves
            compare(strip(always.stdout), expected=never.stdout, prefix=str(args))
        compare(set(SGR.findall(always.stdout)) - {"0", "2", "31", "32", "33", "36"}, expected=set(), prefix=str(args))
        assert "\x1b" not in strip(always.stdout), always.stdout  # nothing from the cluster reaches the terminal
        assert set(SGR.findall(always.stdout)) >= {"0"}, (args, always.stdout)
    described = aicr("describe", name, "--color=always", kubeconfig=plane.kubeconfig_for("alice")).stdout
    assert "evil \\x1b[2J\\x1b[31mred\\x1b[0m \\u202e" in described, described
    assert "\x1b[33mAwaitingApproval\x1b[0m" in described and "\x1b[33mmanual\x1b[0m" in described, described
    checked = aicr(*runs[-1], "--color=always", kubeconfig=plane.kubeconfig_for("alice")).stdout
    assert "\x1b[31mdeny\x1b[0m" in checked, checked
    assert "\x1b[31mwould be refused\x1b[0m" in checked, checked


def on_terminal(aicr: Aicr, kubeconfig: Path, *args: str, **env: str) -> str:
    """stdout of `kubectl aicr ARGS` written to a pseudo-terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([aicr.kubectl, "aicr", *args], stdout=follower, stderr=subprocess.PIPE,
                            env=aicr_env(aicr.home, kubeconfig, **env), cwd=aicr.cwd)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the writer has gone
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(leader)
    return out.decode().replace("\r\n", "\n")


def test_auto_colours_a_terminal_unless_no_color(aicr: Aicr, plane: envtest.ControlPlane,
                                                 seed: envtest.Seeder) -> None:
    key, run = run_label()
    labelled(seed, seed.rollout(), **{key: run})
    kubeconfig = plane.kubeconfig_for("victor")
    coloured = on_terminal(aicr, kubeconfig, "list", "-l", f"{key}={run}")
    plain = on_terminal(aicr, kubeconfig, "list", "-l", f"{key}={run}", NO_COLOR="1")
    assert "\x1b[33mAwaitingApproval\x1b[0m" in coloured, coloured
    assert "\x1b" not in plain and "AwaitingApproval" in plain, plain
    compare(timeless(strip(coloured)), expected=timeless(plain))


def test_the_site_csv_renderer_takes_columns(site_package: Aicr, plane: envtest.ControlPlane,
                                             seed: envtest.Seeder, tmp_path: Path) -> None:
    """A site renderer with an argument (the plugin guide's example): read before any API call."""
    key, run = run_label()
    name = labelled(seed, seed.rollout(approval=APPROVED), **{key: run})
    proc = site_package("list", "-l", f"{key}={run}", "-o", "csv=name,phase,approval.user,nope",
                        kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stdout, proc.stderr), expected=(
        0, f"name,phase,approval.user,nope\n{name},AwaitingApproval,bob,\n", ""))
    proc = site_package("list", "-l", f"{key}={run}", "-o", "csv=name", "--no-headers",
                        kubeconfig=plane.kubeconfig_for("victor"))
    compare(proc.stdout, expected=f"{name}\n")
    log = tmp_path / "requests.log"
    proc = site_package("list", "-o", "csv=name,,x", kubeconfig=plane.kubeconfig_for("victor"),
                        AICR_REQUEST_LOG=str(log))
    compare((proc.returncode, error_line(proc), log.exists()), expected=(
        2, "error: [USAGE] -o csv=COLUMNS: '' is not a dotted path such as name or approval.user", False))
    compare(site_package("version", "--client", "-o", "csv").stdout.splitlines()[0],
            expected="kind,Version")  # without an argument: key,value rows as before
