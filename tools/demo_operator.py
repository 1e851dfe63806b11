"""The demo's stand-in for the AICR operator: it moves the rollouts on, as the operator would.

A thread of `tools/testbed.py demo`. Every half second it lists each cluster's rollouts as the
operator's own user (`aicr-operator`, bound by manifests/30-rbac.yaml to what the operator may
do) and writes what the operator would, through the status subresource:

- an approved rollout (or one that needs no approval) goes `Progressing`, its steps `InFlight`
  then `Ready`, one step every PACE_SECONDS;
- a step whose release has `afterApply` steps in the rollout's records waits in
  `AwaitingAcknowledgement` until someone acknowledges that release;
- after the last step, `Validating`, then `Ended` `Succeeded` (the outcome label set too) and
  the ClusterRuntime's active plan is the rollout's, its Ready condition True;
- a revoked rollout ends `Revoked`; one not approved by its deadline ends `Expired`.

It reads rollouts with the plugin's own parser (aicr_core.domain.rollouts.parse_rollout), so it sees them as
`kubectl aicr` does. It never touches `spec`: that is the people's (approve, revoke, acknowledge).
"""
from __future__ import annotations

import datetime as dt
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, cast

import envtest

PACE_SECONDS = 2.0   # between two transitions of one rollout: slow enough to watch, quick enough to wait for
TICK_SECONDS = 0.5   # how often every cluster is looked at
REQUEST_SECONDS = 10.0  # one call's bound: a round that cannot finish in it is tried again at the next tick
STOP_SECONDS = 1.0   # how long a stop waits for a round in flight (the thread is a daemon: the planes stop next)
USER = "aicr-operator"


class Cluster:
    """One control plane as the operator's user sees it."""

    def __init__(self, context: str, plane: envtest.ControlPlane) -> None:
        from kubernetes import client

        self.context = context
        self.custom = client.CustomObjectsApi(plane.api(USER))

    def rollouts(self) -> list[dict[str, Any]]:
        found = cast(dict[str, Any], self.custom.list_cluster_custom_object(
            envtest.GROUP, envtest.VERSION, "runtimerollouts", _request_timeout=REQUEST_SECONDS))
        return list(found.get("items", []))

    def write_status(self, name: str, resource_version: str, status: dict[str, Any]) -> str:
        """The status, only onto the version read (a reset may have put a new rollout of that name there
        meanwhile: then 409, and the next round reads it afresh); the new resourceVersion."""
        written = cast(dict[str, Any], self.custom.patch_cluster_custom_object_status(
            envtest.GROUP, envtest.VERSION, "runtimerollouts", name,
            {"metadata": {"resourceVersion": resource_version}, "status": status},
            _content_type="application/merge-patch+json", _request_timeout=REQUEST_SECONDS))
        return str(written["metadata"]["resourceVersion"])

    def label_outcome(self, name: str, resource_version: str, outcome: str) -> None:
        self.custom.patch_cluster_custom_object(
            envtest.GROUP, envtest.VERSION, "runtimerollouts", name,
            {"metadata": {"resourceVersion": resource_version, "labels": {envtest.OUTCOME_LABEL: outcome}}},
            _content_type="application/merge-patch+json", _request_timeout=REQUEST_SECONDS)

    def runtime_succeeded(self, digest: str) -> None:
        """The ClusterRuntime after a rollout succeeded: its plan active, no candidate, Ready."""
        from aicr_core.domain import operator_api as api

        condition = {"type": "Ready", "status": "True", "reason": "RolloutSucceeded",
                     "message": "the active plan is deployed and validated",
                     "lastTransitionTime": envtest.rfc3339(dt.datetime.now(dt.timezone.utc))}
        self.custom.patch_cluster_custom_object_status(
            envtest.GROUP, envtest.VERSION, "clusterruntimes", api.RUNTIME_NAME,
            {"status": {"activePlan": {"digest": digest}, "candidatePlan": None, "conditions": [condition]}},
            _content_type="application/merge-patch+json", _request_timeout=REQUEST_SECONDS)


def step_states(rollout: Any) -> list[dict[str, str]]:
    return [{"release": s.release, "state": s.state, "message": s.message} for s in rollout.steps]


def post_apply_releases(rollout: Any) -> set[str]:
    """The releases whose transition record lists steps to do after the apply: they wait for a person."""
    return {record.release for record in rollout.records if record.after_apply}


def acknowledged(rollout: Any, release: str) -> bool:
    return any(a.release == release for a in rollout.acknowledgements)


def next_status(rollout: Any, now: dt.datetime) -> dict[str, Any] | None:
    """What the operator writes next for this rollout (status, with "outcome" once it ends); None: nothing."""
    from aicr_core.domain import operator_api as api

    if rollout.ended:
        return None
    steps = step_states(rollout)
    if rollout.revocation is not None:
        return ended(steps, "Revoked", f"revoked by {rollout.revocation.user}: {rollout.revocation.reason}")
    if rollout.approval is None and rollout.approval_required:
        if rollout.deadline is not None and now >= rollout.deadline:
            return ended(steps, "Expired", "not approved before the deadline")
        return None
    if rollout.phase in ("Pending", api.PHASE_AWAITING_APPROVAL):
        return start_next(steps, rollout)
    if rollout.phase == api.PHASE_AWAITING_ACKNOWLEDGEMENT:
        if not acknowledged(rollout, rollout.awaiting_release):
            return None
        for step in steps:
            if step["release"] == rollout.awaiting_release and step["state"] == "AwaitingAcknowledgement":
                step["state"], step["message"] = "Ready", "acknowledged"
        return start_next(steps, rollout)
    if rollout.phase == "Progressing":
        current = next((s for s in steps if s["state"] == "InFlight"), None)
        if current is None:
            return start_next(steps, rollout)
        if current["release"] in post_apply_releases(rollout) and not acknowledged(rollout, current["release"]):
            current["state"], current["message"] = "AwaitingAcknowledgement", "applied; its after-apply steps wait"
            return {"phase": api.PHASE_AWAITING_ACKNOWLEDGEMENT, "awaitingRelease": current["release"],
                    "message": f"waiting for acknowledgement of {current['release']}", "steps": steps}
        current["state"], current["message"] = "Ready", "applied"
        return start_next(steps, rollout)
    if rollout.phase == "Validating":
        return ended(steps, "Succeeded", "rollout succeeded")
    return None


def start_next(steps: list[dict[str, str]], rollout: Any) -> dict[str, Any]:
    """The step in flight (the seeded rollouts have one already), else the next Pending one InFlight, or
    Validating when none is left."""
    for index, step in enumerate(steps):
        if step["state"] in ("Pending", "InFlight"):
            step["state"], step["message"] = "InFlight", "applying"
            planned = rollout.steps[index]
            return {"phase": "Progressing", "awaitingRelease": "", "steps": steps,
                    "message": f"step {index + 1}/{len(steps)} {planned.release} ({planned.operation})"}
    return {"phase": "Validating", "awaitingRelease": "", "message": "validating the deployment", "steps": steps}


def ended(steps: list[dict[str, str]], outcome: str, message: str) -> dict[str, Any]:
    return {"phase": "Ended", "outcome": outcome, "awaitingRelease": "", "message": message, "steps": steps}


class OperatorStandIn:
    """The loop, on a thread of its own: start() and stop(); errors of one round are printed, not fatal."""

    def __init__(self, planes: Sequence[tuple[str, envtest.ControlPlane]], pace: float = PACE_SECONDS) -> None:
        self.clusters = [Cluster(context, plane) for context, plane in planes]
        self.pace = pace
        self.last_write: dict[tuple[str, str, str], float] = {}  # (context, name, uid): when we last wrote it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="operator-stand-in", daemon=True)

    def start(self) -> OperatorStandIn:
        self._thread.start()
        return self

    def stop(self) -> None:
        """The loop told to end; a round in flight is waited for STOP_SECONDS at most, not a request's whole
        bound: the demo's stop must be quick, even on a loaded machine (docs/contributing.md). The planes
        stop right after this; the flag keeps what the round then meets from being printed."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=STOP_SECONDS)

    def _run(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            for cluster in self.clusters:
                try:
                    self.round(cluster)
                except Exception as err:  # noqa: BLE001 - a plane stopping under us, say: try again next tick
                    if not self._stop.is_set():
                        print(f"operator stand-in: {cluster.context}: {type(err).__name__}: {err}",
                              file=sys.stderr, flush=True)

    def round(self, cluster: Cluster) -> None:
        from kubernetes.client.exceptions import ApiException

        from aicr_core.domain import operator_api as api
        from aicr_core.domain import rollouts
        from aicr_core.errors import AicrError

        now = dt.datetime.now(dt.timezone.utc)
        for obj in cluster.rollouts():
            try:
                rollout = rollouts.parse_rollout(obj)
            except AicrError:
                continue  # not a rollout the operator could have written: leave it alone
            key = (cluster.context, rollout.name, str(obj.get("metadata", {}).get("uid", "")))
            status = next_status(rollout, now)
            if status is None:
                continue
            moving_on = status.get("outcome") not in ("Revoked", "Expired")  # those are at once
            if moving_on and rollout.phase not in ("Pending", api.PHASE_AWAITING_APPROVAL) \
                    and time.monotonic() - self.last_write.get(key, 0.0) < self.pace:
                continue
            try:
                version = cluster.write_status(rollout.name, rollout.resource_version, status)
            except ApiException as err:
                if err.status in (404, 409):  # deleted, or changed since it was read: the next round sees it
                    continue
                raise
            self.last_write[key] = time.monotonic()
            if status["phase"] == api.PHASE_ENDED:
                cluster.label_outcome(rollout.name, version, status["outcome"])
                if status["outcome"] == "Succeeded":
                    cluster.runtime_succeeded(rollout.to_digest)
