"""The decisions of approve, revoke, acknowledge and reproduce, without a cluster."""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from testfixtures import Replacer, ShouldRaise, compare, mock_datetime

from aicr_commands import reproduce
from aicr_core import clock
from aicr_core.domain import action_rules as actions
from aicr_core.domain import operator_api as api
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.errors import AicrError

from support.samples import rollout

UTC = dt.timezone.utc
APPROVAL = {"user": "bob", "expires": "2026-11-30T02:00:00Z", "reason": "r"}


def test_expiry_arithmetic_with_a_frozen_clock() -> None:
    with Replacer() as replace:
        frozen = mock_datetime(2026, 11, 29, 21, 0, 0, 500000, tzinfo=UTC, delta=0)
        replace("aicr_core.clock.datetime", frozen)
        now = clock.now()
        compare(now, expected=dt.datetime(2026, 11, 29, 21, tzinfo=UTC))  # second precision
        r = parse_rollout(rollout())
        compare(actions.approval_expiry(r, dt.timedelta(minutes=90), now),
                expected=dt.datetime(2026, 11, 29, 22, 30, tzinfo=UTC))
        compare(actions.approval_expiry(r, None, now), expected=dt.datetime(2026, 11, 30, 6, tzinfo=UTC))
        late = clock.parse_time("2026-11-30T06:00:00Z")
        with ShouldRaise(AicrError("DEADLINE_PASSED", "rollout rollout-3f9a1c0d2b7e4a51-1's deadline "
                                   "2026-11-30T06:00:00Z has passed; pass --expires to approve anyway")):
            actions.approval_expiry(r, None, late)
        compare(actions.approval_expiry(r, dt.timedelta(hours=1), late), expected=late + dt.timedelta(hours=1))


@pytest.mark.parametrize("raw,code", [
    (rollout(status={"phase": "Ended", "outcome": "Expired"}), "ENDED"),
    (rollout(approvalRequired=False), "APPROVAL_NOT_REQUIRED"),
    (rollout(approval=APPROVAL), "ALREADY_APPROVED"),
])
def test_approve_refusals(raw: dict, code: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(AicrError) as caught:
        actions.approval_expiry(parse_rollout(raw), None, dt.datetime(2026, 11, 29, tzinfo=UTC))
    compare(caught.value.code, expected=code)


@pytest.mark.parametrize("raw,code", [
    (rollout(), "NOT_APPROVED"),
    (rollout(approval=APPROVAL, revocation={"user": "a", "time": "2026-11-29T00:00:00Z", "reason": "x"}),
     "ALREADY_REVOKED"),
    (rollout(approval=APPROVAL, status={"phase": "Ended"}), "ENDED"),
])
def test_revoke_refusals(raw: dict, code: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(AicrError) as caught:
        actions.refuse_revocation(parse_rollout(raw))
    compare(caught.value.code, expected=code)


def test_acknowledge_decisions() -> None:
    waiting = rollout(status={"phase": "AwaitingAcknowledgement", "awaitingRelease": "nvsentinel"})
    compare(actions.awaited_release(parse_rollout(waiting)), expected="nvsentinel")
    done = dict(waiting, spec=dict(waiting["spec"], acknowledgements=[
        {"release": "nvsentinel", "user": "bob", "time": "2026-11-29T00:00:00Z"}]))
    for raw in (rollout(), done):
        with pytest.raises(AicrError) as caught:
            actions.awaited_release(parse_rollout(raw))
        compare(caught.value.code, expected="NOT_AWAITING_ACKNOWLEDGEMENT")


IMAGE = "ghcr.io/nvidia/aicr@sha256:" + "1" * 64
BUNDLE = "oci://registry.example.com/aicr/cluster/bundles@sha256:" + "2" * 64


def plan(**data: str | None) -> api.Plan:
    recipe = '{"kind": "RecipeResult"}'
    base = {"recipe.json": recipe, "recipeDigest": api.sha256_digest(recipe), "renderFlags": "[]",
            "aicrImage": IMAGE, "bundle": BUNDLE}
    base.update(data)
    return api.parse_plan({"metadata": {"name": "aicr-plan-" + "a" * 16,
                                        "annotations": {"operator.aicr.run/digest": "sha256:" + "a" * 64}},
                           "data": {k: v for k, v in base.items() if v is not None}})


def test_reproduce_refusals() -> None:
    name, digest = "aicr-plan-" + "a" * 16, "sha256:" + "a" * 64
    compare(reproduce.checked_recipe(plan(), name, digest), expected='{"kind": "RecipeResult"}')
    compare(reproduce.checked_recipe(plan(), name, None), expected='{"kind": "RecipeResult"}')
    for p, code in ((plan(**{"recipe.json": None}), "NO_RECIPE"), (plan(renderFlags=None), "NO_RENDER_FLAGS"),
                    (plan(recipeDigest="sha256:" + "0" * 64), "DIGEST_MISMATCH")):
        with pytest.raises(AicrError) as caught:
            reproduce.checked_recipe(p, name, digest)
        compare(caught.value.code, expected=code)
    with pytest.raises(AicrError) as caught:
        reproduce.checked_recipe(plan(), name, "sha256:" + "b" * 64)
    compare(caught.value.code, expected="NOT_FOUND")


def test_hostile_values_are_quoted() -> None:
    p = plan(renderFlags='["--x", "a; rm -rf /", "$(id)", "it\'s"]')
    reproduce.check_references(p)  # any string is a fine render flag: it reaches the container, quoted
    cmds = reproduce.commands(p, Path("/tmp/my dir"))
    assert "'a; rm -rf /' '$(id)' 'it'\"'\"'s'" in cmds["render"]
    assert "'/tmp/my dir:/work'" in cmds["render"]
    compare(cmds["pull"], expected=f"oras pull {BUNDLE[6:]} --output '/tmp/my dir/operator-bundle'")


@pytest.mark.parametrize("field,value,message", [
    ("aicrImage", "--privileged", "aicrImage '--privileged' is not an image reference pinned by digest"),
    ("aicrImage", "-v/:/host", "aicrImage '-v/:/host' is not an image reference pinned by digest"),
    ("aicrImage", "", "aicrImage '' is not an image reference pinned by digest"),
    ("aicrImage", None, "aicrImage '' is not an image reference pinned by digest"),
    ("aicrImage", "ghcr.io/nvidia/aicr:v1", "aicrImage 'ghcr.io/nvidia/aicr:v1' is not an image reference"),
    ("aicrImage", "ghcr.io/nvidia/aicr@sha256:x`id`", "is not an image reference pinned by digest"),
    ("aicrImage", IMAGE + "\n", "is not an image reference pinned by digest"),
    ("aicrImage", "ghcr.io/nvidia/AICR@sha256:" + "1" * 64, "is not an image reference pinned by digest"),
    ("aicrImage", "aicr@sha256:" + "1" * 64, "is not an image reference pinned by digest"),
    ("aicrImage", "ghcr.io/nvidia/aicr --privileged@sha256:" + "1" * 64, "is not an image reference"),
    ("bundle", "", "bundle '' is not an OCI reference pinned by digest"),
    ("bundle", BUNDLE[6:], "is not an OCI reference pinned by digest (oci://"),
    ("bundle", "oci://--output=/etc@sha256:" + "2" * 64, "is not an OCI reference pinned by digest"),
    ("renderFlags", '["--x", 5]', "renderFlags[1] is not a string"),
    ("renderFlags", '{"--x": 1}', "renderFlags is not a JSON array of strings"),
    ("renderFlags", '["ok", "a\\u001b[2Jb"]', "renderFlags[1] 'a\\x1b[2Jb' holds a control or format character"),
    ("renderFlags", '["\\u202eok"]', "renderFlags[0] '\\u202eok' holds a control or format character"),
])
def test_a_plan_that_is_not_well_formed_is_refused(field: str, value: str | None, message: str) -> None:
    name, digest = "aicr-plan-" + "a" * 16, "sha256:" + "a" * 64
    with pytest.raises(AicrError) as caught:
        reproduce.checked_recipe(plan(**{field: value}), name, digest)
    compare(caught.value.code, expected="INVALID_PLAN")
    assert message in caught.value.message, caught.value.message


@pytest.mark.parametrize("reference", [
    IMAGE, "ghcr.io/nvidia/aicr:v25.10.0@sha256:" + "1" * 64, "localhost:5000/a/b__c.d-e@sha256:" + "1" * 64,
    "[::1]:5000/aicr@sha256:" + "1" * 64, "registry-1.docker.io/library/ubuntu@sha256:" + "f" * 64,
])
def test_pinned_references_pass(reference: str) -> None:
    reproduce.check_references(plan(aicrImage=reference, bundle="oci://" + reference))


def test_atomic_write_never_leaves_half_a_file(tmp_path: Path) -> None:
    target = tmp_path / "new" / "recipe.json"
    reproduce.write_atomically(target, "first")
    assert os.stat(target).st_mode & 0o044 == 0o044  # readable by the container's user (umask permitting)
    mtime = os.stat(target).st_mtime_ns
    reproduce.write_atomically(target, "first")  # same bytes: left alone
    compare(os.stat(target).st_mtime_ns, expected=mtime)
    with Replacer() as replace:
        def broken_fsync(fd: int) -> None:
            raise OSError(28, "No space left on device")
        replace("os.fsync", broken_fsync)
        with ShouldRaise(AicrError("WRITE_FAILED", f"cannot write {target}: No space left on device")):
            reproduce.write_atomically(target, "second")
    compare((target.read_text(), sorted(p.name for p in target.parent.iterdir())), expected=("first", ["recipe.json"]))
