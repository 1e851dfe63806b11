"""The nesting check of aicr_core.session.bounded_json against a reference depth, on any JSON (strings full of brackets,
quotes and backslashes included)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testfixtures import ShouldRaise, compare

from aicr_core.session import bounded_json


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


TRICKY = st.text(alphabet='[]{}"\\:,ab\n\u00e9', max_size=8)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | TRICKY,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
                    max_leaves=40)


@settings(max_examples=400, deadline=None)
@given(JSON, st.integers(min_value=0, max_value=12), st.booleans())
def test_nesting_exceeds_is_depth_beyond_the_limit(value: Any, limit: int, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    compare(bounded_json.nesting_exceeds(text, limit), expected=depth(value) > limit)


@pytest.mark.parametrize("text", [b"[" * 200_000, b"[" * 150 + b"]" * 150, b'{"a": ' * 101 + b"1" + b"}" * 101])
def test_too_deep_is_refused_before_parsing(text: bytes) -> None:
    with ShouldRaise(bounded_json.TooDeep("it nests deeper than 100 levels")):
        bounded_json.loads(text)


def test_the_limit_itself_parses() -> None:
    compare(depth(bounded_json.loads(b"[" * 100 + b"]" * 100)), expected=100)
