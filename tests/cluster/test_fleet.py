"""The fleet end to end: three real control planes at once (each its own etcd, CA and users), one
kubeconfig with a context per cluster plus one whose server is down, and the real `kubectl aicr`.

The planes, the kubeconfig and the operator's part are `support.fleet_planes` (the session fixture
`fleet`, shared with the ClusterProfile tests).
"""
from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import envtest
import yaml
from testfixtures import compare

from support.fleet_planes import (
    CONTEXTS,
    DOWN,
    LIVE,
    Fleet,
    Operator,
    end,
    results,
    rollout_spec,
    rss_kib,
    set_ready,
    waves_file,
)
from support.harness import Aicr, aicr_env

# -- the planes ------------------------------------------------------------------------------------------

def test_three_planes_fit_the_machine(fleet: Fleet) -> None:
    """Each plane is its own etcd and kube-apiserver; what they hold in memory is measured and printed."""
    figures = {m.context: sum(rss_kib(p.pid) for p in m.plane.procs) for m in fleet.members}
    print("control plane RSS (MiB):", {c: round(kib / 1024) for c, kib in figures.items()},  # noqa: T201
          "total", round(sum(figures.values()) / 1024))
    assert len({m.plane.url for m in fleet.members}) == 3
    assert len({m.plane.server_ca_pem for m in fleet.members}) == 3  # each its own CA
    assert sum(figures.values()) < 6 * 1024 * 1024, figures  # well inside the 24 GiB machine


# -- reading -------------------------------------------------------------------------------------------------

def test_list_across_clusters_reports_the_down_one(aicr: Aicr, fleet: Fleet) -> None:
    digest, names = fleet.seed_plan()
    proc = aicr("list", "--all-contexts", "-o", "json", kubeconfig=fleet.kubeconfig)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    document = json.loads(proc.stdout)
    found = {(i["context"], i["name"]) for i in document["items"] if i["transition"]["to"] == digest}
    compare(found, expected=set(names.items()))
    compare([(e["context"], e["code"]) for e in document["errors"]], expected=[(DOWN, "UNAVAILABLE")])
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    compare(len(errors), expected=1)
    assert errors[0].startswith(f"error: [UNAVAILABLE] context {DOWN}: "), errors
    contexts = [i["context"] for i in document["items"]]
    compare(sorted(set(contexts), key=contexts.index), expected=list(CONTEXTS))  # grouped, in kubeconfig order

    text = aicr("list", "--contexts", LIVE, kubeconfig=fleet.kubeconfig)
    compare((text.returncode, text.stderr), expected=(0, ""))
    header, *rows = text.stdout.splitlines()
    assert header.split()[:2] == ["CONTEXT", "NAME"], header
    for context, name in names.items():
        assert any(row.split()[:2] == [context, name] for row in rows), (context, name, text.stdout)

    named = aicr("list", "--contexts", "gpu-eu-*", "-o", "name", kubeconfig=fleet.kubeconfig)
    compare(named.returncode, expected=0, suffix=named.stderr)
    for context in ("gpu-eu-1", "gpu-eu-2"):
        assert f"{context}/runtimerollout.operator.aicr.run/{names[context]}" in named.stdout.splitlines()
    assert not any(line.startswith("gpu-lab-1/") for line in named.stdout.splitlines())


def test_version_and_policy_check_across_clusters(aicr: Aicr, fleet: Fleet) -> None:
    proc = aicr("version", "--contexts", LIVE, kubeconfig=fleet.kubeconfig)
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    headings = [line for line in proc.stdout.splitlines() if line.startswith("== ")]
    compare(headings, expected=[f"== {c} ==" for c in CONTEXTS])
    assert proc.stdout.count("Server Version: v1.37") == 3, proc.stdout

    digest, names = fleet.seed_plan()
    check = aicr("policy", "check", "--plan", digest, "--all-contexts", "--reason", "CHG-1 driver", "-o", "json",
                 kubeconfig=fleet.kubeconfig)
    compare(check.returncode, expected=1, suffix=check.stderr)  # the down cluster did not answer
    document = json.loads(check.stdout)
    compare(document["kind"], expected="PolicyDecisionList")
    compare([(i["context"], i["kind"], i["rollout"], i["allowed"]) for i in document["items"]],
            expected=[(c, "PolicyDecision", names[c], True) for c in CONTEXTS])
    compare([e["context"] for e in document["errors"]], expected=[DOWN])
    for m in fleet.members:
        assert "approval" not in rollout_spec(m, names[m.context])  # a check writes nothing


def test_the_commands_own_refusal_is_its_clusters_decision(aicr: Aicr, fleet: Fleet) -> None:
    """policy check --action revoke of a rollout not approved: that cluster's decision (refused), not an error."""
    digest, names = fleet.seed_plan()
    args = ("policy", "check", "--plan", digest, "--contexts", CONTEXTS[0], "--action", "revoke", "--reason", "x")
    text = aicr(*args, kubeconfig=fleet.kubeconfig)
    compare((text.returncode, text.stderr), expected=(1, ""))
    assert "No cluster answered." not in text.stdout, text.stdout
    assert text.stdout.startswith(f"== {CONTEXTS[0]} ==\n"), text.stdout
    assert "revoke would be refused: [NOT_APPROVED]" in text.stdout, text.stdout
    document = json.loads(aicr(*args, "-o", "json", kubeconfig=fleet.kubeconfig).stdout)
    compare([(i["context"], i["rollout"], i["allowed"], i["code"]) for i in document["items"]],
            expected=[(CONTEXTS[0], names[CONTEXTS[0]], False, "NOT_APPROVED")])
    compare(document["errors"], expected=[])


# -- approving across clusters ---------------------------------------------------------------------------------

def test_a_plan_pinned_approval_where_one_cluster_refuses(aicr: Aicr, fleet: Fleet) -> None:
    digest, names = fleet.seed_plan()
    other = fleet.member("gpu-eu-1").seed.rollout()  # another plan's rollout in the same cluster: not picked
    strict = fleet.member("gpu-eu-2")
    policy = {"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy",
              "policies": {"reason-format": {"pattern": "^CHG-[0-9]+", "message": "cite a change ticket first"}}}
    strict.plane.kubectl("create", "configmap", "-n", "aicr-system", "aicr-approval-policy",
                         f"--from-literal=policy.yaml={yaml.safe_dump(policy)}")
    try:
        proc = aicr("approve", "--contexts", LIVE, "--plan", digest, "--reason", "driver 580", "--expires", "2h",
                    "--yes", "-o", "json", kubeconfig=fleet.kubeconfig)
    finally:
        strict.plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy",
                             "--ignore-not-found")
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    document = json.loads(proc.stdout)
    compare(document["kind"], expected="FleetWrite")
    compare([(i["context"], i["rollout"], i["result"], i["code"]) for i in document["items"]], expected=[
        ("gpu-lab-1", names["gpu-lab-1"], "approved", None), ("gpu-eu-1", names["gpu-eu-1"], "approved", None),
        ("gpu-eu-2", names["gpu-eu-2"], "refused", "POLICY_DENIED")])
    assert "cite a change ticket first" in document["items"][2]["message"]
    compare(document["errors"], expected=[])
    for context in ("gpu-lab-1", "gpu-eu-1"):
        approval = rollout_spec(fleet.member(context), names[context])["approval"]
        compare((approval["user"], approval["reason"]), expected=("alice", "driver 580"))
    assert "approval" not in rollout_spec(strict, names["gpu-eu-2"])
    assert "approval" not in rollout_spec(fleet.member("gpu-eu-1"), other)
    # The listing came first, on stderr: context, rollout, transition, phase.
    assert f"Approve plan {digest}: 3 rollouts in 3 clusters:" in proc.stderr, proc.stderr
    assert any(line.split()[:2] == ["gpu-eu-1", names["gpu-eu-1"]] and "AwaitingApproval" in line
               for line in proc.stderr.splitlines()), proc.stderr

    again = aicr("approve", "--contexts", "gpu-lab-1", "--plan", digest, "--reason", "CHG-2 again", "--yes",
                 kubeconfig=fleet.kubeconfig)
    compare(again.returncode, expected=0, suffix=again.stderr)
    row = next(line for line in again.stdout.splitlines() if line.startswith("gpu-lab-1"))
    assert "already-approved" in row, again.stdout


def test_yes_is_needed_without_a_terminal_and_a_dry_run_writes_nothing(aicr: Aicr, fleet: Fleet) -> None:
    digest, names = fleet.seed_plan()
    proc = aicr("approve", "--contexts", LIVE, "--plan", digest, "--reason", "CHG-3", kubeconfig=fleet.kubeconfig)
    compare(proc.returncode, expected=2)
    assert proc.stderr.startswith("error: [USAGE] ") and "--yes" in proc.stderr, proc.stderr
    dry = aicr("approve", "--contexts", LIVE, "--plan", digest, "--reason", "CHG-3", "--dry-run=server", "-o", "json",
               kubeconfig=fleet.kubeconfig)
    compare(dry.returncode, expected=0, suffix=dry.stderr)
    compare(results(json.loads(dry.stdout)), expected={c: "approved" for c in CONTEXTS})
    for m in fleet.members:
        assert "approval" not in rollout_spec(m, names[m.context]), m.context
    skipped = aicr("revoke", "--contexts", LIVE, "--plan", digest, "--reason", "CHG-3", "--yes", "-o", "json",
                   kubeconfig=fleet.kubeconfig)  # nothing approved: nothing to revoke, and no failure
    compare(skipped.returncode, expected=0, suffix=skipped.stderr)
    compare({i["context"]: (i["result"], i["code"]) for i in json.loads(skipped.stdout)["items"]},
            expected={c: ("skipped", "NOT_APPROVED") for c in CONTEXTS})


def test_a_pending_list_says_none_were_found_in_the_clusters_read_beside_the_one_that_failed(
        aicr: Aicr, fleet: Fleet) -> None:
    """One context fails, the other has nothing pending (its only rollout so labelled has ended): `No rollouts
    found.` on stdout for the one read, the failure on stderr, exit 1 as for any partial failure."""
    member = fleet.member("gpu-eu-1")
    label = f"aicr-test/pending-read={envtest.random_digest()[7:23]}"
    name = member.seed.rollout(phase="Ended", outcome="Succeeded")
    member.plane.kubectl("label", "runtimerollouts", name, label)
    proc = aicr("list", "--contexts", f"gpu-eu-1,{DOWN}", "--pending", "-l", label, kubeconfig=fleet.kubeconfig)
    compare((proc.returncode, proc.stdout), expected=(1, "No rollouts found.\n"), suffix=proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    compare(len(errors), expected=1, suffix=proc.stderr)
    assert errors[0].startswith(f"error: [UNAVAILABLE] context {DOWN}: "), errors
    document = aicr("list", "--contexts", f"gpu-eu-1,{DOWN}", "--pending", "-l", label, "-o", "json",
                    kubeconfig=fleet.kubeconfig)
    compare({k: v for k, v in json.loads(document.stdout).items() if k != "errors"},
            expected={"kind": "RolloutList", "items": [], "read": ["gpu-eu-1"]}, suffix=document.stderr)


# -- waves ------------------------------------------------------------------------------------------------------------

WAVES = [{"name": "canary", "contexts": ["gpu-lab-1"]}, {"name": "eu", "contexts": ["gpu-eu-*"]}]


def test_waves_stop_when_the_canary_fails(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    digest, names = fleet.seed_plan()
    for m in fleet.members:
        set_ready(m, "True")
    with Operator(fleet, names, {"gpu-lab-1": "Failed"}):
        proc = aicr("approve", "--plan", digest, "--waves", str(waves_file(tmp_path, WAVES)), "--reason", "CHG-4",
                    "--yes", "-o", "json", kubeconfig=fleet.kubeconfig, timeout=120)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    document = json.loads(proc.stdout)
    compare({i["context"]: (i["wave"], i["result"]) for i in document["items"]}, expected={
        "gpu-lab-1": ("canary", "failed"), "gpu-eu-1": ("eu", "not-started"), "gpu-eu-2": ("eu", "not-started")})
    assert "ended Failed" in document["items"][0]["message"]
    for context in ("gpu-eu-1", "gpu-eu-2"):
        assert "approval" not in rollout_spec(fleet.member(context), names[context]), context
    progress = proc.stderr
    for line in ("wave canary: started", f"gpu-lab-1: approved {names['gpu-lab-1']}",
                 f"gpu-lab-1: {names['gpu-lab-1']} ended Failed", "the fleet stops"):
        assert line in progress, (line, progress)
    assert "wave eu: started" not in progress

    # Run again: the canary's newest rollout to the plan ended Failed, with no newer attempt: it stops again.
    again = aicr("approve", "--plan", digest, "--waves", str(waves_file(tmp_path, WAVES)), "--reason", "CHG-4",
                 "--yes", "-o", "json", kubeconfig=fleet.kubeconfig, timeout=60)
    compare(again.returncode, expected=1, suffix=again.stderr)
    compare(results(json.loads(again.stdout)),
            expected={"gpu-lab-1": "failed", "gpu-eu-1": "not-started", "gpu-eu-2": "not-started"})


def test_waves_resume_after_ctrl_c(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    digest, names = fleet.seed_plan()
    for m in fleet.members:
        set_ready(m, "True")
    path = waves_file(tmp_path, WAVES)
    args = [aicr.kubectl, "aicr", "approve", "--plan", digest, "--waves", str(path), "--reason", "CHG-5", "--yes",
            "-o", "json"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=aicr_env(aicr.home, fleet.kubeconfig), cwd=aicr.cwd)
    lines: list[str] = []
    approved = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if f"gpu-lab-1: approved {names['gpu-lab-1']}" in line:
                approved.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert approved.wait(60), "".join(lines)
        time.sleep(0.5)  # it is following the canary now
        proc.send_signal(signal.SIGINT)
        stdout = proc.stdout.read() if proc.stdout else ""
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(5)
    compare(proc.returncode, expected=130, suffix="".join(lines))
    compare(results(json.loads(stdout)),
            expected={"gpu-lab-1": "interrupted", "gpu-eu-1": "not-started", "gpu-eu-2": "not-started"})
    compare(rollout_spec(fleet.member("gpu-lab-1"), names["gpu-lab-1"])["approval"]["user"], expected="alice")

    # Meanwhile the canary's rollout succeeded; run again: it is done, and the next wave goes ahead.
    end(fleet.member("gpu-lab-1"), names["gpu-lab-1"], "Succeeded")
    with Operator(fleet, names, {"gpu-eu-1": "Succeeded", "gpu-eu-2": "Succeeded"}):
        again = aicr("approve", "--plan", digest, "--waves", str(path), "--reason", "CHG-5", "--yes", "-o", "json",
                     kubeconfig=fleet.kubeconfig, timeout=120)
    compare(again.returncode, expected=0, suffix=again.stderr)
    compare(results(json.loads(again.stdout)), expected={c: "succeeded" for c in CONTEXTS})
    assert "gpu-lab-1: approved" not in again.stderr  # done already: not approved again
    for context in ("gpu-eu-1", "gpu-eu-2"):
        compare(rollout_spec(fleet.member(context), names[context])["approval"]["user"], expected="alice")


def test_a_soak_whose_runtime_is_not_ready_fails_the_cluster(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    digest, names = fleet.seed_plan()
    set_ready(fleet.member("gpu-lab-1"), "False")
    for context in ("gpu-eu-1", "gpu-eu-2"):
        set_ready(fleet.member(context), "True")
    path = waves_file(tmp_path, WAVES, soak="1s", maxFailures=1)  # the canary's failure is tolerated
    with Operator(fleet, names, {c: "Succeeded" for c in CONTEXTS}):
        proc = aicr("approve", "--plan", digest, "--waves", str(path), "--reason", "CHG-6", "--yes", "-o", "json",
                    kubeconfig=fleet.kubeconfig, timeout=120)
    set_ready(fleet.member("gpu-lab-1"), "True")
    compare(proc.returncode, expected=1, suffix=proc.stderr)  # a tolerated failure is still a failure
    document = json.loads(proc.stdout)
    compare(results(document), expected={"gpu-lab-1": "failed", "gpu-eu-1": "succeeded", "gpu-eu-2": "succeeded"})
    assert "not Ready after the soak" in document["items"][0]["message"], document
    for line in ("wave canary: soak started (1s)", "wave canary: soak done", "wave eu: soak done"):
        assert line in proc.stderr, (line, proc.stderr)


def test_a_dry_run_of_waves_shows_each_wave_and_writes_nothing(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    digest, names = fleet.seed_plan()
    proc = aicr("approve", "--plan", digest, "--waves", str(waves_file(tmp_path, WAVES)), "--reason", "CHG-7",
                "--dry-run=server", "-o", "json", kubeconfig=fleet.kubeconfig)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    document = json.loads(proc.stdout)
    compare({i["context"]: (i["wave"], i["result"]) for i in document["items"]}, expected={
        "gpu-lab-1": ("canary", "approved"), "gpu-eu-1": ("eu", "not-started"), "gpu-eu-2": ("eu", "not-started")})
    assert "server dry run: nothing was written" in document["items"][0]["message"]
    for context in CONTEXTS:  # each wave, its clusters and their state
        assert f"{context}: {names[context]} AwaitingApproval, waits for an approval" in proc.stderr, proc.stderr
    for m in fleet.members:
        assert "approval" not in rollout_spec(m, names[m.context]), m.context


def test_at_a_terminal_it_asks_first(fleet: Fleet, aicr: Aicr) -> None:
    import os
    import pty

    digest, names = fleet.seed_plan()

    def answer(text: str) -> tuple[int, str]:
        main, terminal = pty.openpty()
        proc = subprocess.Popen([aicr.kubectl, "aicr", "approve", "--contexts", LIVE, "--plan", digest,
                                 "--reason", "CHG-8"], stdin=terminal, stderr=terminal, stdout=subprocess.PIPE,
                                env=aicr_env(aicr.home, fleet.kubeconfig), cwd=aicr.cwd, text=True)
        os.close(terminal)
        seen = b""
        ends = time.monotonic() + 60
        while b"[y/N]" not in seen and time.monotonic() < ends:
            seen += os.read(main, 4096)
        os.write(main, text.encode())
        try:
            while True:
                chunk = os.read(main, 4096)
                if not chunk:
                    break
                seen += chunk
        except OSError:  # the other end closed
            pass
        proc.wait(timeout=60)
        os.close(main)
        return proc.returncode, seen.decode(errors="replace")

    code, screen = answer("n\n")
    assert "Approve 3 rollouts in 3 clusters? [y/N]" in screen, screen
    compare(code, expected=2, suffix=screen)
    for m in fleet.members:
        assert "approval" not in rollout_spec(m, names[m.context]), m.context
    code, screen = answer("y\n")
    compare(code, expected=0, suffix=screen)
    for m in fleet.members:
        compare(rollout_spec(m, names[m.context])["approval"]["user"], expected="alice")


def test_plan_completes_the_digests_waiting_in_the_current_context(aicr: Aicr, fleet: Fleet) -> None:
    from support.harness import complete, words

    digest, _ = fleet.seed_plan()
    ended = envtest.random_digest()
    fleet.member("gpu-lab-1").seed.rollout(to=ended, phase="Ended", outcome="Succeeded")
    candidates, directive = complete(aicr, "approve", "--all-contexts", "--plan", "", kubeconfig=fleet.kubeconfig)
    assert digest in words(candidates) and ended not in words(candidates), candidates
    compare(directive, expected=":4")
    compare(words(complete(aicr, "approve", "--plan", digest[:30], kubeconfig=fleet.kubeconfig)[0]),
            expected=[digest])


def test_waves_follow_a_rollout_through_its_acknowledgement(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    digest, names = fleet.seed_plan()
    canary = fleet.member("gpu-lab-1")
    set_ready(canary, "True")

    def operator() -> None:
        ends = time.monotonic() + 60
        while time.monotonic() < ends and not rollout_spec(canary, names["gpu-lab-1"]).get("approval"):
            time.sleep(0.2)
        canary.seed.set_rollout_status(names["gpu-lab-1"], {
            "phase": "AwaitingAcknowledgement", "awaitingRelease": "nvsentinel", "message": "waiting"})
        while time.monotonic() < ends and not rollout_spec(canary, names["gpu-lab-1"]).get("acknowledgements"):
            time.sleep(0.2)
        end(canary, names["gpu-lab-1"], "Succeeded")

    acting = threading.Thread(target=operator, daemon=True)
    acting.start()
    args = [aicr.kubectl, "aicr", "approve", "--plan", digest, "--reason", "CHG-9", "--yes", "--waves",
            str(waves_file(tmp_path, [{"name": "canary", "contexts": ["gpu-lab-1"]}]))]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=aicr_env(aicr.home, fleet.kubeconfig), cwd=aicr.cwd)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # a person acknowledges when the progress says it waits for one
        lines.append(line)
        if "waits for an acknowledgement of nvsentinel" in line:
            ack = aicr("acknowledge", names["gpu-lab-1"], kubeconfig=fleet.kubeconfig)
            compare(ack.returncode, expected=0, suffix=ack.stderr)
    stdout = proc.stdout.read() if proc.stdout else ""
    proc.wait(timeout=60)
    acting.join(5)
    compare(proc.returncode, expected=0, suffix="".join(lines))
    assert "gpu-lab-1" in stdout and "succeeded" in stdout, stdout


def test_a_rollout_a_minute_past_its_deadline_fails_its_wave(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    digest = envtest.random_digest()
    passed = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=55)  # a minute past it in 5 s
    name = fleet.member("gpu-lab-1").seed.rollout(to=digest, deadline=passed)
    path = waves_file(tmp_path, [{"name": "canary", "contexts": ["gpu-lab-1"]}])
    refused = aicr("approve", "--plan", digest, "--waves", str(path), "--reason", "CHG-10", "--yes", "-o", "json",
                   kubeconfig=fleet.kubeconfig)  # without --expires, approve refuses a passed deadline
    compare(refused.returncode, expected=1, suffix=refused.stderr)
    compare([(i["result"], i["code"]) for i in json.loads(refused.stdout)["items"]],
            expected=[("failed", "DEADLINE_PASSED")])
    started = time.monotonic()
    proc = aicr("approve", "--plan", digest, "--waves", str(path), "--reason", "CHG-10", "--expires", "1h", "--yes",
                "-o", "json", kubeconfig=fleet.kubeconfig, timeout=60)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    item = json.loads(proc.stdout)["items"][0]
    compare((item["rollout"], item["result"], item["code"]), expected=(name, "failed", "TIMEOUT"))
    assert "did not end within a minute past its deadline" in item["message"], item
    assert time.monotonic() - started < 30


def test_acknowledge_and_revoke_across_clusters(aicr: Aicr, fleet: Fleet) -> None:
    approved = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "CHG-11"}
    digest, names = fleet.seed_plan(phase="AwaitingAcknowledgement", approval=approved,
                                    awaiting_release="nvsentinel", message="waiting for acknowledgement")
    proc = aicr("acknowledge", "--contexts", LIVE, "--plan", digest, "--yes", "-o", "json",
                kubeconfig=fleet.kubeconfig)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare(results(json.loads(proc.stdout)), expected={c: "acknowledged" for c in CONTEXTS})
    for m in fleet.members:
        compare([a["user"] for a in rollout_spec(m, names[m.context])["acknowledgements"]], expected=["alice"])
    again = aicr("acknowledge", "--contexts", LIVE, "--plan", digest, "--yes", "-o", "json",
                 kubeconfig=fleet.kubeconfig)
    compare(again.returncode, expected=0, suffix=again.stderr)
    compare(results(json.loads(again.stdout)), expected={c: "skipped" for c in CONTEXTS})
    revoked = aicr("revoke", "--contexts", "gpu-eu-*", "--plan", digest, "--reason", "CHG-11 stop", "--yes",
                   kubeconfig=fleet.kubeconfig)
    compare(revoked.returncode, expected=0, suffix=revoked.stderr)
    compare([line.split()[:3] for line in revoked.stdout.splitlines()],
            expected=[[c, names[c], "revoked"] for c in ("gpu-eu-1", "gpu-eu-2")])
    assert "revocation" not in rollout_spec(fleet.member("gpu-lab-1"), names["gpu-lab-1"])
