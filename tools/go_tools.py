"""Build the Go programs CI checks the release with, once per machine, and print their folder.

    python tools/go_tools.py actionlint     # -> ~/.cache/aicr-go-tools/actionlint-v1.7.12
    python tools/go_tools.py krew           # -> ~/.cache/aicr-go-tools/krew-v0.4.3 (krew, validate-krew-manifest)

Each is `go install`ed from the Go module proxy at a pinned version into a folder of its own under
`$XDG_CACHE_HOME/aicr-go-tools` (never into the repository), under a file lock, so parallel runs
build it once; a folder whose programs are all there is reused.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

TOOLS: dict[str, tuple[str, list[str]]] = {
    "actionlint": ("v1.7.12", ["github.com/rhysd/actionlint/cmd/actionlint"]),
    "krew": ("v0.4.3", ["sigs.k8s.io/krew/cmd/krew", "sigs.k8s.io/krew/cmd/validate-krew-manifest"]),
}


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aicr-go-tools"


def built(name: str) -> Path:
    version, packages = TOOLS[name]
    folder = cache_root() / f"{name}-{version}"
    programs = [folder / package.rsplit("/", 1)[-1] for package in packages]
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(p.is_file() and os.access(p, os.X_OK) for p in programs):
            return folder
        go = shutil.which("go")
        if go is None:
            raise SystemExit(f"error: building {name} needs Go on PATH")
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        env = {**os.environ, "GOBIN": str(partial), "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
        subprocess.run(["nice", go, "install", *(f"{p}@{version}" for p in packages)], env=env, check=True)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    return folder


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in TOOLS:
        print(f"usage: go_tools.py {'|'.join(TOOLS)}", file=sys.stderr)
        return 2
    print(built(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
