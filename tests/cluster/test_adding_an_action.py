"""Adding an action is local: a row in the table with its rules and its hook, no other module changed.

A test-only action, `comment` (it records a comment in an annotation of the rollout), is added to
`ACTIONS` inside the test and runs, in-process, as the ordinary approver alice on the real control plane,
through the domain's write, `policy check`'s decision and the fleet's write: its own refusal, a policy
that decides it (installed here in-process, beside the installed ones), the conditional PATCH with the
policy-decision record, the per-cluster write and its result line; and `policy test` decides its cases
offline (a test file's `action` is any name of the table).
"""
from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import envtest
import pytest
from testfixtures import ShouldRaise, compare

from aicr_commands._action_command import ActionCommand
from aicr_core import clock
from aicr_core.domain import operator_api as api
from aicr_core.domain import policy_engine
from aicr_core.domain.action_rules import ActionRules
from aicr_core.domain.actions import ACTIONS, Action
from aicr_core.domain.hookspecs import Violation, hookimpl, hookspec
from aicr_core.domain.rollout_write import WriteRequest, write
from aicr_core.domain.write_flags import write_request
from aicr_core.errors import AicrError, Code
from aicr_core.fleet import plan_write as _fleet_write
from aicr_core.fleet.fan_out import Turn
from aicr_core.framework.app import AicrApp
from aicr_core.framework.result import Result
from aicr_core.session import kube

ANNOTATION = "test.aicr.run/comment"


class Comment(NamedTuple):
    user: str
    time: dt.datetime
    reason: str


def propose(rollout: api.Rollout, user: str, now: dt.datetime, reason: str, expires: dt.timedelta | None) -> Comment:
    if rollout.ended:
        raise AicrError(Code.ENDED, f"rollout {rollout.name} has ended; it takes no more comments")
    return Comment(user, now, reason)


def patch(rollout: api.Rollout, comment: Comment) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rollout.resource_version,
                         "annotations": {ANNOTATION: f"{comment.user}: {comment.reason}"}}}


def lost_race(current: api.Rollout) -> AicrError:
    return AicrError(Code.CONFLICT, f"rollout {current.name} changed while commenting; run the command again")


def document(comment: Comment) -> dict[str, Any]:
    return {"user": comment.user, "time": clock.format_time(comment.time), "reason": comment.reason}


class CommentHook:
    @hookspec
    def aicr_pre_comment(self, rollout: api.Rollout, comment: Comment, user: Any, context: Any) -> Any:
        """Decide whether `comment` may be recorded on `rollout`."""


class NoShouting:
    """A policy of the new action: a comment in capitals is refused."""

    @hookimpl
    def aicr_pre_comment(self, comment: Comment) -> Violation | None:
        return Violation("no-shouting", "a comment must not shout") if comment.reason.isupper() else None


COMMENT = Action("comment", "Comment on", "commented", "aicr_pre_comment", "comment", "Comment",
                 "commented by {user}: {reason}",
                 ActionRules(propose, patch, lost_race, lambda adds: (), document, CommentHook),
                 takes_reason=True)


class CommentCommand(ActionCommand):
    """Comment on a rollout (a test-only action: the one command class, configured by its Action)."""

    action = COMMENT


@pytest.fixture
def comment_action(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`comment` in the table, and its policy installed beside the installed ones, for this test only."""
    monkeypatch.setitem(ACTIONS, COMMENT.name, COMMENT)
    installed = policy_engine.load_policies

    def with_no_shouting() -> policy_engine.LoadedPolicies:
        loaded = installed()
        loaded.manager.register(NoShouting(), name="no-shouting")
        loaded.plugins["no-shouting"] = loaded.manager.get_plugin("no-shouting")
        return loaded

    monkeypatch.setattr(policy_engine, "load_policies", with_no_shouting)
    yield


def stored(plane: envtest.ControlPlane, name: str) -> dict[str, Any]:
    return json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)  # type: ignore[no-any-return]


def decisions(obj: dict[str, Any]) -> list[tuple[str, str]]:
    records = json.loads(obj["metadata"]["annotations"].get(api.ANNOTATION_DECISIONS, "[]"))
    return [(r["user"], r["action"]) for r in records]


@pytest.mark.usefixtures("comment_action")
def test_the_domain_write_runs_a_new_action(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout()
    session = kube.connect(str(plane.kubeconfig_for("alice")), None)
    written = write(session, WriteRequest(name, COMMENT, reason="looks fine to me"))
    compare((written.data["rollout"], written.data["user"], written.data["reason"], written.data["dryRun"]),
            expected=(name, "alice", "looks fine to me", "none"))
    obj = stored(plane, name)
    compare(obj["metadata"]["annotations"][ANNOTATION], expected="alice: looks fine to me")
    compare(decisions(obj), expected=[("alice", "comment")])  # the record names the new action
    # Its policy decides it: refused, nothing written.
    with ShouldRaise(AicrError(Code.POLICY_DENIED, "1 policy violation(s); nothing was written",
                               ["no-shouting: a comment must not shout"])):
        write(session, WriteRequest(name, COMMENT, reason="LOOKS FINE"))
    compare(stored(plane, name)["metadata"]["annotations"][ANNOTATION], expected="alice: looks fine to me")
    # Its own refusal comes first.
    ended = seed.rollout(phase="Ended", outcome="Failed")
    with ShouldRaise(AicrError(Code.ENDED, f"rollout {ended} has ended; it takes no more comments")):
        write(session, WriteRequest(ended, COMMENT, reason="too late"))


@pytest.mark.usefixtures("comment_action")
def test_policy_check_decides_a_new_action(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout()
    out, err = io.StringIO(), io.StringIO()
    code = AicrApp(stdout=out, stderr=err).run(["policy", "check", name, "--action", "comment", "--reason", "LOUD",
                                                "-o", "json", "--kubeconfig", str(plane.kubeconfig_for("alice"))])
    doc = json.loads(out.getvalue())
    compare((code, doc["action"], doc["allowed"], doc["code"], [(p["name"], p["verdict"]) for p in doc["policies"]]),
            expected=(1, "comment", False, "POLICY_DENIED", [("no-shouting", "deny")]), suffix=err.getvalue())
    compare(stored(plane, name)["metadata"].get("annotations", {}).get(ANNOTATION), expected=None)


@pytest.mark.usefixtures("comment_action")
def test_the_fleet_writes_a_new_action_per_cluster(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    digest = envtest.random_digest()
    name = seed.rollout(to=digest)
    out, err = io.StringIO(), io.StringIO()
    command = CommentCommand(AicrApp(stdout=out, stderr=err), None, cmd_name="comment")
    args = command.get_parser("kubectl aicr comment").parse_args([
        "--plan", digest, "--contexts", "alice", "--reason", "fine everywhere", "--yes",
        "--kubeconfig", str(plane.kubeconfig_for("alice"))])
    result = command.take_action(args)  # the one command class: --plan is its fleet form
    assert isinstance(result, Result), result
    compare([(i["context"], i["rollout"], i["result"], i["message"]) for i in result.data["items"]],
            expected=[("alice", name, "commented", "commented by alice: fine everywhere")])
    assert f"Comment on plan {digest}: 1 rollout in 1 cluster:" in err.getvalue(), err.getvalue()
    compare(stored(plane, name)["metadata"]["annotations"][ANNOTATION], expected="alice: fine everywhere")
    # The per-cluster write alone, as the waves call it: the policy's refusal is that cluster's result word.
    turn = Turn("alice", kube.connect(str(plane.kubeconfig_for("alice")), None), lambda _: None)
    shouted = command.get_parser("kubectl aicr comment").parse_args([name, "--reason", "SHOUTED"])
    entry, _warnings = _fleet_write.write_one(turn, write_request(vars(shouted), COMMENT), name)
    compare((entry["result"], entry["code"]), expected=("refused", "POLICY_DENIED"))


@pytest.mark.usefixtures("comment_action")
def test_policy_test_decides_a_new_action_offline(tmp_path: Path) -> None:
    """No cluster, no kubeconfig: the test file's cases of `comment` are decided as `policy check` would."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "policy-tests"
    trial = (examples / "trial-policy.aicr-test.yaml").read_text()
    head = trial[:trial.index("\ncases:")].replace("policy: trial-policy.yaml",
                                                    f"policy: {examples / 'trial-policy.yaml'}")
    case = ("  - name: {name}\n    rollout: rollout-3f9a1c0d2b7e4a51-1\n    action: comment\n    user: alice\n"
            "    reason: {reason}\n    at: \"2027-02-03T10:00:00Z\"\n    expect:\n      allowed: {allowed}\n"
            "      policies:\n        no-shouting: {verdict}\n")
    suite = tmp_path / "comment.aicr-test.yaml"
    suite.write_text(head + "\ncases:\n" + case.format(name="a quiet comment", reason="fine", allowed="true",
                                                       verdict="allow")
                     + case.format(name="a shouted comment", reason="LOUD", allowed="false", verdict="deny"))
    out, err = io.StringIO(), io.StringIO()
    code = AicrApp(stdout=out, stderr=err).run(["policy", "test", str(suite), "-o", "json",
                                                "--kubeconfig", str(tmp_path / "none")])
    doc = json.loads(out.getvalue())
    compare((code, [(c["case"], c["passed"]) for c in doc["items"]]), suffix=err.getvalue() + out.getvalue(),
            expected=(0, [("a quiet comment", True), ("a shouted comment", True)]))
