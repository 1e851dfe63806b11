"""JSON from others (API servers, credential plugins) within limits of size and nesting.

A body larger than `MAX_BODY_BYTES` is refused before it is all read, and a
document that nests deeper than `MAX_DEPTH` is refused before it is parsed:
Python's parser and every recursive walk after it (escaping, rendering) would
otherwise end in RecursionError, and memory would follow the body's size.

64 MiB is far above any real answer: a page of a list holds at most 500
objects (the session asks for pages of 500), a rollout is a few KiB, and
etcd refuses objects above 1.5 MiB. Kubernetes objects nest about 15 levels
(managedFields the deepest); 100 leaves room for any real schema.
"""
from __future__ import annotations

import json
import re
from typing import Any

MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 100

_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_NOT_STRUCTURE_OR_COMMA = bytes(b for b in range(256) if b not in b'[]{}",')
_STRINGS = re.compile(rb'"[^"]*"')


class TooDeep(ValueError):
    """The document nests deeper than the limit."""


def nesting_exceeds(data: bytes | bytearray, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text nests deeper than `limit` arrays and objects, in C-speed passes.

    The text is cut down to its brackets outside strings ({} counted as []); each pass then
    removes the innermost pairs, one level a pass: what is left after `limit` passes is deeper.
    """
    skeleton = bytes(data).replace(b"\\\\", b"").replace(b'\\"', b"")  # escapes: no quote left inside a string
    # Two adjacent quotes are an empty string, or the end of one and the start of the next with nothing
    # structural between: either way they can go (fast), before the few strings that hold brackets.
    skeleton = skeleton.translate(_BRACKETS, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = _STRINGS.sub(b"", skeleton)
    for _ in range(limit):
        if not skeleton:
            return False
        shorter = skeleton.replace(b"[]", b"")
        if len(shorter) == len(skeleton):
            return False  # unbalanced: not JSON, which the parser will say
        skeleton = shorter
    return bool(skeleton)


def values_in(data: bytes | bytearray) -> int:
    """How many values (objects, arrays, and the elements and members they separate with commas) the JSON
    text holds outside its strings, counted in C-speed passes before anything is built: what parsing it
    would make, at most about twice this many Python objects (a key is built once per document)."""
    skeleton = bytes(data).replace(b"\\\\", b"").replace(b'\\"', b"")  # as nesting_exceeds
    skeleton = skeleton.translate(None, _NOT_STRUCTURE_OR_COMMA).replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = _STRINGS.sub(b"", skeleton)
    return skeleton.count(b",") + skeleton.count(b"[") + skeleton.count(b"{") + 1


def loads(data: bytes | bytearray | str, limit: int = MAX_DEPTH) -> Any:
    """json.loads, but TooDeep (a ValueError) beyond `limit` levels; ValueError when not JSON."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if nesting_exceeds(raw, limit):
        raise TooDeep(f"it nests deeper than {limit} levels")
    try:
        return json.loads(data)
    except RecursionError:  # cannot happen below the limit; kept so that it never is INTERNAL
        raise TooDeep(f"it nests deeper than {limit} levels") from None


def kind_of(value: Any) -> str:
    """What a JSON value is, in words, for messages: `a JSON array`, `a JSON string`."""
    names = {dict: "a JSON object", list: "a JSON array", str: "a JSON string", bool: "a JSON boolean",
             int: "a JSON number", float: "a JSON number", type(None): "JSON null"}
    return names.get(type(value), type(value).__name__)
