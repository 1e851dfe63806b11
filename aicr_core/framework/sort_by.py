"""`--sort-by JSONPATH`: items ordered as kubectl's `get --sort-by` orders them (kubectl/pkg/cmd/get/sorter.go).

The path is relaxed (`name`, `.name`, `{.name}`), evaluated on each item with
missing keys allowed, and the first value found is the key. An item where the
path finds nothing (or null) comes first; numbers compare as numbers only with
the same JSON type (an int with an int), strings in natural order (`a2` < `a10`),
or as Kubernetes quantities when both are one (`500m` < `2`); booleans, lists,
maps and mixed types are unsortable: USAGE, as is a path found on no item.
Equal keys keep the command's order (newest first, for list): a stable sort,
where Go's is not.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from aicr_core.errors import UsageError, shown, shown_argument

if TYPE_CHECKING:
    from aicr_core.framework.jsonpath import Template

_MISSING = object()
_SUFFIXES: dict[str, int | Decimal] = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1, "k": 10**3,
             "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")
_CHUNK = re.compile(r"[0-9]+|[^0-9]+")


def parse_sort_by(text: str) -> Template:
    """The template of `--sort-by` (USAGE when it does not parse)."""
    from aicr_core.framework import jsonpath

    try:
        return jsonpath.parse(jsonpath.relaxed(text))
    except jsonpath.JsonPathError as err:
        raise UsageError(f"--sort-by {shown_argument(text)}: {shown_argument(str(err), 200)}") from None


def sort_items(items: Sequence[dict[str, Any]], template: Template) -> list[dict[str, Any]]:
    """The items in kubectl's --sort-by order."""
    keys = [first_value(template, item) for item in items]
    if items and all(k is _MISSING for k in keys):
        raise UsageError(f"couldn't find any field with path {shown(template.source)} in the list of objects")

    def by_key(i: int, j: int) -> int:
        return _compare(keys[i], keys[j], template.source)

    order = sorted(range(len(items)), key=functools.cmp_to_key(by_key))
    return [items[i] for i in order]


def first_value(template: Template, item: Any) -> Any:
    from aicr_core.framework import jsonpath

    try:
        found = template.results(item, allow_missing=True)
    except jsonpath.JsonPathError as err:
        raise UsageError(f"--sort-by {shown_argument(template.source)}: {shown_argument(str(err), 200)}") from None
    return found[0][0] if found and found[0] else _MISSING


def _compare(a: Any, b: Any, path: str) -> int:
    if _is_nil(a) or _is_nil(b):  # nothing found sorts first
        return 0 if _is_nil(a) and _is_nil(b) else (-1 if _is_nil(a) else 1)
    return -1 if _less(a, b, path) else (1 if _less(b, a, path) else 0)


def _is_nil(value: Any) -> bool:
    return value is _MISSING or value is None


def _less(a: Any, b: Any, path: str) -> bool:
    kind_a, kind_b = _go_kind(a), _go_kind(b)
    if kind_a in ("int64", "float64") and kind_a == kind_b:
        return bool(a < b)
    if kind_a == "string" and kind_b == "string":
        qa, qb = quantity(a), quantity(b)
        if qa is not None:  # sorter.go parses the second only when the first is a quantity (0 if it is not)
            return qa < (qb if qb is not None else 0)
        return natural_less(a, b)
    what = kind_a if kind_a != "other" else type(a).__name__
    raise UsageError(f"--sort-by {shown_argument(path)}: unsortable values: {what} and {kind_b}")


def _go_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64" if -(2**63) <= value < 2**63 else "float64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    return "other"


def quantity(text: str) -> Decimal | None:
    """A Kubernetes quantity's value (`500m`, `2Gi`, `1e3`), or None when `text` is not one."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    try:
        value = Decimal(number + (exponent or ""))
    except InvalidOperation:
        return None
    return value * Decimal(_SUFFIXES[suffix or ""])


def natural_less(a: str, b: str) -> bool:
    """fvbommel/sortorder's NaturalLess: runs of digits compare as numbers (leading zeros: shorter first)."""
    ca, cb = _CHUNK.findall(a), _CHUNK.findall(b)
    for x, y in zip(ca, cb, strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            nx, ny = x.lstrip("0") or "0", y.lstrip("0") or "0"
            if len(nx) != len(ny):
                return len(nx) < len(ny)
            if nx != ny:
                return nx < ny
            return len(x) < len(y)  # same number: fewer leading zeros first
        return x < y
    return len(ca) < len(cb)
