#!/usr/bin/env python3
"""Build kube-state-metrics, Prometheus, promtool, Alertmanager and amtool from the Go module proxy, once per machine.

Prints the folder that holds the five binaries. The folder is keyed by their
versions and the Go version, so a later run with the same toolchain reuses it;
the build runs under a file lock, so two concurrent callers build it once.

Each program has its own quirk (docs/alerting.md, "Building the programs"):
kube-state-metrics is refused by `go install ...@version`, so it is built
inside its downloaded module; Prometheus' module carries a go.work, so
GOWORK=off, and `remove_all_sd` leaves out every cloud SDK; Alertmanager's
module has no built web UI, so it is built in a copy with placeholder pages.

Standard library only: this runs before any virtual environment exists.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import sys
from pathlib import Path

import go_builds
from go_builds import BuildError

KSM_VERSION = os.environ.get("AICR_KSM_VERSION", "v2.20.0")
PROMETHEUS_VERSION = os.environ.get("AICR_PROMETHEUS_VERSION", "v0.316.0")  # the module's tag of Prometheus 3.16.0
ALERTMANAGER_VERSION = os.environ.get("AICR_ALERTMANAGER_VERSION", "v0.35.0")
BINARIES = ("kube-state-metrics", "prometheus", "promtool", "alertmanager", "amtool")
MIN_FREE_BYTES = 4 * 1024**3
CACHE_ROOT = Path(os.environ.get("AICR_MONITORING_CACHE", Path.home() / ".cache" / "aicr-monitoring"))
# GOWORK=off: Prometheus' module ships a go.work naming folders the module zip lacks.
# GOFLAGS empty: each module's own go.mod and go.sum pin everything (-mod=readonly, the default).
GO_ENV = go_builds.go_env(GOWORK="off", GOFLAGS="")

log = go_builds.BuildLog("build-monitoring")
step = log.step


def run(args: list[str], cwd: Path | None = None) -> str:
    return go_builds.run(args, GO_ENV, cwd)


def go_version() -> str:
    return go_builds.go_version(GO_ENV, "each module's go.mod")  # e.g. go1.26.8


def download_module(module: str, version: str) -> Path:
    """The module's folder in the (read-only) module cache, after checking Go is new enough for it."""
    info = go_builds.download_module(module, version, GO_ENV)
    go_builds.check_go(Path(info["GoMod"]).read_text(), go_version(), f"{module}@{version}")
    return Path(info["Dir"])


def version_ldflags(version: str) -> str:
    """All three programs print prometheus/common's version variables in `--version`."""
    return f"-s -w -X github.com/prometheus/common/version.Version={version.lstrip('v')}"


def build_kube_state_metrics(out: Path) -> None:
    with step(f"kube-state-metrics {KSM_VERSION}: downloading its module"):
        folder = download_module("k8s.io/kube-state-metrics/v2", KSM_VERSION)
    with step(f"kube-state-metrics {KSM_VERSION}: compiling (go build inside its module)"):
        run(["go", "build", "-trimpath", "-ldflags", version_ldflags(KSM_VERSION),
             "-o", str(out / "kube-state-metrics"), "."], cwd=folder)


def release_of(module_version: str) -> str:
    """Prometheus 3.x is tagged v0.3MM.P in Go: v0.316.0 is release 3.16.0."""
    match = re.fullmatch(r"v0\.(\d)(\d\d)\.(\d+)", module_version)
    if not match:
        raise BuildError(f"{module_version} is not a Prometheus module version such as v0.316.0")
    return f"{match.group(1)}.{int(match.group(2))}.{match.group(3)}"


def build_prometheus(out: Path) -> None:
    with step(f"prometheus {PROMETHEUS_VERSION}: downloading its module"):
        folder = download_module("github.com/prometheus/prometheus", PROMETHEUS_VERSION)
    version = release_of(PROMETHEUS_VERSION)
    with step(f"prometheus and promtool {version}: compiling (go build -tags remove_all_sd; "
              "the longest step: several minutes on 2 cores)"):
        run(["go", "build", "-trimpath", "-tags", "remove_all_sd", "-ldflags", version_ldflags(version),
             "-o", str(out) + "/", "./cmd/prometheus", "./cmd/promtool"], cwd=folder)


def writable_copy(source: Path, target: Path) -> None:
    """The module cache is read-only; the copy must take new files."""
    shutil.copytree(source, target)
    for root, dirs, files in os.walk(target):
        for name in dirs + files:
            path = os.path.join(root, name)
            os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)
    os.chmod(target, os.stat(target).st_mode | stat.S_IWUSR)


def build_alertmanager(workdir: Path, out: Path) -> None:
    with step(f"alertmanager {ALERTMANAGER_VERSION}: downloading its module"):
        folder = download_module("github.com/prometheus/alertmanager", ALERTMANAGER_VERSION)
    copy = workdir / "alertmanager"
    writable_copy(folder, copy)
    # The web UI is embedded from ui/app/dist, which the release process builds and the module lacks.
    for ui in ("elm", "mantine"):
        page = copy / "ui" / "app" / "dist" / ui / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        if not page.exists():
            page.write_text("<!doctype html><title>Alertmanager</title><p>Built without its web UI.</p>\n")
    with step(f"alertmanager and amtool {ALERTMANAGER_VERSION}: compiling (go build in a copy of the module)"):
        run(["go", "build", "-trimpath", "-ldflags", version_ldflags(ALERTMANAGER_VERSION),
             "-o", str(out) + "/", "./cmd/alertmanager", "./cmd/amtool"], cwd=copy)


def complete(folder: Path) -> bool:
    return go_builds.complete(folder, BINARIES)


def build(folder: Path) -> dict[str, float]:
    with go_builds.measured(folder, GO_ENV, log) as figures:
        with go_builds.staging_folder(folder.parent, log) as staging:
            out = staging / "bin"
            out.mkdir()
            build_kube_state_metrics(out)
            build_alertmanager(staging, out)
            build_prometheus(out)
            missing = [b for b in BINARIES if not os.access(out / b, os.X_OK)]
            if missing:
                raise BuildError(f"the build made no {', '.join(missing)}")
            out.rename(folder)  # atomic: the folder exists only when all five binaries do
    return figures


def binaries_folder() -> Path:
    override = os.environ.get("AICR_MONITORING_BIN")
    if override:
        return Path(override)
    key = f"ksm-{KSM_VERSION}_prometheus-{PROMETHEUS_VERSION}_alertmanager-{ALERTMANAGER_VERSION}_{go_version()}"
    return CACHE_ROOT / key


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--print-only", action="store_true",
                        help="print the folder without building; exit 1 if it is incomplete")
    args = parser.parse_args()
    go_builds.exit_on_sigterm()
    try:
        folder = binaries_folder()
        if complete(folder) or args.print_only:
            print(folder)
            return 0 if complete(folder) else 1
        if os.environ.get("AICR_MONITORING_BIN"):
            raise BuildError(f"AICR_MONITORING_BIN={folder} does not hold {', '.join(BINARIES)}")
        go_builds.check_disk(folder.parent, MIN_FREE_BYTES, GO_ENV)
        go_builds.build_once(folder, complete, build, log,
                             f"the monitoring programs are not built yet: building them into {folder} "
                             "(once per machine; about 5.5 minutes on a quiet 2-core machine, "
                             "25 measured on a loaded one)")
        print(folder)
        return 0
    except BuildError as err:
        log(f"error: {err}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
