"""The domain's read model called in-process on the real control plane, as a long-lived program (the
dashboard) calls it: a cluster's listing, its live rows, a rollout described by name, its Events, a wait.

Each answer is the document the real `kubectl aicr` prints for the same reads (`-o json` less `kind`).
The plane is shared by the session: the tests look for the rollouts they seeded.
"""
from __future__ import annotations

import json
import threading

import envtest
from testfixtures import ShouldRaise, compare

from aicr_core.domain import rollout_events
from aicr_core.domain.live_listing import Listed, LiveListing, RowChanged
from aicr_core.domain.rollout_description import describe_rollout, follow_description
from aicr_core.domain.rollout_listing import RolloutFilter, list_rollouts, read_listing
from aicr_core.domain.wait_conditions import parse_condition, wait_for
from aicr_core.errors import AicrError, Code
from aicr_core.session import kube
from aicr_core.session.deadline import Deadline

from support.harness import Aicr

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}
REPORT = json.dumps(envtest.SAMPLE_REPORT)


def session(plane: envtest.ControlPlane, seconds: float = 20) -> kube.KubeSession:
    return kube.connect(str(plane.kubeconfig_for("victor")), None, Deadline(seconds))


def cli(aicr: Aicr, plane: envtest.ControlPlane, *args: str) -> dict:  # type: ignore[type-arg]
    proc = aicr(*args, "-o", "json", kubeconfig=plane.kubeconfig_for("victor"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    doc = json.loads(proc.stdout)
    del doc["kind"]
    return doc  # type: ignore[no-any-return]


def test_a_clusters_listing_is_lists(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    waiting = seed.rollout(report=REPORT)
    ended = seed.rollout(phase="Ended", outcome="Succeeded", approval=APPROVED)
    for wanted, flags, beside in ((RolloutFilter(), (), True), (RolloutFilter(include_ended=True), ("--all",), False)):
        found = read_listing(session(plane), envtest.NAMESPACE, wanted, reports_beside=beside)
        mine = [i for i in found.items if i["name"] in (waiting, ended)]
        listed = [i for i in cli(aicr, plane, "list", *flags)["items"] if i["name"] in (waiting, ended)]
        compare(mine, expected=listed)
    by_name = {i["name"]: i for i in mine}  # two rollouts made in the same second may list in either order
    compare(by_name[waiting]["assessment"]["status"], expected="verified")
    compare(by_name[ended]["assessment"]["status"], expected="none")
    names = {r.name for r in list_rollouts(session(plane), f"{envtest.OUTCOME_LABEL}=Succeeded").rollouts}
    assert ended in names and waiting not in names  # the selector went to the server


def test_a_rollout_described_by_name_is_describes(aicr: Aicr, plane: envtest.ControlPlane,
                                                  seed: envtest.Seeder) -> None:
    name = seed.rollout(report=REPORT)
    compare(describe_rollout(session(plane), name, envtest.NAMESPACE, events=False),
            expected=cli(aicr, plane, "describe", name, "--show-events=false"))
    described = describe_rollout(session(plane), name, envtest.NAMESPACE)
    compare(described["events"], expected=rollout_events.read_events(session(plane), name))  # victor may list them
    with ShouldRaise(AicrError(Code.NOT_FOUND, "rollout rollout-0000000000000000-1 not found")):
        describe_rollout(session(plane), "rollout-0000000000000000-1")


def test_a_live_listing_follows_a_rollout_to_its_end(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout()
    live = LiveListing(session(plane), envtest.NAMESPACE)
    updates = iter(live)
    first = next(updates)
    assert isinstance(first, Listed) and name in [i["name"] for i in first.items], first
    assert name in [i["name"] for i in live.items()]
    seed.set_rollout_status(name, {"phase": "Ended", "outcome": "Failed"})
    for update in updates:  # other tests' rollouts may change meanwhile: ours is the one awaited
        if isinstance(update, RowChanged) and update.item["name"] == name:
            compare((update.item["phase"], update.item["outcome"], update.kind, update.kept),
                    expected=("Ended", "Failed", "MODIFIED", False))
            break
    updates.close()  # ends the watch
    assert name not in [i["name"] for i in live.items()]


def test_following_a_description_and_waiting_end_with_the_rollout(plane: envtest.ControlPlane,
                                                                  seed: envtest.Seeder) -> None:
    name = seed.rollout(phase="Progressing", approval=APPROVED)
    condition = parse_condition("ended")
    compare([step.met for step in wait_for(session(plane), name, condition, once=True)], expected=[False])
    timer = threading.Timer(0.5, seed.set_rollout_status, (name, {"phase": "Ended", "outcome": "Succeeded"}))
    timer.start()
    steps = list(wait_for(session(plane), name, condition))
    timer.join()
    compare([(s.rollout.phase, s.met) for s in steps][-1], expected=("Ended", True))
    compare([d["phase"] for d in follow_description(session(plane), name, envtest.NAMESPACE)], expected=["Ended"])
    needless = seed.rollout(approval_required=False)
    with ShouldRaise(AicrError(Code.UNREACHABLE, f"rollout {needless} needs no approval: approved can never hold")):
        list(wait_for(session(plane), needless, parse_condition("approved")))
