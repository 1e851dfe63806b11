"""The progress line of long fleet work: on a terminal, over 8 clusters, `DONE/ALL clusters, F failed`.

The real `kubectl aicr` through the real kubectl, its stderr a pseudo-terminal, across 8 stand-in API
servers (bench/fleet_standins.py: each its own TLS port and CA, answering after a delay). The line
is redrawn in place, erased at the end, and never there when stderr is a file or with -o json.
"""
from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from testfixtures import compare

from support.harness import ROOT, Aicr, aicr_env

sys.path.insert(0, str(ROOT / "bench"))
import fleet_standins as standins  # noqa: E402

CLUSTERS = 8
LATENCY = 0.15  # each answer's delay: two at a time, the 8 clusters take a few rounds, so the line moves
ERASE = "\r\x1b[K"
DIGEST = "sha256:" + "ab" * 32  # a plan no stand-in holds: each cluster is read, none is written
LINE = re.compile(r"(\d+)/(\d+) clusters, (\d+) failed")


@pytest.fixture(scope="module")
def eight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A kubeconfig of 8 stand-in clusters, each holding 2 rollouts."""
    loop = standins.StandIns(LATENCY)
    try:
        servers = standins.fleet(loop, CLUSTERS, 2)
        yield standins.kubeconfig(tmp_path_factory.mktemp("eight") / "kubeconfig", servers, None)
    finally:
        loop.stop()


def under_a_terminal(aicr: Aicr, kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    """`kubectl aicr ARGS` with stderr a pseudo-terminal (stdout a pipe): its exit, stdout and what the terminal got."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([aicr.kubectl, "aicr", *args], stdout=subprocess.PIPE, stderr=terminal,
                            stdin=subprocess.DEVNULL, env=aicr_env(aicr.home, kubeconfig), cwd=aicr.cwd)
    os.close(terminal)
    screen = b""
    ends = time.monotonic() + 60
    while time.monotonic() < ends:
        ready, _, _ = select.select([controller], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's other end is closed: the command has ended
                break
            if not chunk:
                break
            screen += chunk
        elif proc.poll() is not None:
            break
    os.close(controller)
    out = proc.stdout.read().decode() if proc.stdout else ""
    return proc.wait(30), out, screen.decode()


def test_a_fleet_read_shows_the_line_on_a_terminal_and_erases_it(aicr: Aicr, eight: Path) -> None:
    code, out, screen = under_a_terminal(aicr, eight, "list", "--all-contexts", "--parallel", "2")
    compare(code, expected=0, suffix=screen)
    compare(len(out.splitlines()), expected=1 + CLUSTERS * 2)  # the table: the header, every cluster's rows
    draws = screen.split(ERASE)
    compare(draws[0], expected="")  # nothing before the line
    shown = [LINE.fullmatch(text) for text in draws[1:-1]]
    assert all(shown), draws
    figures = [tuple(int(n) for n in match.groups()) for match in shown if match]
    compare(figures[0], expected=(0, CLUSTERS, 0))
    compare(figures[-1], expected=(CLUSTERS, CLUSTERS, 0))
    compare([done for done, _all, _failed in figures], expected=list(range(CLUSTERS + 1)))  # one redraw a cluster
    compare(draws[-1], expected="")  # erased at the end: the terminal is left as it was


def test_a_fleet_write_shows_it_too(aicr: Aicr, eight: Path) -> None:
    """approve --plan: the line over its reads (no stand-in holds the plan, so nothing is written)."""
    code, out, screen = under_a_terminal(aicr, eight, "approve", "--plan", DIGEST, "--all-contexts",
                                         "--reason", "CHG-1", "--yes")
    compare(code, expected=0, suffix=screen)
    compare([line.split()[2] for line in out.splitlines()], expected=["skipped"] * CLUSTERS)
    assert f"{ERASE}{CLUSTERS}/{CLUSTERS} clusters, 0 failed{ERASE}" in screen, repr(screen)
    compare(screen.endswith(ERASE), expected=True)


def test_no_line_with_any_output_but_the_text_table(aicr: Aicr, eight: Path) -> None:
    for output in ("json", "wide", "name"):
        code, out, screen = under_a_terminal(aicr, eight, "list", "--all-contexts", "-o", output)
        compare((code, screen), expected=(0, ""), suffix=output)
        assert out, output


def test_no_line_when_stderr_is_not_a_terminal(aicr: Aicr, eight: Path) -> None:
    proc = aicr("list", "--all-contexts", "--parallel", "2", kubeconfig=eight)  # stderr a pipe
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    controller, terminal = pty.openpty()  # stdout a terminal, stderr a file: still none
    log = aicr.home / "stderr.log"
    with log.open("w") as stderr:
        code = subprocess.run([aicr.kubectl, "aicr", "list", "--all-contexts"], stdout=terminal, stderr=stderr,
                              stdin=subprocess.DEVNULL, env=aicr_env(aicr.home, eight), cwd=aicr.cwd,
                              timeout=60).returncode
    os.close(terminal)
    os.close(controller)
    compare((code, log.read_text()), expected=(0, ""))
