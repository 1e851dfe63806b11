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
import os
import re
import sys
from pathlib import Path

import go_builds
from go_builds import BuildError

KUBE_VERSION = os.environ.get("AICR_KUBE_VERSION", "v1.37.2")
ETCD_VERSION = os.environ.get("AICR_ETCD_VERSION", "v3.6.16")
BINARIES = ("kube-apiserver", "etcd")
MIN_FREE_BYTES = 6 * 1024**3  # modules + build cache measured at ~4 GB; keep headroom
CACHE_ROOT = Path(os.environ.get("AICR_TESTBIN_CACHE", Path.home() / ".cache" / "aicr-testbin"))
GO_ENV = go_builds.go_env(GOFLAGS="-mod=mod")  # the wrapper modules' go.sum is written by `go mod tidy`

log = go_builds.BuildLog("build-testbin")
step = log.step


def run(args: list[str], cwd: Path | None = None) -> str:
    return go_builds.run(args, GO_ENV, cwd)


def go_version() -> str:
    return go_builds.go_version(GO_ENV, "upstream's go.mod")  # e.g. go1.26.8


def download_gomod(module: str, version: str) -> str:
    return Path(go_builds.download_module(module, version, GO_ENV)["GoMod"]).read_text()


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
    go_builds.check_go(required_by, have, f"Kubernetes {KUBE_VERSION}")


def check_disk(path: Path) -> None:
    go_builds.check_disk(path, MIN_FREE_BYTES, GO_ENV)


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


def complete(folder: Path) -> bool:
    return go_builds.complete(folder, BINARIES)


def build(folder: Path) -> dict[str, float]:
    with go_builds.measured(folder, GO_ENV, log) as figures:
        with step(f"checking Go ({go_version()}) and that the Go module proxy serves both modules"):
            preflight()
        with go_builds.staging_folder(folder.parent, log) as staging:
            out = staging / "bin"
            out.mkdir()
            with step(f"building etcd {ETCD_VERSION}"):
                build_etcd(staging / "etcd-wrapper", out)
            with step(f"building kube-apiserver {KUBE_VERSION}"):
                build_kube_apiserver(staging / "kube-wrapper", out)
            out.rename(folder)  # atomic: the folder exists only when both binaries do
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
    go_builds.exit_on_sigterm()
    try:
        folder = assets_folder()
        if complete(folder) or args.print_only:
            print(folder)
            return 0 if complete(folder) else 1
        if os.environ.get("KUBEBUILDER_ASSETS"):
            raise BuildError(f"KUBEBUILDER_ASSETS={folder} does not hold kube-apiserver and etcd")
        check_disk(folder.parent)
        go_builds.build_once(folder, complete, build, log,
                             f"kube-apiserver and etcd are not built yet: building them into {folder} "
                             "(once per machine; about 8 minutes on a quiet 2-core machine, "
                             "16.5 to 25 measured on a loaded one)")
        print(folder)
        return 0
    except BuildError as err:
        log(f"error: {err}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
