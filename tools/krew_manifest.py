"""The krew plugin manifest (`aicr.yaml`) of a release, written from its SHA256SUMS.

    python3 tools/krew_manifest.py --version v0.2.0 --sums DIR/SHA256SUMS --out DIR/aicr.yaml [--base-uri URL]

Every archive `kubectl-aicr_<version>_<os>_<arch>.tar.gz` listed in SHA256SUMS becomes one
platform; its `uri` is `URL/<archive>`, by default the repository's release download URL
(docs/release.md). Standard library only: the release workflow's last job runs it on the joined
SHA256SUMS of the four builds.
"""
from __future__ import annotations

import argparse
import configparser
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_NAME = "aicr"
PROGRAM = "kubectl-aicr"
ARCHIVE = re.compile(r"^kubectl-aicr_(?P<version>v[^_]+)_(?P<os>linux|darwin)_(?P<arch>amd64|arm64)\.tar\.gz$")
SUM_LINE = re.compile(r"^(?P<sha256>[0-9a-f]{64}) [ *](?P<file>\S+)$")
SHORT_DESCRIPTION = "Approve and inspect AICR operator rollouts"
DESCRIPTION = """\
Describe, approve, revoke and acknowledge the rollouts of NVIDIA's AI Cluster Runtime
operator, with the approval policies of the cluster's policy file, and a site's own
commands, renderers and policies as plugins.
"""
CAVEATS = """\
A site's plugins (wheels) go into a plugin folder, read by this program:
  kubectl aicr plugins install SITE.whl
installs into $AICR_PLUGIN_PATH (its first folder), else
$XDG_DATA_HOME/kubectl-aicr/plugins/py3.N (~/.local/share/...).
TAB completion: put the archive's kubectl_complete-aicr on PATH, e.g.
  ln -s "$(dirname "$(readlink -f "$(command -v kubectl-aicr)")")/kubectl_complete-aicr" ~/.local/bin/
"""


def repository() -> str:
    """The repository's address: written once, as setup.cfg's `url`."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    return config["metadata"]["url"].rstrip("/")


def release_download_uri(version: str) -> str:
    return f"{repository()}/releases/download/{version}"


def read_sums(text: str) -> dict[str, str]:
    """archive name -> sha256 of every archive line of a SHA256SUMS; ValueError for a line that is neither."""
    sums: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = SUM_LINE.match(line)
        if match is None:
            raise ValueError(f"SHA256SUMS line {number} is not `SHA256  FILE`: {line!r}")
        if ARCHIVE.match(match["file"]):
            sums[match["file"]] = match["sha256"]
    return sums


def manifest(version: str, sums: dict[str, str], base_uri: str) -> str:
    """The manifest as YAML text (written by hand: every value is a JSON string, which YAML reads as is)."""
    platforms = []
    for archive in sorted(sums):
        match = ARCHIVE.match(archive)
        if match is None or match["version"] != version:
            raise ValueError(f"{archive} is not an archive of {version}")
        platforms.append(
            f"  - selector:\n      matchLabels:\n        os: {match['os']}\n        arch: {match['arch']}\n"
            f"    uri: {json.dumps(base_uri.rstrip('/') + '/' + archive)}\n"
            f"    sha256: {json.dumps(sums[archive])}\n"
            f"    files:\n      - from: \"*\"\n        to: \".\"\n"
            f"    bin: {PROGRAM}\n")
    if not platforms:
        raise ValueError("SHA256SUMS lists no archive")

    def block(text: str) -> str:
        return "|\n" + "".join(f"    {line}\n" for line in text.splitlines())

    return ("apiVersion: krew.googlecontainertools.github.com/v1alpha2\n"
            "kind: Plugin\n"
            f"metadata:\n  name: {PLUGIN_NAME}\n"
            "spec:\n"
            f"  version: {json.dumps(version)}\n"
            f"  homepage: {json.dumps(repository())}\n"
            f"  shortDescription: {json.dumps(SHORT_DESCRIPTION)}\n"
            f"  description: {block(DESCRIPTION)}"
            f"  caveats: {block(CAVEATS)}"
            "  platforms:\n" + "".join(platforms))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True, help="the release, vX.Y.Z")
    parser.add_argument("--sums", type=Path, required=True, help="the SHA256SUMS listing the archives")
    parser.add_argument("--out", type=Path, required=True, help="where to write the manifest (aicr.yaml)")
    parser.add_argument("--base-uri", help="where the archives are downloaded from (default: the GitHub release)")
    args = parser.parse_args(argv)
    try:
        text = manifest(args.version, read_sums(args.sums.read_text(encoding="utf-8")),
                        args.base_uri or release_download_uri(args.version))
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
