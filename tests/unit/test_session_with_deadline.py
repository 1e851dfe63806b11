"""`KubeSession.with_deadline`: one session's settings and kept connections under another deadline.

What describe's Events read on its thread, `list`'s reports read beside the rollouts and each admission
request of the webhook use instead of copying a session by hand.
"""
from __future__ import annotations

from pathlib import Path

from testfixtures import ShouldRaise, compare

from aicr_core.errors import AicrError
from aicr_core.session import kube
from aicr_core.session.deadline import Deadline

from support.fake_apiserver import Respond, fake_apiserver


def test_another_deadline_on_the_same_pool(tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, [Respond(200, {"metadata": {}, "items": []})]) as server:
        session = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(10))
        session.hold_writes = lambda: False
        session.writes_sent = 3
        beside = session.with_deadline(Deadline(5))
        compare((beside.deadline.seconds, session.deadline.seconds), expected=(5, 10))
        assert beside.api is session.api and beside.settings is session.settings
        assert beside.hold_writes is session.hold_writes  # an interrupted fleet holds the copy's writes too
        compare((beside.writes_sent, session.writes_sent), expected=(0, 3))  # each counts its own
        session.list("/apis/g/v1/things")
        beside.list("/apis/g/v1/things")
        compare(len(server.accepted), expected=1)  # the copy's read went on the connection kept
        beside.deadline.expire()
        with ShouldRaise(AicrError):
            beside.list("/apis/g/v1/things")
        session.list("/apis/g/v1/things")  # the session's own deadline is untouched
