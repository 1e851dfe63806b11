"""Build the Go programs CI checks the release with, once per machine, and print their folder.

    python tools/go_tools.py actionlint     # -> ~/.cache/aicr-go-tools/actionlint-v1.7.12
    python tools/go_tools.py krew           # -> ~/.cache/aicr-go-tools/krew-v0.4.3 (krew, validate-krew-manifest)

Each is `go install`ed from the Go module proxy at a pinned version into a folder of its own under
`$XDG_CACHE_HOME/aicr-go-tools` (never into the repository), under a file lock, so parallel runs
build it once; a folder whose programs are all there is reused. As the other builds of tools/, it
uses the Go on PATH (GOTOOLCHAIN=local: never a toolchain it downloads) and logs its step with its
time (tools/go_builds.py); a failure prints the last lines `go` printed.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import go_builds
from go_builds import BuildError

TOOLS: dict[str, tuple[str, list[str]]] = {
    "actionlint": ("v1.7.12", ["github.com/rhysd/actionlint/cmd/actionlint"]),
    "krew": ("v0.4.3", ["sigs.k8s.io/krew/cmd/krew", "sigs.k8s.io/krew/cmd/validate-krew-manifest"]),
}
log = go_builds.BuildLog("go-tools")


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aicr-go-tools"


def programs(name: str) -> tuple[str, ...]:
    return tuple(package.rsplit("/", 1)[-1] for package in TOOLS[name][1])


def built(name: str) -> Path:
    """The folder of NAME's programs, `go install`ed into it first if any is missing."""
    version, packages = TOOLS[name]
    folder = cache_root() / f"{name}-{version}"
    if go_builds.complete(folder, programs(name)):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)

    def install(target: Path) -> None:
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        env = go_builds.go_env(GOBIN=str(partial), GOFLAGS="-mod=mod")
        go_builds.go_version(env, f"{name} {version}")
        with log.step(f"{name} {version}: go install {' '.join(packages)}"):
            go_builds.run(["nice", "go", "install", *(f"{p}@{version}" for p in packages)], env)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)

    go_builds.build_once(folder, lambda f: go_builds.complete(f, programs(name)), install, log,
                         f"{name} is not built yet: building it into {folder} (once per machine)",
                         lock_name=f".{name}.lock")  # one lock a tool: actionlint and krew build side by side
    return folder


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in TOOLS:
        print(f"usage: go_tools.py {'|'.join(TOOLS)}", file=sys.stderr)
        return 2
    go_builds.exit_on_sigterm()
    try:
        print(built(argv[0]))
    except BuildError as err:
        log(f"error: {err}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
