"""What the Go builds of tools/ share (tools/go_builds.py): failures that say what to do, never a traceback."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import go_builds
import go_tools
import pytest
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


def test_a_staging_folder_left_by_a_stopped_build_goes_before_the_next_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    left = tmp_path / ".build-k1ll3d"
    (left / "bin").mkdir(parents=True)
    (left / "bin" / "etcd").write_bytes(b"half a build")
    finished = tmp_path / "k8s-v1_etcd-v3_go1"
    finished.mkdir()
    (tmp_path / ".lock").touch()
    with go_builds.staging_folder(tmp_path, go_builds.BuildLog("build-test")) as staging:
        compare(sorted(p.name for p in tmp_path.iterdir()), expected=sorted([".lock", finished.name, staging.name]))
        assert staging.name.startswith(go_builds.STAGING_PREFIX), staging
    compare(sorted(p.name for p in tmp_path.iterdir()), expected=[".lock", finished.name])
    assert f"removing {left}, left by a build that was stopped" in capsys.readouterr().err


SIGTERMED_BUILD = """
import os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import go_builds
go_builds.exit_on_sigterm()
with go_builds.staging_folder(Path(sys.argv[1]), go_builds.BuildLog("build-test")) as staging:
    print(staging, flush=True)
    go_builds.run(["sleep", sys.argv[3]], os.environ)
"""


def test_sigterm_ends_a_build_as_an_exit_its_staging_folder_and_go_child_gone(tmp_path: Path) -> None:
    """What `.ci/run` does to a build still running at its exit (kill -- -PGID sends SIGTERM)."""
    seconds = str(970000 + os.getpid() % 10000)  # a `sleep` standing in for `go build`, found by its argument
    tools = str(Path(go_builds.__file__).parent)
    build = subprocess.Popen([sys.executable, "-c", SIGTERMED_BUILD, str(tmp_path), tools, seconds],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        staging = Path(build.stdout.readline().strip())  # type: ignore[union-attr]
        assert staging.is_dir(), staging
        waited = time.monotonic() + 10
        while not subprocess.run(["pgrep", "-f", f"sleep {seconds}"], capture_output=True).stdout:
            assert time.monotonic() < waited, "the stand-in for go never started"
            time.sleep(0.05)
        build.send_signal(signal.SIGTERM)  # to the build alone: its child is the build's to end
        _, stderr = build.communicate(timeout=20)
        compare((build.returncode, staging.exists(), "Traceback" in stderr), expected=(143, False, False),
                suffix=stderr)
        left = subprocess.run(["pgrep", "-f", f"sleep {seconds}"], capture_output=True, text=True).stdout
        compare(left, expected="", suffix="the build's child was left running")
    finally:
        build.kill()
        build.wait()
        subprocess.run(["pkill", "-f", f"sleep {seconds}"])
