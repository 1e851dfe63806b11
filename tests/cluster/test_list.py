"""`kubectl aicr list` through the real kubectl, as ordinary users, on the real control plane.

The control plane is shared by the whole session, so these tests look for the
rollouts they seeded among whatever else is there.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import time
from pathlib import Path

import envtest
from testfixtures import compare

from support.harness import Aicr, error_line

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}
HEADER = "NAME  PHASE  APPROVAL  DEADLINE  WAITING-ON  ASSESSMENT  AGE".split()


def listed(aicr: Aicr, plane: envtest.ControlPlane, user: str, *args: str, **env: str) -> dict[str, dict]:  # type: ignore[type-arg]
    proc = aicr("list", "-o", "json", *args, kubeconfig=plane.kubeconfig_for(user), **env)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    doc = json.loads(proc.stdout)
    compare(doc["kind"], expected="RolloutList")
    return {item["name"]: item for item in doc["items"]}


def rows(text: str) -> dict[str, list[str]]:
    """Table rows by NAME, cut at the header's column starts (cells may contain spaces)."""
    lines = text.splitlines()
    header = lines[0]
    starts = [header.index(h) for h in HEADER]
    return {line.split()[0]: [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
            for line in lines[1:]}


def test_not_ended_newest_first_and_all(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    oldest = seed.rollout()
    time.sleep(1.1)  # creationTimestamp has second precision
    ended = seed.rollout(phase="Ended", outcome="Failed", approval=APPROVED)
    time.sleep(1.1)
    newest = seed.rollout(phase="Progressing", approval=APPROVED)
    names = [n for n in listed(aicr, plane, "victor") if n in (oldest, ended, newest)]
    compare(names, expected=[newest, oldest])
    names = [n for n in listed(aicr, plane, "victor", "--all") if n in (oldest, ended, newest)]
    compare(names, expected=[newest, ended, oldest])


def test_pending_keeps_only_what_waits_for_a_person(aicr: Aicr, plane: envtest.ControlPlane,
                                                    seed: envtest.Seeder) -> None:
    acknowledged = [{"release": "nvsentinel", "user": "bob", "time": "2026-01-01T00:00:00Z"}]
    waiting = {
        seed.rollout(): True,
        seed.rollout(approval=APPROVED): False,
        seed.rollout(phase="AwaitingAcknowledgement", approval=APPROVED, awaiting_release="nvsentinel"): True,
        seed.rollout(phase="AwaitingAcknowledgement", approval=APPROVED, awaiting_release="nvsentinel",
                     acknowledgements=acknowledged): False,
        seed.rollout(phase="Progressing", approval=APPROVED): False,
    }
    every = listed(aicr, plane, "alice")
    pending = listed(aicr, plane, "alice", "--pending")
    compare({n: n in pending for n in waiting}, expected=waiting)
    compare({n: every[n]["waitingForPerson"] for n in waiting}, expected=waiting)
    assert all(item["waitingForPerson"] for item in pending.values())


def test_text_columns(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    soon = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(hours=2, minutes=10, seconds=45)
    report = json.dumps(envtest.SAMPLE_REPORT)
    pending = seed.rollout(deadline=soon, report=report)
    approved = seed.rollout(phase="AwaitingAcknowledgement", approval=APPROVED, awaiting_release="nvsentinel",
                            deadline=dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))
    revoked = seed.rollout(phase="Progressing", approval=APPROVED,
                           revocation={"user": "alice", "time": "2026-11-29T21:00:00Z", "reason": "r"})
    unrequired = seed.rollout(phase="Progressing", approval_required=False)
    proc = aicr("list", kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    compare(proc.stdout.splitlines()[0].split(), expected=HEADER)
    table = rows(proc.stdout)
    compare(table[pending][1:6], expected=["AwaitingApproval", "pending", "in 2h10m", "-", "manual"])
    assert table[pending][6].endswith("s"), table[pending]  # AGE, kubectl style: seconds old
    compare(table[approved][1:5], expected=["AwaitingAcknowledgement", table[approved][2], "passed", "nvsentinel"])
    assert re.fullmatch(r"bob, \d+d(\d+h)? left", table[approved][2]), table[approved]
    compare(table[revoked][2], expected="revoked by alice")
    compare(table[unrequired][2], expected="not required")
    # -o wide keeps the absolute times
    wide = aicr("list", "-o", "wide", kubeconfig=plane.kubeconfig_for("victor")).stdout
    line = next(line for line in wide.splitlines() if line.startswith(approved))
    assert re.search(r"approved by bob until 2099-01-01T00:00:00Z +2020-01-01T00:00:00Z \(passed\)", line), line
    line = next(line for line in wide.splitlines() if line.startswith(pending))
    assert re.search(rf"pending +{envtest.rfc3339(soon)} \(in 2h10m\)", line), line


def test_assessment_is_the_worst_verdict_of_a_verified_report(aicr: Aicr, plane: envtest.ControlPlane,
                                                              seed: envtest.Seeder) -> None:
    def report(*verdicts: str) -> str:
        return json.dumps({"components": [{"component": f"c{i}", "change": "version", "from": "1", "to": "2",
                                           "verdict": v, "notes": []} for i, v in enumerate(verdicts)]})

    names = {
        seed.rollout(report=report("safe", "blocked", "manual")): ("verified", "blocked"),
        seed.rollout(report=report("manual", "unknown", "safe")): ("verified", "unknown"),
        seed.rollout(report=report("unversioned", "manual")): ("verified", "manual"),
        seed.rollout(report=report("safe", "unversioned")): ("verified", "unversioned"),
        seed.rollout(report=report("safe")): ("verified", "safe"),
        seed.rollout(report=report("blocked"), report_digest=envtest.random_digest()): ("unverified", None),
        seed.rollout(report_digest=envtest.random_digest()): ("missing", None),
        seed.rollout(): ("none", None),
    }
    items = listed(aicr, plane, "victor")
    compare({n: (items[n]["assessment"]["status"], items[n]["assessment"]["verdict"]) for n in names},
            expected=names)
    table = rows(aicr("list", kubeconfig=plane.kubeconfig_for("victor")).stdout)
    compare({n: table[n][5] for n in names}, expected={n: v or s for n, (s, v) in names.items()})


def test_a_viewer_without_configmap_permission_gets_the_list_and_one_warning(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    """pat may list rollouts but not ConfigMaps."""
    first, second = seed.rollout(report=json.dumps(envtest.SAMPLE_REPORT)), seed.rollout(report="{}")
    proc = aicr("list", kubeconfig=plane.kubeconfig_for("pat"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare(proc.stderr.splitlines(), expected=[
        'warning: cannot list assessment reports in namespace aicr-system: configmaps is forbidden: User "pat" '
        'cannot list resource "configmaps" in API group "" in the namespace "aicr-system"; '
        "ASSESSMENT shows unavailable"])
    table = rows(proc.stdout)
    compare((table[first][5], table[second][5]), expected=("unavailable", "unavailable"))


def test_two_requests_whatever_the_number_of_rollouts(aicr: Aicr, plane: envtest.ControlPlane,
                                                      seed: envtest.Seeder, tmp_path: Path) -> None:
    for _ in range(3):
        seed.rollout(report=json.dumps(envtest.SAMPLE_REPORT))
    log = tmp_path / "requests"
    proc = aicr("list", "--all", kubeconfig=plane.kubeconfig_for("victor"), AICR_REQUEST_LOG=str(log))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    assert len(proc.stdout.splitlines()) > 4  # the rollouts of the whole session
    compare(sorted(log.read_text().splitlines()), expected=[  # read side by side: in either order
        "GET /api/v1/namespaces/aicr-system/configmaps?labelSelector=operator.aicr.run%2Frole%3Dassessment"
        "&limit=500",
        "GET /apis/operator.aicr.run/v1alpha1/runtimerollouts?limit=500"])


def test_wide_name_and_stable_json_keys(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout(from_digest=None, report=json.dumps(envtest.SAMPLE_REPORT))
    victor = plane.kubeconfig_for("victor")
    wide = aicr("list", "-o", "wide", kubeconfig=victor).stdout.splitlines()
    compare(wide[0].split()[-2:], expected=["TRANSITION", "STEPS"])
    row = next(line for line in wide if line.startswith(name))
    assert row.split()[-2:] == [f"none->{name.split('-')[1]}", "2"], row
    names = aicr("list", "-o", "name", kubeconfig=victor).stdout.splitlines()
    assert f"runtimerollout.operator.aicr.run/{name}" in names
    assert all(line.startswith("runtimerollout.operator.aicr.run/rollout-") for line in names)
    item = listed(aicr, plane, "victor")[name]
    compare(sorted(item), expected=sorted(["name", "created", "phase", "outcome", "approval", "deadline",
                                           "waitingOn", "waitingForPerson", "assessment", "transition", "steps"]))
    compare(sorted(item["approval"]), expected=["expires", "reason", "required", "revocation", "user"])
    compare(sorted(item["assessment"]), expected=["digest", "status", "verdict"])
    compare(item["transition"]["from"], expected=None)


def test_cluster_data_cannot_steer_the_terminal(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout(phase="AwaitingAcknowledgement", approval=APPROVED, awaiting_release="nv\x1b[2Jsentinel")
    out = aicr("list", kubeconfig=plane.kubeconfig_for("victor")).stdout
    assert "\x1b" not in out
    assert "nv\\x1b[2Jsentinel" in next(line for line in out.splitlines() if line.startswith(name))


def test_refusals(aicr: Aicr, plane: envtest.ControlPlane) -> None:
    proc = aicr("list", kubeconfig=plane.kubeconfig_for("nora"))
    compare((proc.returncode, error_line(proc).startswith("error: [FORBIDDEN] ")), expected=(1, True))
    assert 'User "nora" cannot list resource "runtimerollouts"' in proc.stderr
    proc = aicr("list", "extra", kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, error_line(proc)), expected=(2, "error: [USAGE] unrecognized arguments: extra"))
