"""What an approver meets (issue 14, items 9-11) through the real `kubectl aicr`, against fake servers or none."""
from __future__ import annotations

from pathlib import Path

from testfixtures import compare

from support.fake_apiserver import fake_apiserver, status
from support.harness import Aicr, error_line
from support.samples import ROLLOUT

R = ROLLOUT["metadata"]["name"]


# -- item 9: bad input refused before any request ------------------------------------------------------

def test_a_reason_that_is_not_utf8_is_a_usage_error(aicr: Aicr, tmp_path: Path) -> None:
    """`--reason $'\\xff'` arrives as a lone surrogate; the server would store U+FFFD, not what was typed."""
    with fake_apiserver(tmp_path, [status(500, "no request was expected")]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        for command in ("approve", "revoke"):
            proc = aicr(command, R, "--reason", "window \udcff", kubeconfig=kc)
            compare((proc.returncode, error_line(proc)), expected=(
                2, "error: [USAGE] --reason holds bytes that are not UTF-8 text; check the terminal's encoding"),
                suffix=proc.stderr)
        compare(server.requests, expected=[])


def test_reproduce_refuses_a_dir_with_a_colon(aicr: Aicr, tmp_path: Path) -> None:
    """docker run -v 'a:b:/work' would mount `a` at `b`: the printed command would not be the check it claims."""
    with fake_apiserver(tmp_path, [status(500, "no request was expected")]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr("reproduce", "--dir", "a:b", kubeconfig=kc)
        compare(proc.returncode, expected=2, suffix=proc.stderr)
        assert error_line(proc).startswith(f"error: [USAGE] --dir a:b is {tmp_path}/a:b, whose colon docker run -v "
                                           "would split"), proc.stderr
        compare((server.requests, (tmp_path / "a:b").exists()), expected=([], False))
