"""The fleet from plain values, across two real control planes: no command object, no parsed flags.

What a long-lived program (the approver's dashboard) does with the core: a selection value
(`Fleet.chosen`), a read per cluster (`gathering.read`), one write request (`write_request` of a
plain mapping) and the write across the clusters (`plan_write.fleet_write`), with callbacks that
confirm and report progress, and an `Interruption` of its own. Beside them, what the command line
gains from the same shape: --policy-file read once whatever the number of clusters.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.domain.actions import APPROVE
from aicr_core.domain.write_flags import write_request
from aicr_core.fleet import context_source, plan_write
from aicr_core.fleet.fan_out import Fleet
from aicr_core.fleet.write_items import Confirmation
from aicr_core.framework.interruption import Interruption

from support.fleet_planes import LIVE, rollout_spec
from support.fleet_planes import Fleet as Planes
from support.harness import ROOT

TWO = "gpu-lab-1,gpu-eu-1"
DASHBOARD = """
import json, sys
from aicr_core.domain.actions import APPROVE
from aicr_core.domain.write_flags import write_request
from aicr_core.fleet import context_source, gathering, plan_write
from aicr_core.fleet.fan_out import Fleet

kubeconfig, digest = sys.argv[1], sys.argv[2]
selection = Fleet.chosen(context_source, context_source.members({"kubeconfig": kubeconfig}), contexts=sys.argv[3])
tallies, shown = [], []
read = gathering.read(selection, lambda turn: [r.name for r in plan_write.plan_rollouts(turn.session, digest)],
                      progress=tallies.append)
written = plan_write.fleet_write(selection, write_request({"reason": "CHG-4711 from a dashboard"}, APPROVE),
                                 digest, confirm=lambda c: shown.append(c) or True, progress=tallies.append)
print(json.dumps({
    "read": [[o.context, o.value] for o in read],
    "written": [[i["context"], i["rollout"], i["result"]] for i in written.items],
    "exit": written.exit_code, "question": shown[0].question, "listing": shown[0].listing,
    "tallies": [[t.done, t.all, t.failed] for t in tallies],
    "command line": sorted(m for m in sys.modules if m in ("aicr_core.framework.command", "aicr_core.fleet.flags",
                                                         "aicr_core.framework.app"))}))
"""


def test_a_fleet_read_and_a_plan_write_from_plain_values(fleet: Planes) -> None:
    """A process that never loads the command line reads both clusters and approves the plan in each."""
    digest, names = fleet.seed_plan()
    proc = subprocess.run([sys.executable, "-c", DASHBOARD, str(fleet.kubeconfig), digest, TWO], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    done = json.loads(proc.stdout)
    two = ["gpu-lab-1", "gpu-eu-1"]
    compare(done["read"], expected=[[context, [names[context]]] for context in two])
    compare(done["written"], expected=[[context, names[context], "approved"] for context in two])
    compare((done["exit"], done["question"]), expected=(0, "Approve 2 rollouts in 2 clusters?"))
    assert all(any(names[c] in line for line in done["listing"]) for c in two), done["listing"]
    compare(done["tallies"], expected=[[0, 2, 0], [1, 2, 0], [2, 2, 0]] * 3)  # the read; the write's picks, writes
    compare(done["command line"], expected=[])  # no command, no app, not even the fleet's flags were imported
    for context in two:
        approval = rollout_spec(fleet.member(context), names[context])["approval"]
        compare((approval["user"], approval["reason"]), expected=("alice", "CHG-4711 from a dashboard"))
    compare(rollout_spec(fleet.member("gpu-eu-2"), names["gpu-eu-2"]).get("approval"), expected=None)


def two_planes(fleet: Planes) -> Fleet:
    return Fleet.chosen(context_source, context_source.members({"kubeconfig": str(fleet.kubeconfig)}), contexts=TWO)


def test_two_fleet_writes_at_once_each_see_only_their_own_interruption(fleet: Planes) -> None:
    """On two threads of one process: one write is interrupted at its confirmation, the other goes on."""
    digest, names = fleet.seed_plan()
    request = write_request({"reason": "CHG-4711", "dry_run": "server"}, APPROVE)
    both_asked = threading.Barrier(2, timeout=60)
    results: dict[str, Any] = {}

    def write(who: str, stop: Interruption, interrupted: bool) -> None:
        def confirm(shown: Confirmation) -> bool:
            both_asked.wait()  # both writes are under way, between their reads and their writes
            if interrupted:
                stop.request()
            return not interrupted

        try:
            results[who] = plan_write.fleet_write(two_planes(fleet), request, digest, confirm=confirm, ask=True,
                                                  interruption=stop)
        except BaseException as err:  # noqa: BLE001 - the test reports it
            results[who] = err

    stopped, going_on = Interruption(), Interruption()
    threads = [threading.Thread(target=write, args=("stopped", stopped, True)),
               threading.Thread(target=write, args=("going on", going_on, False))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    compare([(i["context"], i["result"]) for i in results["stopped"].items],
            expected=[("gpu-lab-1", "interrupted"), ("gpu-eu-1", "interrupted")])
    compare(results["stopped"].exit_code, expected=130)
    compare([(i["context"], i["result"], "server dry run" in i["message"]) for i in results["going on"].items],
            expected=[("gpu-lab-1", "approved", True), ("gpu-eu-1", "approved", True)])
    compare((going_on.requested, results["going on"].exit_code), expected=(False, 0))
    compare([rollout_spec(fleet.member(c), names[c]).get("approval") for c in ("gpu-lab-1", "gpu-eu-1")],
            expected=[None, None])  # a dry run writes nothing


OPEN_EVENTS: list[str] = []
_RECORDING: list[str] = []


def _count_opens(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _RECORDING and args and str(args[0]) == _RECORDING[0]:
        OPEN_EVENTS.append(str(args[0]))


@pytest.fixture
def opens_of() -> Iterator[Any]:
    """The times the process opens a file, as the interpreter's audit hook sees every open (open(), os.open)."""
    if not getattr(sys, "_aicr_counting_opens", False):
        sys.addaudithook(_count_opens)  # an audit hook stays for the process: it counts only while asked
        sys._aicr_counting_opens = True  # type: ignore[attr-defined]

    def counting(path: Path) -> list[str]:
        OPEN_EVENTS.clear()
        _RECORDING[:] = [str(path)]
        return OPEN_EVENTS

    yield counting
    _RECORDING.clear()


POLICY = "apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\npolicies: {}\n"


def test_a_fleet_write_reads_its_policy_file_once_whatever_the_number_of_clusters(
        fleet: Planes, tmp_path: Path, opens_of: Any) -> None:
    import io

    from aicr_core.framework.app import AicrApp

    digest, _names = fleet.seed_plan()
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    for words in (["approve", "--plan", digest, "--contexts", LIVE, "--reason", "CHG-1", "--yes", "--dry-run=server"],
                  ["policy", "check", "--plan", digest, "--contexts", LIVE, "--reason", "CHG-1"]):
        opens = opens_of(policy)
        out, err = io.StringIO(), io.StringIO()
        code = AicrApp(stdout=out, stderr=err).run([*words, "--policy-file", str(policy), "-o", "json",
                                                    "--kubeconfig", str(fleet.kubeconfig)])
        document = json.loads(out.getvalue())
        compare((code, len(document["items"])), expected=(0, 3), suffix=err.getvalue())  # three clusters
        compare(len(opens), expected=1, suffix=f"{words[0]}: {opens}")
