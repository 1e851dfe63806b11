"""Ctrl-C at any moment of a start is `error: [INTERRUPTED] interrupted` and exit 130 (aicr_core/framework/launch.py).

The moment that used to fail is the import of the application (about 0.1 s): Python printed the traceback
of whatever was being imported and died by the signal (-2). The test sends SIGINT to the real
`kubectl aicr` at several delays after the executable's own code started importing the application
(the first extension module it maps), through to the moment it waits on the API server.
"""
from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from testfixtures import compare

from support.fake_apiserver import Silent, fake_apiserver
from support.harness import aicr_env
from support.samples import ROLLOUT


def importing(pid: int) -> bool:
    """Whether the process maps an extension module: Python's start-up and `site` map none here."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True  # gone: communicate() will say how
    return "lib-dynload" in maps or "site-packages" in maps


@pytest.mark.parametrize("delay", [0.0, 0.005, 0.01, 0.02, 0.04, 0.07, 0.1, 0.2, 0.4])
def test_ctrl_c_while_starting_is_one_line_and_130(kubectl: str, tmp_path: Path, delay: float) -> None:
    with fake_apiserver(tmp_path, [Silent()]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = subprocess.Popen([kubectl, "aicr", "describe", ROLLOUT["metadata"]["name"]],
                                env=aicr_env(tmp_path, kc), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        waited = time.monotonic() + 20
        while not importing(proc.pid) and time.monotonic() < waited:
            time.sleep(0.0005)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    compare((proc.returncode, out, err), expected=(130, "", "error: [INTERRUPTED] interrupted\n"))
