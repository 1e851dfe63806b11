"""A write RBAC refuses, when what is lacking cannot be told: the refusal stands, and says why (pure logic).

What the message says when the access reviews answer is tested on the real control plane
(tests/cluster/test_rbac_refusals.py); here a stand-in session, for the two answers a real server
gives only in a race (RBAC changed between the PATCH and the reviews) or a failure (the reviews fail).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.domain import operator_api as api
from aicr_core.domain.actions import APPROVE
from aicr_core.domain.rollout_write import WriteRequest, write
from aicr_core.errors import AicrError, Code
from aicr_core.session.identity import Identity

from support.samples import rollout

NAME = "rollout-3f9a1c0d2b7e4a51-1"
SAID = f'runtimerollouts.operator.aicr.run "{NAME}" is forbidden: User "victor" cannot patch resource'


class RefusingSession:
    """Answers the write's reads (no ClusterRuntime, no policy file), refuses its PATCH as RBAC does."""

    def __init__(self, can_i: Callable[[], bool]) -> None:
        self._can_i = can_i

    def whoami(self) -> Identity:
        return Identity("victor", ("aicr:viewers",))

    def get(self, path: str, params: Any = None) -> dict[str, Any]:
        if path == api.rollout_path(NAME):
            return rollout()
        raise AicrError(Code.NOT_FOUND, "not found")

    def can_i(self, verb: str, **attributes: str) -> bool:
        return self._can_i()

    def patch(self, path: str, body: Any, *, dry_run: bool = False) -> dict[str, Any]:
        raise AicrError(Code.FORBIDDEN, SAID)


def unavailable() -> bool:
    raise AicrError(Code.UNAVAILABLE, "cannot connect to the API server: connection refused")


@pytest.mark.parametrize("can_i,why", [
    (lambda: True, "RBAC grants both permissions now: it may have changed since the write was refused"),
    (unavailable, "what is lacking could not be asked: cannot connect to the API server: connection refused"),
])
def test_the_refusal_stands_and_says_why_it_cannot_say_more(can_i: Callable[[], bool], why: str) -> None:
    request = WriteRequest(NAME, APPROVE, reason="CHG-1 window", expires=dt.timedelta(hours=1))
    with pytest.raises(AicrError) as caught:
        write(RefusingSession(can_i), request)  # type: ignore[arg-type]
    compare((caught.value.code, caught.value.message, list(caught.value.details)), expected=(
        Code.FORBIDDEN, f"victor may not approve rollout {NAME}: the API server refused the write (RBAC); "
        "nothing was written",
        [why, f"the API server said: {SAID}",
         "who you are, your groups and whether you may approve: kubectl aicr whoami"]))


def test_a_fleet_member_s_refusal_says_how_to_ask_that_member() -> None:
    """A context's row: whoami with its --context, quoted for a shell; an inventory member's row: no
    command that would ask another cluster (no single-cluster flag reaches it)."""
    from aicr_core.domain.rollout_write import WHOAMI_HINT
    from aicr_core.fleet import context_source, profile_source, write_items

    refused = AicrError(Code.FORBIDDEN, f"victor may not approve rollout {NAME}", ["not allowed: x", WHOAMI_HINT])
    for member, reach, last in (
            ("gpu-eu-2", context_source.single_cluster_flags("gpu-eu-2"), f"{WHOAMI_HINT} --context gpu-eu-2"),
            ("eu west; rm -rf /", context_source.single_cluster_flags("eu west; rm -rf /"),
             f"{WHOAMI_HINT} --context 'eu west; rm -rf /'"),
            ("-n", context_source.single_cluster_flags("-n"), f"{WHOAMI_HINT} --context=-n"),
            ("fleet/gpu-eu-2", profile_source.single_cluster_flags("fleet/gpu-eu-2"), None)):
        entry = write_items.refusal_item(member, NAME, refused, reach=reach)
        compare((entry["result"], entry["code"]), expected=("refused", "FORBIDDEN"))
        compare(entry["message"], expected=f"victor may not approve rollout {NAME}: not allowed: x"
                + (f"; {last}" if last else ""))


def test_a_write_left_unanswered_says_how_to_check_it_on_that_member() -> None:
    from aicr_core.fleet import context_source, write_items

    left = AicrError(Code.INTERRUPTED, "the approve was sent and had no answer")
    entry = write_items.refusal_item("eu 2", NAME, left, write_unanswered=True,
                                    reach=context_source.single_cluster_flags("eu 2"))
    compare((entry["result"], entry["message"]), expected=(
        "failed", f"the approve was sent and had no answer: check with kubectl aicr describe {NAME} --context 'eu 2'"))
    entry = write_items.refusal_item("fleet/eu-2", NAME, left, write_unanswered=True, reach=None)
    compare(entry["message"], expected="the approve was sent and had no answer: check its rollout on that cluster")
