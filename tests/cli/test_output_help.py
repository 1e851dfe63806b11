"""help lists the output options (issue 17): list's own flags under Flags, the output flags for every command."""
from __future__ import annotations

from testfixtures import compare

from support.harness import Aicr

OUTPUT_FLAGS = ("-o, --output NAME[=ARG]", "--no-headers", "--color WHEN", "--allow-missing-template-keys")


def test_help_list_names_its_flags_and_the_output_flags(aicr: Aicr) -> None:
    proc = aicr("help", "list")
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    own, _, common = proc.stdout.partition("\nGlobal flags:\n")
    own = own.split("\nFlags:\n", 1)[1]
    for flag in ("-l, --selector SELECTOR", "--sort-by JSONPATH", "-w, --watch"):
        assert flag in own, (flag, own)
    for flag in OUTPUT_FLAGS:
        assert flag in common, (flag, common)
    for flag in ("--sort-by", "--selector"):  # list's own: not a flag of describe
        assert flag not in aicr("help", "describe").stdout


def test_the_overview_lists_the_output_flags(aicr: Aicr) -> None:
    proc = aicr("help")
    flags = proc.stdout.split("Flags (accepted by every command", 1)[1]
    for flag in OUTPUT_FLAGS:
        assert flag in flags, (flag, flags)
    assert "jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE" in flags
