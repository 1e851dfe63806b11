"""What the Go builds of tools/ share (tools/go_builds.py): failures that say what to do, never a traceback."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import go_builds
import go_tools
from testfixtures import ShouldRaise, compare


def test_a_go_tool_without_go_is_a_clear_error(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, go_tools.__file__, "krew"], capture_output=True, text=True, env=env)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    assert "error: Go is not installed (need go >= the version krew v0.4.3 names)" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr
    assert not (tmp_path / "cache" / "aicr-go-tools" / "krew-v0.4.3").exists()


def test_a_failing_go_command_names_itself_and_its_last_lines(tmp_path: Path) -> None:
    with ShouldRaise(go_builds.BuildError) as caught:
        go_builds.run(["go", "help", "no-such-topic"], go_builds.go_env(), cwd=tmp_path)
    message = str(caught.raised)
    assert message.startswith("`go help no-such-topic` failed:\n") and "no-such-topic" in message.split("\n", 1)[1], \
        message


def test_a_program_that_is_not_installed_is_a_build_error() -> None:
    with ShouldRaise(go_builds.BuildError) as caught:
        go_builds.run(["no-such-program-aicr"], go_builds.go_env())
    assert str(caught.raised).startswith("no-such-program-aicr is not installed"), caught.raised


def test_a_newer_go_line_is_refused_with_both_versions() -> None:
    with ShouldRaise(go_builds.BuildError("go1.26.8 is too old: m@v1 needs go 1.27.0")):
        go_builds.check_go("module m\n\ngo 1.27.0\n", "go1.26.8", "m@v1")
    go_builds.check_go("module m\n\ngo 1.26.0\n", "go1.26.8", "m@v1")
    compare(go_builds.elapsed(245), expected="4m05s")
    compare(go_builds.elapsed(12.9), expected="12s")
