"""Local policy files (`policy validate FILE`, `--policy-file FILE`) are read within the 1 MiB limit and only
from regular files: /dev/zero, /dev/urandom, a FIFO with no writer, a directory and a file one byte too large are
each refused at once as POLICY_ERROR naming the file, without reading past the limit."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from testfixtures import compare

from support.harness import Aicr

REFUSAL = "error: [POLICY_ERROR] policy file {path} does not validate; refusing every approval, revocation and " \
          "acknowledgement (fail closed)\n  (file): {problem}\n"


def special(tmp_path: Path, kind: str) -> tuple[str, str]:
    """A path of that kind, and the problem the refusal names."""
    if kind == "FIFO":
        os.mkfifo(tmp_path / "policy.fifo")
        return str(tmp_path / "policy.fifo"), "not a regular file (a FIFO)"
    if kind == "directory":
        return str(tmp_path), "not a regular file (a directory)"
    if kind == "one byte too large":
        big = tmp_path / "big.yaml"
        big.write_bytes(b"#" * (1024 * 1024) + b"\n")
        return str(big), "larger than 1048576 bytes"
    return kind, "not a regular file (a character device)"


KINDS = ["/dev/zero", "/dev/urandom", "FIFO", "directory", "one byte too large"]


@pytest.mark.parametrize("kind", KINDS)
def test_policy_validate_refuses_what_is_no_small_regular_file(aicr: Aicr, tmp_path: Path, kind: str) -> None:
    path, problem = special(tmp_path, kind)
    proc = aicr("policy", "validate", path, timeout=20)  # a FIFO used to block for ever, /dev/zero to eat memory
    compare((proc.returncode, proc.stdout, proc.stderr),
            expected=(1, "", REFUSAL.format(path=path, problem=problem)))


@pytest.mark.parametrize("kind", ["/dev/zero", "FIFO", "directory"])
def test_policy_file_flag_refuses_what_is_no_regular_file(aicr: Aicr, tmp_path: Path, kind: str) -> None:
    path, problem = special(tmp_path, kind)
    proc = aicr("policy", "check", "rollout-1", "--reason", "x", "--policy-file", path,
                "--server", "https://127.0.0.1:9", "--token", "t", timeout=20)
    compare((proc.returncode, proc.stderr), expected=(1, REFUSAL.format(path=path, problem=problem)))


def test_a_file_of_exactly_the_limit_is_read(aicr: Aicr, tmp_path: Path) -> None:
    exact = tmp_path / "exact.yaml"
    exact.write_bytes(b"#" * (1024 * 1024 - 1) + b"\n")
    proc = aicr("policy", "validate", str(exact))
    assert "larger than" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


FILE_FLAGS = [
    (["approve", "--plan", "sha256:" + "ab" * 32, "--reason", "x", "--yes", "--waves", "{path}"],
     "[USAGE] --waves {path}: {problem}", 2),
    (["list", "--cluster-profiles", "--cluster-profile-providers", "{path}"],
     "[USAGE] --cluster-profile-providers {path}: {problem}", 2),
    (["list", "-o", "jsonpath-file={path}"], "[USAGE] error reading jsonpath-file {path}: {problem}", 2),
    (["list", "-o", "custom-columns-file={path}"], "[USAGE] error reading custom-columns-file {path}: {problem}", 2),
    (["policy", "test", "{path}"], "[USAGE] test file {path}: (file): {problem}", 2),
]


# `policy test` reads the files it is given by the same reader; the FIFO is the case that hung.
FILE_FLAG_CASES = [(kind, *flag) for flag in FILE_FLAGS for kind in ("FIFO", "/dev/zero", "one byte too large")
                   if flag[0][:2] != ["policy", "test"] or kind == "FIFO"]


@pytest.mark.parametrize(("kind", "args", "words", "code"), FILE_FLAG_CASES,
                         ids=[f"{a[-1].split('=')[0] if '=' in a[-1] else a[-2] if a[-2].startswith('--') else a[0]}"
                              f"-{k}" for k, a, _, _ in FILE_FLAG_CASES])
def test_every_file_flag_refuses_a_fifo_or_a_device_at_once(aicr: Aicr, tmp_path: Path, kind: str,
                                                             args: list[str], words: str, code: int) -> None:
    path, problem = special(tmp_path, kind)
    proc = aicr(*[a.replace("{path}", path) for a in args], kubeconfig=tmp_path / "no-kubeconfig", timeout=20)
    compare(proc.returncode, expected=code, suffix=proc.stderr)
    line = next((line for line in proc.stderr.splitlines() if line.startswith("error: ")), "")
    assert words.format(path=path, problem=problem) in line, proc.stderr
