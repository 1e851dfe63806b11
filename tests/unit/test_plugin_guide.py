"""docs/plugins.md writes down the plugin author's API: it must stay what the code is.

The session's methods with their parameters, `Result`'s signature, the kit's every field and factory
parameter, and every field of `Rollout`: a change to any of them that the guide does not follow fails here.
"""
from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from aicr_core import testing
from aicr_core.domain.operator_api import Rollout
from aicr_core.framework.result import Result
from aicr_core.session.kube import KubeSession

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text()


def section(title: str) -> str:
    """The text under the `## ` heading that starts with `title`, to the next such heading."""
    return GUIDE.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def split_parameters(text: str) -> list[str]:
    """`a, b=(1, 2), *, c` -> ["a", "b=(1, 2)", "*", "c"]: commas inside brackets do not split."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [p.strip() for p in [*parts, current] if p.strip()]


def documented(call: str, text: str) -> list[str]:
    """The parameter names of `call(...)` as the text writes it (its first occurrence)."""
    match = re.search(rf"`{re.escape(call)}\(([^`]*)\)`", text)
    assert match, f"{call}(...) is not written down"
    return [p.split("=")[0].strip() for p in split_parameters(match.group(1).replace("\n", " ")) if p != "*"]


def parameters(function: Callable[..., Any]) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


def test_every_public_method_of_the_session_is_in_the_table_with_its_parameters() -> None:
    text = section("Reading the cluster from a command")
    public = sorted(name for name, _ in inspect.getmembers(KubeSession, inspect.isfunction) if not name.startswith("_"))
    compare(public, expected=["can_i", "create", "get", "list", "patch", "watch", "whoami", "with_deadline"])
    for name in public:
        compare(documented(name, text), expected=parameters(getattr(KubeSession, name)), prefix=name)


def test_results_whole_signature_is_written_down() -> None:
    block = section("A command").split("### `Result`, the whole signature", 1)[1].split("```python\n", 1)[1]
    signature = block.split("```", 1)[0]
    compare([p.split(":")[0].strip() for p in split_parameters(signature.split("(", 1)[1].rsplit(")", 1)[0])],
            expected=parameters(Result.__init__))
    assert "names: tuple[str, ...] = ()" in signature and "warnings: tuple[str, ...] = ()" in signature


def test_every_field_of_the_kits_verdict_is_in_its_table() -> None:
    table = section("Testing a policy: the kit")
    rows = re.findall(r"^\| `(\w+)` \|", table, re.M)
    fields = [f.name for f in dataclasses.fields(testing.PolicyVerdict)]
    properties = [n for n, v in vars(testing.PolicyVerdict).items() if isinstance(v, property)]
    compare(rows, expected=fields + properties)
    assert "code" in properties


@pytest.mark.parametrize("fixture,function", [
    ("policy_verdict", testing.policy_verdict), ("aicr_rollout", testing.rollout),
    ("aicr_identity", testing.identity), ("aicr_approval", testing.approval),
    ("aicr_revocation", testing.revocation), ("aicr_acknowledgement", testing.acknowledgement),
    ("aicr_assessment", testing.assessment), ("step", testing.step),
])
def test_the_kits_factories_are_written_down_with_their_parameters(fixture: str,
                                                                   function: Callable[..., Any]) -> None:
    compare(documented(fixture, section("Testing a policy: the kit")), expected=parameters(function))


def test_every_field_of_a_rollout_is_named() -> None:
    text = section("Reading the cluster from a command")
    compare([f for f in Rollout._fields if f"`{f}`" not in text], expected=[])
