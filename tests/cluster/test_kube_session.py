"""The session's primitives, in-process: pagination, watch events, dry run, access reviews, the request log.

Against the scripted fake server where exact requests matter, and against
the real API server for a real watch.
"""
from __future__ import annotations

import threading
import time

import envtest
from testfixtures import ShouldRaise, compare

from aicr_core.errors import AicrError, Code
from aicr_core.session import kube
from aicr_core.session.deadline import Deadline


def test_a_real_watch_sees_the_operators_change(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    from aicr_core.domain import operator_api as api

    name = seed.rollout()
    cluster = kube.connect(str(plane.kubeconfig_for("victor")), None, Deadline(20))
    version = cluster.get(api.rollout_path(name))["metadata"]["resourceVersion"]
    timer = threading.Timer(0.5, seed.set_rollout_status, (name, {"phase": "Progressing"}))
    timer.start()
    started = time.monotonic()
    for event in cluster.watch(api.rollout_path(name).rsplit("/", 1)[0], {
            "fieldSelector": f"metadata.name={name}", "resourceVersion": version, "timeoutSeconds": "15"}):
        if event["type"] == "MODIFIED":
            compare(event["object"]["status"]["phase"], expected="Progressing")
            break
    timer.join()
    assert time.monotonic() - started < 5  # it arrived as it happened, not at the stream's end


def test_a_field_the_clusters_schema_lacks_is_refused_not_pruned(plane: envtest.ControlPlane,
                                                                seed: envtest.Seeder) -> None:
    """Against an operator whose CRD has no such field, a write must fail loudly rather than drop it."""
    from aicr_core.domain import operator_api as api

    name = seed.rollout()
    cluster = kube.connect(str(plane.kubeconfig_for("alice")), None, Deadline(20))
    before = cluster.get(api.rollout_path(name))["metadata"]["resourceVersion"]
    with ShouldRaise(AicrError) as caught:
        cluster.patch(api.rollout_path(name), {"spec": {"notDeclaredAnywhere": {"user": "alice"}}})
    compare(caught.raised.code, expected=Code.INVALID_OBJECT)
    compare(caught.raised.message, expected="the cluster's schema has no field spec.notDeclaredAnywhere; nothing "
                                            "was written (is the operator older than this plugin?)")
    compare(cluster.get(api.rollout_path(name))["metadata"]["resourceVersion"], expected=before)

