"""A newcomer's first hour with tools/testbed.py (issue 14, item 12): the real tools, no real build."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from testfixtures import compare

from support.harness import ROOT

TESTBED = ROOT / "tools" / "testbed.py"

FAKE_GO = '''#!{python}
"""Just enough of `go` for tools/build_testbin.py: each step takes a moment, `go build` writes a binary."""
import json, os, sys, time
from pathlib import Path
root = Path({root!r})
args = sys.argv[1:]
if args[:2] == ["env", "GOVERSION"]:
    print("go1.26.8")
elif args[:1] == ["env"]:
    print(root / args[1].lower())
elif args[:3] == ["mod", "download", "-json"]:
    gomod = root / "go.mod"
    gomod.write_text("module example\\n\\ngo 1.26.0\\n")
    print(json.dumps({{"GoMod": str(gomod)}}))
elif args[:2] == ["mod", "tidy"]:
    time.sleep(0.2)
elif args[:1] == ["build"]:
    time.sleep(float(os.environ.get("FAKE_GO_BUILD_SECONDS", "0.2")))
    out = Path(args[args.index("-o") + 1])
    out.write_text("#!/bin/sh\\necho 'a fake binary' >&2\\nexit 1\\n")
    out.chmod(0o755)
else:
    sys.exit(f"fake go: {{args}}")
'''


def fake_go_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    go = bin_dir / "go"
    go.write_text(FAKE_GO.format(python=sys.executable, root=str(tmp_path)))
    go.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBEBUILDER_ASSETS", "TEST_ASSET_KUBE_APISERVER", "TEST_ASSET_ETCD")}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "AICR_TESTBIN_CACHE": str(tmp_path / "testbin")}


def test_the_demo_shows_each_build_step_with_its_time(tmp_path: Path) -> None:
    """The README's first command: a cold build prints each step as it starts and ends, with elapsed times."""
    proc = subprocess.run([sys.executable, str(TESTBED), "demo"], capture_output=True, text=True, timeout=120,
                          env=fake_go_env(tmp_path), stdin=subprocess.DEVNULL)
    steps = [line for line in proc.stderr.splitlines() if line.startswith("build-testbin [")]
    for expected in (r"kube-apiserver and etcd are not built yet: building them into .*",
                     r"checking Go \(go1\.26\.8\) and that the Go module proxy serves both modules \.\.\.",
                     r"etcd v[\d.]+: compiling \(go build\): done in \d+s",
                     r"kube-apiserver v[\d.]+: compiling \(go build; .*\): done in \d+s",
                     r"building kube-apiserver v[\d.]+: done in \d+s"):
        assert any(re.fullmatch(r"build-testbin \[ *\d+(m\d\ds|s)\]: " + expected, line) for line in steps), \
            (expected, proc.stderr)
    assert proc.stdout.startswith("starting etcd and kube-apiserver (building them first if missing)"), proc.stdout
    compare(proc.returncode, expected=1, suffix=proc.stderr)  # the fake binaries do not start
    assert re.search(r"^error: \S+/etcd exited with 1$", proc.stderr, re.M), proc.stderr
    figures = json.loads(next((tmp_path / "testbin").glob("k8s-*/build-figures.json")).read_text())
    assert figures["wall_seconds"] > 0, figures


def test_a_second_build_names_the_first_builds_step_and_elapsed_time(tmp_path: Path) -> None:
    """Two first runs at once: the second waits under the lock and says what the first is doing and since when."""
    env = {**fake_go_env(tmp_path), "FAKE_GO_BUILD_SECONDS": "3"}
    build = [sys.executable, str(ROOT / "tools" / "build_testbin.py")]
    first = subprocess.Popen(build, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        status = tmp_path / "testbin" / ".lock.status"
        ends = time.monotonic() + 60
        while not (status.exists() and "compiling" in status.read_text()) and time.monotonic() < ends:
            time.sleep(0.1)
        second = subprocess.run(build, capture_output=True, text=True, env=env, timeout=120)
        first_out, first_err = first.communicate(timeout=120)
    finally:
        first.kill()
        first.wait()
    compare((first.returncode, second.returncode), expected=(0, 0), suffix=first_err + second.stderr)
    compare(second.stdout, expected=first_out)  # the same folder, built once
    waiting = second.stderr.splitlines()[0]
    assert re.fullmatch(rf"build-testbin \[ *\d+s\]: another build of k8s-\S+ is running \(pid {first.pid}, "
                        r"running for \d+s; now at: \S+ v[\d.]+: compiling \(go build.*\) \(for \d+s\)\); "
                        r"waiting for it", waiting), second.stderr
    assert "building them into" not in second.stderr, second.stderr
    assert not status.exists()  # the build's status file goes with the build


def test_help_prints_the_usage_and_the_verbs() -> None:
    for args in (["--help"], ["-h"]):
        proc = subprocess.run([sys.executable, str(TESTBED), *args], capture_output=True, text=True, timeout=30)
        compare((proc.returncode, proc.stderr), expected=(0, ""))
        assert proc.stdout.startswith("usage: python tools/testbed.py [-h] [--clusters N] [--demo DIR] VERB\n"), \
            proc.stdout
        verbs = re.findall(r"^  (\w+) +\S", proc.stdout.split("verbs:\n", 1)[1], re.M)
        compare(verbs, expected=["demo", "webhook", "reset"])
        assert "An operator stand-in runs with it" in " ".join(proc.stdout.split()), proc.stdout
    for args, message in (([], "the following arguments are required: VERB"),
                          (["demos"], "invalid choice: 'demos' (choose from 'demo', 'webhook', 'reset')"),
                          (["demo", "--clusters", "0"], "argument --clusters: must be a whole number from 1 to 8"),
                          (["demo", "--clusters", "x"], "argument --clusters: must be a whole number from 1 to 8"),
                          (["reset", "--clusters", "2"], "--clusters goes with demo or webhook, not reset")):
        proc = subprocess.run([sys.executable, str(TESTBED), *args], capture_output=True, text=True, timeout=30)
        compare(proc.returncode, expected=2)
        assert proc.stderr.startswith("usage: python tools/testbed.py [-h] [--clusters N] [--demo DIR] VERB\n") \
            and message in proc.stderr, proc.stderr


def test_reset_without_a_running_demo_says_how_to_name_one(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AICR_DEMO"}
    for args in (["reset"], ["reset", "--demo", str(tmp_path)]):
        proc = subprocess.run([sys.executable, str(TESTBED), *args], capture_output=True, text=True, timeout=30,
                              env=env)
        compare((proc.returncode, proc.stdout), expected=(2, ""))
        assert proc.stderr.startswith("error: no running demo found: pass --demo DIR"), proc.stderr
