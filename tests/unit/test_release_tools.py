"""The release's pure parts: the krew manifest from SHA256SUMS, the repository written once, the plugin folders."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from testfixtures import compare

from aicr_core import plugin_folders

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import krew_manifest  # noqa: E402

SUMS = "".join(f"{c * 64}  kubectl-aicr_v0.2.0_{p}.tar.gz\n" for c, p in
               zip("abcd", ("linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"), strict=True))


def test_the_manifest_has_every_archive_of_sha256sums() -> None:
    sums = krew_manifest.read_sums(SUMS + f"{'e' * 64}  kubectl_aicr-0.2.0-py3-none-any.whl\n")
    text = krew_manifest.manifest("v0.2.0", sums, "http://127.0.0.1:8000/")
    compare(re.findall(r"os: (\w+)\n\s+arch: (\w+)", text), expected=[
        ("darwin", "amd64"), ("darwin", "arm64"), ("linux", "amd64"), ("linux", "arm64")])
    compare(re.findall(r'uri: "([^"]+)"', text)[0], expected="http://127.0.0.1:8000/kubectl-aicr_v0.2.0_darwin_amd64.tar.gz")
    compare(re.findall(r'sha256: "(\w)', text), expected=["c", "d", "a", "b"])
    assert "  name: aicr\n" in text and "bin: kubectl-aicr\n" in text


@pytest.mark.parametrize("sums,why", [
    ("not a line\n", "line 1 is not"),
    (f"{'a' * 64}  kubectl_aicr-0.2.0-py3-none-any.whl\n", "lists no archive"),
    (f"{'a' * 64}  kubectl-aicr_v0.3.0_linux_amd64.tar.gz\n", "not an archive of v0.2.0"),
])
def test_a_bad_sha256sums_is_refused(sums: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        krew_manifest.manifest("v0.2.0", krew_manifest.read_sums(sums), "http://x")


def test_the_repository_is_written_once_and_every_mention_agrees() -> None:
    url = krew_manifest.repository()
    compare(url, expected="https://github.com/OWNER/kubectl-aicr")
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                             check=True).stdout.split()
    mentions = set()
    for name in tracked:
        path = ROOT / name
        if path.suffix in (".md", ".py", ".yml", ".yaml", ".cfg", ".toml", ".spec") and path.is_file():
            mentions.update(re.findall(r"github\.com/([\w.-]+/kubectl-aicr)\b", path.read_text(errors="replace")))
            mentions.update(re.findall(r"--repo ([\w.-]+/kubectl-aicr)\b", path.read_text(errors="replace")))
    compare(mentions, expected={"OWNER/kubectl-aicr"})


def test_the_plugin_folders() -> None:
    py = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    compare(plugin_folders.folders({"AICR_PLUGIN_PATH": "/a::/b"}), expected=["/a", "/b"])
    compare(plugin_folders.folders({"XDG_DATA_HOME": "/data", "HOME": "/h"}),
            expected=[f"/data/kubectl-aicr/plugins/{py}"])
    home = str(Path.home())
    compare(plugin_folders.folders({"XDG_DATA_HOME": "relative"}),  # the XDG rule: a relative one is ignored
            expected=[f"{home}/.local/share/kubectl-aicr/plugins/{py}"])
    env = {"AICR_PLUGIN_PATH": "/a:/b"}
    compare([plugin_folders.origin("kubectl_aicr", "/x", env), plugin_folders.origin("site", "/b", env),
             plugin_folders.origin("site", "/usr/lib/python3/site-packages", env),
             plugin_folders.origin("s", None, env)],
            expected=["built-in", "/b", "environment", "environment"])
