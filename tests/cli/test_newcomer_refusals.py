"""Refusals that explain (issue 31): kubectl's "Did you mean this?", a bare --dry-run, help's policy verbs.

The real program (through a real kubectl), its stderr and stdout read as a user sees them.
"""
from __future__ import annotations

import pytest
from testfixtures import compare

from support.harness import Aicr, error_line

R = "rollout-3f9a1c0d2b7e4a51-1"


def hint(stderr: str) -> list[str]:
    """The lines after "Did you mean this?", up to the first blank or unindented one."""
    lines = stderr.splitlines()
    if "Did you mean this?" not in lines:
        return []
    after = lines[lines.index("Did you mean this?") + 1:]
    names = []
    for line in after:
        if not line.startswith("\t"):
            break
        names.append(line.strip())
    return names


@pytest.mark.parametrize("args,message,suggested", [
    (["aprove", R], 'unknown command "aprove" for "kubectl aicr"', ["approve"]),   # one letter left out
    (["descirbe", R], 'unknown command "descirbe" for "kubectl aicr"', ["describe"]),  # two swapped
    (["appr", R], 'unknown command "appr" for "kubectl aicr"', ["approve"]),      # a prefix: named, never run
    (["lst"], 'unknown command "lst" for "kubectl aicr"', ["list"]),
    (["help", "aprove"], 'unknown command "aprove" for "kubectl aicr"', ["approve"]),  # help's topic too
    (["describe", R, "--contxt", "x"], "unknown flag: --contxt", ["--context"]),
    (["--contex", "x", "describe", R], "unknown flag: --contex", ["--context"]),  # before the command
    (["approve", R, "--reas", "x"], "unknown flag: --reas", ["--reason"]),
])
def test_a_near_miss_names_what_was_meant_after_the_usage_line(aicr: Aicr, args: list[str], message: str,
                                                               suggested: list[str]) -> None:
    proc = aicr(*args)
    compare((proc.returncode, proc.stdout), expected=(2, ""), suffix=proc.stderr)
    lines = proc.stderr.splitlines()
    compare(lines[0], expected=f"error: [USAGE] {message}")
    compare(lines[1:3], expected=["", "Did you mean this?"], suffix=proc.stderr)  # kubectl's layout
    compare(hint(proc.stderr)[:len(suggested)], expected=suggested, suffix=proc.stderr)  # the likeliest first


@pytest.mark.parametrize("args", [["frobnicate", R], ["describe", R, "--foo"], ["--frobnicate"], ["xyzzy"]])
def test_nothing_close_gets_no_hint(aicr: Aicr, args: list[str]) -> None:
    proc = aicr(*args)
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    assert error_line(proc).startswith("error: [USAGE] unknown "), proc.stderr
    assert "Did you mean" not in proc.stderr and proc.stdout == "", proc.stderr


@pytest.mark.parametrize("args", [["approve", R, "--reason", "x", "--dry-run"], ["revoke", R, "--dry-run"],
                                  ["acknowledge", R, "--dry-run"]])
def test_a_bare_dry_run_names_its_modes(aicr: Aicr, args: list[str]) -> None:
    proc = aicr(*args)
    compare((proc.returncode, proc.stdout), expected=(2, ""), suffix=proc.stderr)
    compare(error_line(proc), expected="error: [USAGE] flag needs an argument: --dry-run takes a mode: "
                                       "client|server|none")
    assert "Traceback" not in proc.stderr


def test_a_dry_run_mode_that_does_not_exist_still_names_the_modes(aicr: Aicr) -> None:
    proc = aicr("approve", R, "--reason", "x", "--dry-run=clinet")
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    assert "invalid value 'clinet': use none, client or server" in error_line(proc), proc.stderr


def test_help_summary_of_policy_names_every_verb(aicr: Aicr) -> None:
    proc = aicr("help")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    line = next(line for line in proc.stdout.splitlines() if line.split()[:1] == ["policy"])
    for verb in ("check", "validate", "test"):
        assert verb in line.split(":", 1)[0].replace(",", " ").split(), line
