"""One thread a cluster keeping its rows in the model: the live listing of `list --watch`, and who the user is there.

Each thread connects its cluster (its source connects it, as the fleet's turns do), asks who the
user is and whether they may approve there (a SelfSubjectReview and a SelfSubjectAccessReview,
under a deadline of their own), then iterates `aicr_core.domain.live_listing.LiveListing` over
every rollout (ended ones too: the model keeps them; the pages filter as `list` does): one LIST,
then the watch, resumed and backed off as `list --watch` is (aicr_core/session/watch.py). When the
listing fails (the server stayed unreachable, the CRDs went away, the credentials expired) the
cluster is marked disconnected with its error, its rows kept, and the thread starts again after a
pause that doubles up to RETRY_MAX_SECONDS: a cluster that answers again is listed again, with no
restart. The threads are daemons: the process's end ends them (a watch holds no write).
"""
from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from aicr_core.errors import AicrError, Code

if TYPE_CHECKING:
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import KubeSession
    from aicr_dashboard.fleet_model import FleetModel

Connect = Callable[["Deadline"], "KubeSession"]
RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS = 1.0, 15.0
REVIEW_SECONDS = 15.0  # who-am-I and the access review at a (re)connect


def ask_identity(model: FleetModel, context: str, session: KubeSession) -> None:
    """Who the user is there and whether they may approve (update on runtimerollouts/approve)."""
    from aicr_core.domain import operator_api as api
    from aicr_core.session.deadline import Deadline

    review = session.with_deadline(Deadline(REVIEW_SECONDS, name=f"context {context}"))
    me = review.whoami()
    try:
        may: bool | None = review.can_i(**api.approver_access(""))
    except AicrError:
        may = None  # not known: the buttons stay, and the server decides at the write
    model.identity(context, me.username, may, session)


def follow(model: FleetModel, context: str, connect: Connect, namespace: str, stop: threading.Event) -> None:
    """The cluster's watch, again and again until `stop`: see the module's doc."""
    from aicr_core.domain.live_listing import Listed, LiveListing, RowChanged
    from aicr_core.domain.rollout_listing import RolloutFilter
    from aicr_core.session.deadline import Deadline

    every = RolloutFilter(include_ended=True)
    pause = RETRY_FIRST_SECONDS
    while not stop.is_set():
        try:
            session = connect(Deadline(math.inf, name=f"context {context}"))
            ask_identity(model, context, session)
            def reachability(error: AicrError | None) -> None:  # at once, not when the follower gives up
                if error is None:
                    model.reconnected(context)
                else:
                    model.failed(context, error)

            live = LiveListing(session, namespace, every, reachability=reachability)
            for update in live:
                if stop.is_set():
                    return
                if isinstance(update, Listed):
                    objects = {i["name"]: live.object_of(i["name"]) for i in update.items}
                    model.listed(context, update.items, session, objects)
                    pause = RETRY_FIRST_SECONDS
                elif isinstance(update, RowChanged):
                    model.changed(context, update.item, update.kept, live.object_of(update.item["name"]))
            model.failed(context, AicrError(Code.UNAVAILABLE, "the watch ended"))
        except AicrError as err:
            model.failed(context, err)
        except Exception as err:  # noqa: BLE001 - a bug of one cluster's thread must not end the others
            model.failed(context, AicrError(Code.INTERNAL, f"{type(err).__name__}: {err}"))
        if stop.wait(pause):
            return
        pause = min(pause * 2, RETRY_MAX_SECONDS)


def start(model: FleetModel, connects: dict[str, Connect], namespace: str) -> threading.Event:
    """A daemon thread a cluster; set the returned event to stop them at their next change."""
    stop = threading.Event()
    for context, connect in connects.items():
        threading.Thread(target=follow, args=(model, context, connect, namespace, stop),
                         name=f"aicr-dashboard-watch {context}", daemon=True).start()
    return stop
