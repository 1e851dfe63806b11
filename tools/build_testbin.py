#!/usr/bin/env python3
"""Build kube-apiserver and etcd from the Go module proxy, once per machine.

Prints the folder that holds both binaries (envtest's KUBEBUILDER_ASSETS
convention). The folder is keyed by the Kubernetes, etcd and Go versions, so a
later run with the same toolchain reuses it; the build runs under a file lock,
so two concurrent callers build it once.

Why a wrapper module: `go install k8s.io/kubernetes/cmd/kube-apiserver@vX`
fails because k8s.io/kubernetes requires its staging modules at the fake
version v0.0.0. The wrapper requires k8s.io/kubernetes and replaces every
staging module with its published tag; the list comes from upstream's own
go.mod, never from a hard-coded list, because it changes between minors.

Standard library only: this runs before any virtual environment exists.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

KUBE_VERSION = os.environ.get("AICR_KUBE_VERSION", "v1.37.2")
ETCD_VERSION = os.environ.get("AICR_ETCD_VERSION", "v3.6.16")
MIN_FREE_BYTES = 6 * 1024**3  # modules + build cache measured at ~4 GB; keep headroom
CACHE_ROOT = Path(os.environ.get("AICR_TESTBIN_CACHE", Path.home() / ".cache" / "aicr-testbin"))


class BuildError(Exception):
    """A failure the user can act on; printed without a traceback."""


STARTED = time.monotonic()


def elapsed(seconds: float) -> str:
    """`4m05s`, `12s`: short enough for a log line."""
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def log(msg: str) -> None:
    """One line on stderr, with the time since the build started: a 10-minute build shows it is alive."""
    print(f"build-testbin [{elapsed(time.monotonic() - STARTED):>6}]: {msg}", file=sys.stderr, flush=True)


HEARTBEAT_SECONDS = 60.0


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


STATUS = BuildStatus()


def other_build(path: Path) -> str:
    """The other build's step and elapsed times, from its status file."""
    try:
        doc = json.loads(path.read_text())
        now = time.time()
        return (f"pid {int(doc['pid'])}, running for {elapsed(now - float(doc['started']))}; "
                f"now at: {doc['step']} (for {elapsed(now - float(doc['step_started']))})")
    except (OSError, ValueError, KeyError, TypeError):
        return "its step is unknown (it writes no status file: an older build_testbin.py?)"


def wait_for_other_build(lock: IO[str], status_path: Path, folder: Path) -> None:
    """Take the lock once the other build lets it go; a line now and every minute naming what it does."""
    log(f"another build of {folder.name} is running ({other_build(status_path)}); waiting for it")
    began = last_line = time.monotonic()
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            time.sleep(1)
        if time.monotonic() - last_line >= HEARTBEAT_SECONDS:
            last_line = time.monotonic()
            log(f"still waiting after {elapsed(last_line - began)}; the other build: {other_build(status_path)}")
    log(f"the other build let go of the lock after {elapsed(time.monotonic() - began)}")


@contextmanager
def step(what: str) -> Iterator[None]:
    """Log a step when it starts, every minute while it runs, and with its own duration when it is done."""
    log(f"{what} ...")
    STATUS.enter(what)
    began, done = time.monotonic(), threading.Event()

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            log(f"{what}: still running after {elapsed(time.monotonic() - began)}")

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    try:
        yield
    finally:
        done.set()
        beat.join()
        STATUS.leave()
    log(f"{what}: done in {elapsed(time.monotonic() - began)}")


def go_env() -> dict[str, str]:
    env = dict(os.environ, GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=mod")
    return env


def run(args: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(args, cwd=cwd, env=go_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-25:])
        if re.search(r"404 Not Found|410 Gone|not available|unknown revision|invalid version", tail):
            raise BuildError(f"a module is not served by the Go module proxy:\n{tail}")
        raise BuildError(f"`{' '.join(args)}` failed:\n{tail}")
    return proc.stdout


def go_version() -> str:
    if shutil.which("go") is None:
        raise BuildError("Go is not installed (need go >= the version upstream's go.mod names); install Go and retry")
    return run(["go", "env", "GOVERSION"]).strip()  # e.g. go1.26.8


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def download_gomod(module: str, version: str) -> str:
    info = json.loads(run(["go", "mod", "download", "-json", f"{module}@{version}"]))
    if "Error" in info:
        raise BuildError(f"{module}@{version} is not served: {info['Error']}")
    return Path(info["GoMod"]).read_text()


def directive_lines(gomod: str) -> list[str]:
    """Upstream's `go` and `godebug` lines, so the binary gets upstream's GODEBUG defaults."""
    return [line for line in gomod.splitlines() if re.match(r"^(go|godebug) ", line)]


def staging_modules(gomod: str) -> list[str]:
    """Every k8s.io module required at v0.0.0 or replaced to ./staging/."""
    # Exactly v0.0.0: pseudo-versions such as v0.0.0-2025... are real published versions.
    names = set(re.findall(r"^\s*(k8s\.io/[\w./-]+) v0\.0\.0(?=\s|$)", gomod, re.M))
    names |= set(re.findall(r"^\s*(\S+)\s+=>\s+\./staging/", gomod, re.M))
    return sorted(names)


def check_go(required_by: str, have: str) -> None:
    need = re.search(r"^go (\S+)", required_by, re.M)
    if need and version_tuple(have) < version_tuple(need.group(1)):
        raise BuildError(f"{have} is too old: Kubernetes {KUBE_VERSION} needs go {need.group(1)}")


def check_disk(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free
    gocache = Path(run(["go", "env", "GOCACHE"]).strip())
    free = min(free, shutil.disk_usage(gocache.parent if not gocache.exists() else gocache).free)
    if free < MIN_FREE_BYTES:
        raise BuildError(f"only {free / 1024**3:.1f} GiB free; "
                         f"the build needs about {MIN_FREE_BYTES / 1024**3:.0f} GiB")


def write_wrapper(workdir: Path, module: str, directives: list[str], requires: str,
                  replaces: list[str], package: str) -> None:
    workdir.mkdir(parents=True)
    lines = [f"module {module}", "", *directives, "", f"require {requires}", ""]
    if replaces:
        lines += ["replace (", *[f"\t{r}" for r in replaces], ")"]
    (workdir / "go.mod").write_text("\n".join(lines) + "\n")
    (workdir / "tools.go").write_text(
        f'//go:build tools\n\npackage tools\n\nimport _ "{package}"\n')


def build_kube_apiserver(workdir: Path, out: Path) -> None:
    with step(f"kube-apiserver {KUBE_VERSION}: reading its go.mod"):
        gomod = download_gomod("k8s.io/kubernetes", KUBE_VERSION)
    check_go(gomod, go_version())
    staging_tag = "v0." + KUBE_VERSION.split(".", 1)[1]  # v1.37.2 -> v0.37.2
    replaces = [f"{m} => {m} {staging_tag}" for m in staging_modules(gomod)]
    log(f"kube-apiserver {KUBE_VERSION}: {len(replaces)} staging modules replaced to {staging_tag}")
    pkg = "k8s.io/kubernetes/cmd/kube-apiserver"
    write_wrapper(workdir, "aicr.local/testbin/kube", directive_lines(gomod),
                  f"k8s.io/kubernetes {KUBE_VERSION}", replaces, pkg)
    with step(f"kube-apiserver {KUBE_VERSION}: downloading its modules (go mod tidy)"):
        run(["go", "mod", "tidy"], cwd=workdir)
    major, minor = KUBE_VERSION.lstrip("v").split(".")[:2]
    ldflags = (f"-s -w -X k8s.io/component-base/version.gitVersion={KUBE_VERSION}"
               f" -X k8s.io/component-base/version.gitMajor={major}"
               f" -X k8s.io/component-base/version.gitMinor={minor}"
               f" -X k8s.io/component-base/version.gitTreeState=clean")
    with step(f"kube-apiserver {KUBE_VERSION}: compiling (go build; the longest step: about 6 minutes on a quiet "
              "2-core machine, over 10 on a busy one)"):
        run(["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(out / "kube-apiserver"), pkg], cwd=workdir)


def build_etcd(workdir: Path, out: Path) -> None:
    with step(f"etcd {ETCD_VERSION}: reading its go.mod"):
        gomod = download_gomod("go.etcd.io/etcd/server/v3", ETCD_VERSION)
    check_go(gomod, go_version())
    pkg = "go.etcd.io/etcd/server/v3"
    write_wrapper(workdir, "aicr.local/testbin/etcd", directive_lines(gomod),
                  f"{pkg} {ETCD_VERSION}", [], pkg)
    with step(f"etcd {ETCD_VERSION}: downloading its modules (go mod tidy)"):
        run(["go", "mod", "tidy"], cwd=workdir)
    ldflags = "-s -w"
    with step(f"etcd {ETCD_VERSION}: compiling (go build)"):
        run(["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(out / "etcd"), pkg], cwd=workdir)


def preflight() -> None:
    """Fail in seconds, not after a compile: both modules served, and Go new enough for both."""
    have = go_version()
    for module, version in (("k8s.io/kubernetes", KUBE_VERSION), ("go.etcd.io/etcd/server/v3", ETCD_VERSION)):
        check_go(download_gomod(module, version), have)


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def complete(folder: Path) -> bool:
    return all(os.access(folder / b, os.X_OK) for b in ("kube-apiserver", "etcd"))


def build(folder: Path) -> dict[str, float]:
    modcache = Path(run(["go", "env", "GOMODCACHE"]).strip())
    gocache = Path(run(["go", "env", "GOCACHE"]).strip())
    mod_before, cache_before = dir_bytes(modcache / "cache" / "download"), dir_bytes(gocache)
    start = time.monotonic()
    with step(f"checking Go ({go_version()}) and that the Go module proxy serves both modules"):
        preflight()
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=folder.parent))
    try:
        out = staging / "bin"
        out.mkdir()
        with step(f"building etcd {ETCD_VERSION}"):
            build_etcd(staging / "etcd-wrapper", out)
        with step(f"building kube-apiserver {KUBE_VERSION}"):
            build_kube_apiserver(staging / "kube-wrapper", out)
        out.rename(folder)  # atomic: the folder exists only when both binaries do
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    figures = {
        "wall_seconds": round(time.monotonic() - start, 1),
        "download_mib": round((dir_bytes(modcache / "cache" / "download") - mod_before) / 1024**2, 1),
        "build_cache_mib": round((dir_bytes(gocache) - cache_before) / 1024**2, 1),
        "binaries_mib": round(dir_bytes(folder) / 1024**2, 1),
        # ru_maxrss of children: the largest single process (compile or link), in KiB on Linux.
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }
    (folder / "build-figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    log("build figures (cold only when the Go caches were empty): " + json.dumps(figures))
    return figures


def assets_folder() -> Path:
    override = os.environ.get("KUBEBUILDER_ASSETS")
    if override:
        return Path(override)
    return CACHE_ROOT / f"k8s-{KUBE_VERSION}_etcd-{ETCD_VERSION}_{go_version()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--print-only", action="store_true",
                        help="print the folder without building; exit 1 if it is incomplete")
    args = parser.parse_args()
    try:
        folder = assets_folder()
        if complete(folder) or args.print_only:
            print(folder)
            return 0 if complete(folder) else 1
        if os.environ.get("KUBEBUILDER_ASSETS"):
            raise BuildError(f"KUBEBUILDER_ASSETS={folder} does not hold kube-apiserver and etcd")
        check_disk(folder.parent)
        status_path = folder.parent / ".lock.status"
        with open(folder.parent / ".lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another caller is building it right now: say what it does, then wait
                wait_for_other_build(lock, status_path, folder)
            if not complete(folder):
                log(f"kube-apiserver and etcd are not built yet: building them into {folder} "
                    "(once per machine; about 8 minutes on a quiet 2-core machine, 16.5 measured on a loaded one)")
                STATUS.begin(status_path)
                try:
                    build(folder)
                finally:
                    STATUS.end()
        print(folder)
        return 0
    except BuildError as err:
        log(f"error: {err}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
