"""The progress line's words and its drawing around the waves' event lines (pure: a terminal stand-in).

The line on a real pseudo-terminal, over 8 clusters, is tests/cli/test_fleet_progress.py; here, the
order of what reaches the terminal when `--waves` prints its event lines while the line is shown.
"""
from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.fleet import flags, wave_runner
from aicr_core.fleet.fan_out import Tally
from aicr_core.fleet.progress_line import ERASE, ProgressLine, words
from aicr_core.fleet.wave_runner import WaveLine
from aicr_core.fleet.write_items import FleetWritten, item
from aicr_core.framework.result import Progress, Result


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class App:
    def __init__(self, stderr: io.StringIO) -> None:
        self.stderr = stderr

    def print_error(self, err: Any) -> None:
        self.stderr.write(f"error: {err}\n")

    def warn(self, message: str) -> None:
        self.stderr.write(f"warning: {message}\n")


class Command:
    def __init__(self, stderr: io.StringIO) -> None:
        self.app = App(stderr)


class Eight:
    contexts = [f"c{i}" for i in range(8)]


def test_the_words() -> None:
    compare(words(Tally(3, 8, 1)), expected="3/8 clusters, 1 failed")
    compare(words(Tally(0, 2, 0, "canary")), expected="0/2 clusters, 0 failed, wave canary")
    compare(words(Tally(1, 2, 0, "can\x1bary")), expected="1/2 clusters, 0 failed, wave can\\x1bary")


def test_redrawn_in_place_cleared_for_another_line_and_erased_at_the_end() -> None:
    terminal = Terminal()
    line = ProgressLine(terminal)
    line.show(Tally(0, 8, 0))
    line.show(Tally(1, 8, 1))
    line.clear()
    terminal.write("another line\n")
    line.redraw()
    line.end()
    line.redraw()  # ended: nothing to redraw until it is shown again
    compare(terminal.getvalue(), expected=f"{ERASE}0/8 clusters, 0 failed{ERASE}1/8 clusters, 1 failed{ERASE}"
                                          f"another line\n{ERASE}1/8 clusters, 1 failed{ERASE}")


def test_the_waves_event_lines_clear_the_line_and_it_is_redrawn_after_each(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()

    def waves(*_: Any, progress: Any, **__: Any) -> Iterator[Any]:
        progress(Tally(0, 2, 0, "canary"))
        yield WaveLine("10:00:00 wave canary: started (2 clusters: c0, c1)")
        progress(Tally(1, 2, 0, "canary"))
        yield WaveLine("c0, c1 resolve to one server", warning=True)
        progress(Tally(2, 2, 0, "canary"))
        yield FleetWritten([{**item("c0", "succeeded", "rollout-a-1"), "wave": "canary"}])

    monkeypatch.setattr(wave_runner, "approve_in_waves", waves)
    args = argparse.Namespace(output="text", plan="sha256:" + "a" * 64, yes=True)
    for event in flags.waves_stream(Command(terminal), args, Eight(), None, [], None):  # type: ignore[arg-type]
        if isinstance(event, Progress):  # as the app writes a stream's Progress lines
            terminal.write(event.message + "\n")
        else:
            assert isinstance(event, Result)
            compare((event.kind, event.exit_code, event.names),
                    expected=("FleetWrite", 0, ("c0/runtimerollout.operator.aicr.run/rollout-a-1",)))
    compare(terminal.getvalue().split(ERASE), expected=[
        "", "0/2 clusters, 0 failed, wave canary",
        "10:00:00 wave canary: started (2 clusters: c0, c1)\n", "0/2 clusters, 0 failed, wave canary",
        "1/2 clusters, 0 failed, wave canary",
        "warning: c0, c1 resolve to one server\n", "1/2 clusters, 0 failed, wave canary",
        "2/2 clusters, 0 failed, wave canary", ""])


@pytest.mark.parametrize(("output", "clusters", "tty"), [("json", 8, True), ("text", 4, True), ("text", 8, False)])
def test_no_line_off_a_terminal_for_a_small_fleet_or_any_other_output(output: str, clusters: int, tty: bool) -> None:
    stderr = Terminal() if tty else io.StringIO()
    compare(flags.progress_line(Command(stderr), argparse.Namespace(output=output), clusters),  # type: ignore[arg-type]
            expected=None)
    assert flags.progress_line(Command(Terminal()), argparse.Namespace(output="text"), 5) is not None  # type: ignore[arg-type]
