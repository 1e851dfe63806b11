"""An approval that would be expired when written is a usage error before any request (issue 14, item 2)."""
from __future__ import annotations

from pathlib import Path

import pytest
from testfixtures import compare

from support.fake_apiserver import Respond, fake_apiserver
from support.harness import Aicr, error_line
from support.samples import ROLLOUT

R = ROLLOUT["metadata"]["name"]


@pytest.mark.parametrize("command", [("approve", R), ("policy", "check", R)])
@pytest.mark.parametrize("expires", ["0s", "-0s", "1ns", "59s"])
def test_an_expiry_under_the_minimum_is_refused_before_any_call(aicr: Aicr, tmp_path: Path, expires: str,
                                                                command: tuple[str, ...]) -> None:
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr(*command, "--reason", "CHG-1", "--expires", expires, kubeconfig=kc)
        compare((proc.returncode, error_line(proc)), expected=(
            2, f"error: [USAGE] --expires {expires} is shorter than the minimum, 1m: an approval that ends before "
               "it is stored, or right after, approves nothing"), suffix=proc.stderr)
        compare(server.requests, expected=[])
