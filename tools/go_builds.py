"""What the Go builds in tools/ share: a log with elapsed times, steps that say they are alive, `go`
run with a chosen environment, and a folder built once per machine under a file lock.

tools/build_testbin.py (kube-apiserver, etcd), tools/build_monitoring.py (kube-state-metrics,
Prometheus, Alertmanager) and tools/go_tools.py (actionlint, krew) each build Go programs from the
Go module proxy into a cache folder keyed by versions. A build takes minutes to a quarter of an
hour, so each one logs every step with its duration, a line a minute while a step runs, and, for a
second caller waiting on the lock, which step the first build is at.

Standard library only: this runs before any virtual environment exists.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

HEARTBEAT_SECONDS = 60.0  # read at each step, so a test can shorten it
STAGING_PREFIX = ".build-"  # a build's folder beside the finished ones, renamed into place when complete
NOT_SERVED = re.compile(r"404 Not Found|410 Gone|not available|unknown revision|invalid version")


class BuildError(Exception):
    """A failure the user can act on; printed without a traceback."""


def elapsed(seconds: float) -> str:
    """`4m05s`, `12s`: short enough for a log line."""
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


class BuildStatus:
    """What this build is doing, in a file beside the lock: another caller waiting for the lock reads it
    and says which step the build is at and for how long (the build may take a quarter of an hour)."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.started = time.time()
        self.steps: list[tuple[str, float]] = []  # nested steps, innermost last

    def begin(self, path: Path) -> None:
        self.path, self.started = path, time.time()
        self.write()

    def end(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
        self.path = None

    def enter(self, what: str) -> None:
        self.steps.append((what, time.time()))
        self.write()

    def leave(self) -> None:
        self.steps.pop()
        self.write()

    def write(self) -> None:
        if self.path is None:
            return
        what, since = self.steps[-1] if self.steps else ("starting", self.started)
        doc = {"pid": os.getpid(), "started": self.started, "step": what, "step_started": since}
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(doc) + "\n")
        os.replace(temporary, self.path)  # a reader sees the old status or the new, never half of one


def other_build(path: Path) -> str:
    """The other build's step and elapsed times, from its status file."""
    try:
        doc = json.loads(path.read_text())
        now = time.time()
        return (f"pid {int(doc['pid'])}, running for {elapsed(now - float(doc['started']))}; "
                f"now at: {doc['step']} (for {elapsed(now - float(doc['step_started']))})")
    except (OSError, ValueError, KeyError, TypeError):
        return "its step is unknown (it writes no status file)"


class BuildLog:
    """One build's lines on stderr, `NAME [ELAPSED]: message`, and its status file."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.started = time.monotonic()
        self.status = BuildStatus()

    def __call__(self, msg: str) -> None:
        print(f"{self.name} [{elapsed(time.monotonic() - self.started):>6}]: {msg}", file=sys.stderr, flush=True)

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        """Log a step when it starts, every minute while it runs, and with its own duration when it is done."""
        self(f"{what} ...")
        self.status.enter(what)
        began, done = time.monotonic(), threading.Event()
        heartbeat_seconds = HEARTBEAT_SECONDS

        def heartbeat() -> None:
            while not done.wait(heartbeat_seconds):
                self(f"{what}: still running after {elapsed(time.monotonic() - began)}")

        beat = threading.Thread(target=heartbeat, daemon=True)
        beat.start()
        try:
            yield
        finally:
            done.set()
            beat.join()
            self.status.leave()
        self(f"{what}: done in {elapsed(time.monotonic() - began)}")

    def wait_for_other_build(self, lock: IO[str], status_path: Path, folder: Path) -> None:
        """Take the lock once the other build lets it go; a line now and every minute naming what it does."""
        self(f"another build of {folder.name} is running ({other_build(status_path)}); waiting for it")
        began = last_line = time.monotonic()
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(1)
            if time.monotonic() - last_line >= HEARTBEAT_SECONDS:
                last_line = time.monotonic()
                self(f"still waiting after {elapsed(last_line - began)}; the other build: {other_build(status_path)}")
        self(f"the other build let go of the lock after {elapsed(time.monotonic() - began)}")


def go_env(**settings: str) -> dict[str, str]:
    """The environment `go` runs in: the toolchain on PATH (never one it downloads), no cgo, and the
    build's own settings (GOFLAGS, GOWORK) over the caller's."""
    return dict(os.environ, GOTOOLCHAIN="local", CGO_ENABLED="0", **settings)


def run(args: list[str], env: Mapping[str, str], cwd: Path | None = None) -> str:
    """Run `go ...` and return its stdout; a failure is a BuildError with the last lines it printed."""
    try:
        proc = subprocess.run(args, cwd=cwd, env=dict(env), capture_output=True, text=True)
    except FileNotFoundError as err:
        raise BuildError(f"{args[0]} is not installed: {err}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-25:])
        if NOT_SERVED.search(tail):
            raise BuildError(f"a module is not served by the Go module proxy:\n{tail}")
        raise BuildError(f"`{' '.join(args)}` failed:\n{tail}")
    return proc.stdout


def go_version(env: Mapping[str, str], needed_by: str) -> str:
    """`go1.26.8`; a clear error when Go is missing."""
    if shutil.which("go", path=env.get("PATH")) is None:
        raise BuildError(f"Go is not installed (need go >= the version {needed_by} names); install Go and retry")
    return run(["go", "env", "GOVERSION"], env).strip()


def check_go(go_mod: str, have: str, what: str) -> None:
    """Refuse a Go older than the `go` line of a module's go.mod, naming both."""
    need = re.search(r"^go (\S+)", go_mod, re.M)
    if need and version_tuple(have) < version_tuple(need.group(1)):
        raise BuildError(f"{have} is too old: {what} needs go {need.group(1)}")


def download_module(module: str, version: str, env: Mapping[str, str]) -> dict[str, str]:
    """`go mod download -json MODULE@VERSION`: its folder (`Dir`) and go.mod (`GoMod`) in the module cache."""
    info: dict[str, str] = json.loads(run(["go", "mod", "download", "-json", f"{module}@{version}"], env))
    if "Error" in info:
        raise BuildError(f"{module}@{version} is not served: {info['Error']}")
    return info


def check_disk(path: Path, min_free_bytes: int, env: Mapping[str, str]) -> None:
    """Refuse to start a build the disk cannot hold (the folder's disk and the Go build cache's)."""
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free
    gocache = Path(run(["go", "env", "GOCACHE"], env).strip())
    free = min(free, shutil.disk_usage(gocache if gocache.exists() else gocache.parent).free)
    if free < min_free_bytes:
        raise BuildError(f"only {free / 1024**3:.1f} GiB free; "
                         f"the build needs about {min_free_bytes / 1024**3:.0f} GiB")


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def exit_on_sigterm() -> None:
    """SIGTERM (what `.ci/run` sends its background builds at its exit) ends the build as an exit, not a
    kill: `finally` blocks run, so the staging folder goes and the `go` child is killed and reaped."""
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


@contextmanager
def staging_folder(parent: Path, log: BuildLog) -> Iterator[Path]:
    """A new folder in PARENT to build in, removed whatever happens. Called under PARENT's one lock,
    so another staging folder there was left by a build that could not clean up (SIGKILL, a machine
    shut down): it goes first, or every such build would leave a few hundred MiB behind for good."""
    for stale in sorted(parent.glob(STAGING_PREFIX + "*")):
        log(f"removing {stale}, left by a build that was stopped")
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=parent))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def complete(folder: Path, programs: tuple[str, ...]) -> bool:
    return all(os.access(folder / p, os.X_OK) for p in programs)


@contextmanager
def measured(folder: Path, env: Mapping[str, str], log: BuildLog) -> Iterator[dict[str, float]]:
    """The figures of the build made inside: its time, what it downloaded and added to the build
    cache, the binaries' size and the largest process; written to FOLDER/build-figures.json."""
    modcache = Path(run(["go", "env", "GOMODCACHE"], env).strip())
    gocache = Path(run(["go", "env", "GOCACHE"], env).strip())
    mod_before, cache_before = dir_bytes(modcache / "cache" / "download"), dir_bytes(gocache)
    start = time.monotonic()
    figures: dict[str, float] = {}
    yield figures
    figures.update({
        "wall_seconds": round(time.monotonic() - start, 1),
        "download_mib": round((dir_bytes(modcache / "cache" / "download") - mod_before) / 1024**2, 1),
        "build_cache_mib": round((dir_bytes(gocache) - cache_before) / 1024**2, 1),
        "binaries_mib": round(dir_bytes(folder) / 1024**2, 1),
        # ru_maxrss of children: the largest single process (compile or link), in KiB on Linux.
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    })
    (folder / "build-figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    log("build figures (cold only when the Go caches were empty): " + json.dumps(figures))


def build_once(folder: Path, is_complete: Callable[[Path], bool], build: Callable[[Path], object],
               log: BuildLog, announce: str, lock_name: str = ".lock") -> None:
    """Build FOLDER with BUILD unless it is complete, under a lock beside it (LOCK_NAME, and its status
    file LOCK_NAME.status): a second caller waits for the first, saying what that one does, and then
    finds the folder built."""
    with open(folder.parent / lock_name, "w") as lock:
        status_path = folder.parent / f"{lock_name}.status"
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another caller is building it right now: say what it does, then wait
            log.wait_for_other_build(lock, status_path, folder)
        if is_complete(folder):
            return
        log(announce)
        log.status.begin(status_path)
        try:
            build(folder)
        finally:
            log.status.end()
