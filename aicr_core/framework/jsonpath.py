"""kubectl's jsonpath templates (`-o jsonpath=...`), as client-go's `k8s.io/client-go/util/jsonpath` runs them.

Parse once (a bad template is the user's mistake, before any API call), then execute on each document::

    template = jsonpath.parse("{range .items[*]}{.metadata.name}{'\\n'}{end}")  # JsonPathError
    text = template.execute(document, allow_missing=True)                      # JsonPathError

The document is JSON-like Python, seen as `kubectl get` sees an object decoded from JSON: an int is an
int64 (beyond int64 a float64), a float a float64. The dialect is client-go's, quirks included, since a
template must print what kubectl prints: `[]` means `[0]`; unions are written in brackets only
(`{['a','b']}`: `{.a,.b}` does not parse); `*` over a string yields its bytes; a comparison skips an item
that lacks the key ("x is not found" without allow_missing) but fails on a null one; an int64 and a
float64 never compare. tests/unit/test_jsonpath_differential.py holds this module to client-go itself.

Two differences, on purpose: where Go's order is random (`*` and `..` over a map) keys come in sorted
order; and each execute starts afresh, where client-go's JSONPath keeps a range's state after an
Execute and fails on the next document ("not in range, nothing to end", e.g. `kubectl get -w`).
Where client-go panics (reflect on a zero Value, e.g. `{range .a[*]}{[0]}{end}` over a null item)
kubectl would crash; here it is a JsonPathError with the panic's text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aicr_core.framework.jsonpath_format import NO_VALUE, GoByte, as_go, sprint, to_text, type_name
from aicr_core.framework.jsonpath_syntax import (
    Action,
    Branches,
    Field,
    Filter,
    Identifier,
    JsonPathError,
    Literal,
    Node,
    Recursive,
    Slice,
    Text,
    Wildcard,
    parse_template,
)

__all__ = ["JsonPathError", "NO_VALUE", "Template", "parse", "relaxed", "sprint"]


class _EvalError(JsonPathError):
    """An evaluation error, with the values client-go returns beside it (an existence filter uses them)."""

    def __init__(self, message: str, returned: list[Any]) -> None:
        super().__init__(message)
        self.returned = returned


class _GoPanic(JsonPathError):
    """Where client-go panics (reflect on a zero Value): kubectl would crash; here it is an error."""


def _utf8(s: str) -> bytes:
    """Go's bytes of a string (a surrogate escape from a `\\xNN` literal is its raw byte)."""
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace")


def _children(value: Any) -> list[Any]:
    """What `*` yields for one value: a map's values (keys sorted), a list's items, a string's bytes."""
    if isinstance(value, dict):
        return [as_go(value[k]) for k in sorted(value)]
    if isinstance(value, list):
        return [as_go(v) for v in value]
    if isinstance(value, str):
        return [GoByte(b) for b in _utf8(value)]
    return []


_INCOMPATIBLE = "incompatible types for comparison"


def _basic_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, GoByte):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise _EvalError("invalid type for comparison", [])


def _equal(a: Any, b: Any) -> bool:
    ka, kb = _basic_kind(a), _basic_kind(b)
    if ka != kb and {ka, kb} != {"int", "uint"}:
        raise _EvalError(_INCOMPATIBLE, [])
    if ka == "string":
        return bool(_utf8(a) == _utf8(b))
    return bool(a == b)


def _less(a: Any, b: Any) -> bool:
    ka, kb = _basic_kind(a), _basic_kind(b)
    if ka != kb:
        if {ka, kb} != {"int", "uint"}:
            raise _EvalError(_INCOMPATIBLE, [])
        return bool(a < b)
    if ka == "bool":
        raise _EvalError("invalid type for comparison", [])
    if ka == "string":
        return _utf8(a) < _utf8(b)
    return bool(a < b)


def _compare(operator: str, a: Any, b: Any) -> bool:
    if operator == "<":
        return _less(a, b)
    if operator == ">":
        return not (_less(a, b) or _equal(a, b))
    if operator == "==":
        return _equal(a, b)
    if operator == "!=":
        return not _equal(a, b)
    if operator == "<=":
        return _less(a, b) or _equal(a, b)
    if operator == ">=":
        return not _less(a, b)
    raise _EvalError(f"unrecognized filter operator {operator}", [])


class _Run:
    """One execution: client-go's range bookkeeping, and whether a missing key is an error."""

    def __init__(self, root: list[Node], allow_missing: bool) -> None:
        self.root = root
        self.start = 0  # client-go narrows its root node list to a suffix as ranges are entered
        self.allow_missing = allow_missing
        self.begin_range = 0
        self.in_range = 0
        self.end_range = 0
        self.last_end: int | None = None

    def find_results(self, data: Any) -> list[list[Any]]:
        start = self.start
        count = len(self.root) - start
        full: list[list[Any]] = []
        i = 0
        while i < count:
            results = self.walk([data], self.root[start + i])
            if 0 < self.end_range <= self.in_range:
                self.end_range -= 1
                self.last_end = start + i
                break
            if self.begin_range > 0:
                self.begin_range -= 1
                self.in_range += 1
                self.start = start + i + 1
                if results:
                    for value in results:
                        if value is NO_VALUE:
                            raise _GoPanic("reflect: call of reflect.Value.Interface on zero Value")
                        self.start = start + i + 1
                        full.extend(self.find_results(NO_VALUE if value is None else value))
                else:  # still walk the range's body, so that its {end} is found (and its errors raised)
                    self.find_results(NO_VALUE)
                self.in_range -= 1
                for k in range(i + 1, count):
                    if start + k == self.last_end:
                        i = k
                        break
                i += 1
                continue
            full.append(results)
            i += 1
        return full

    def walk(self, values: list[Any], node: Node) -> list[Any]:
        if isinstance(node, Action):
            return self.eval_list(values, node)
        if isinstance(node, Text):
            return [node.text]
        if isinstance(node, Field):
            return self.eval_field(values, node.name)
        if isinstance(node, Slice):
            return self.eval_slice(values, node)
        if isinstance(node, Filter):
            return self.eval_filter(values, node)
        if isinstance(node, Literal):
            return [node.value for _ in values]
        if isinstance(node, Wildcard):
            return [child for v in values if v is not None for child in _children(v)]
        if isinstance(node, Recursive):
            return self.eval_recursive(values)
        if isinstance(node, Branches):
            out: list[Any] = []
            for branch in node.branches:
                try:
                    out.extend(self.eval_list(values, branch))
                except _EvalError as err:
                    raise _EvalError(err.message, values) from None
            return out
        return self.eval_identifier(values, node)

    def eval_list(self, values: list[Any], node: Action) -> list[Any]:
        for child in node.nodes:
            values = self.walk(values, child)
        return values

    def eval_identifier(self, values: list[Any], node: Identifier) -> list[Any]:
        if node.name == "range":
            self.begin_range += 1
            return values
        if node.name == "end":
            if self.in_range > 0:
                self.end_range += 1
                return []
            raise _EvalError("not in range, nothing to end", [])
        raise _EvalError(f"unrecognized identifier {node.name}", values)

    def eval_field(self, values: list[Any], name: str) -> list[Any]:
        if not values:
            return []
        results = [as_go(v[name]) for v in values if isinstance(v, dict) and name in v]
        if not results and not self.allow_missing:
            raise _EvalError(f"{name} is not found", [])
        return results

    def eval_slice(self, values: list[Any], node: Slice) -> list[Any]:
        result: list[Any] = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                if value is NO_VALUE:
                    raise _GoPanic("reflect: call of reflect.Value.Type on zero Value")
                raise _EvalError(f"{type_name(value)} is not array or slice", values)
            (start_known, start, _), (end_known, end, end_derived), (step_known, step, _) = node.params
            length = len(value)
            if not start_known:
                start = 0
            if start < 0:
                start += length
            if not end_known:
                end = length
            if end < 0 or (end == 0 and end_derived):
                end += length
            if end == start:  # client-go returns at once here, even with values left to walk
                return result
            if start >= length or start < 0:
                raise _EvalError(f"array index out of bounds: index {start}, length {length}", values)
            if end > length or end < 0:
                raise _EvalError(f"array index out of bounds: index {end - 1}, length {length}", values)
            if start > end:
                raise _EvalError(f"starting index {start} is greater than ending index {end}", values)
            if step_known and step <= 0:
                raise _EvalError("step must be > 0", values)
            result.extend(as_go(v) for v in value[start:end:step if step_known else 1])
        return result

    def eval_recursive(self, values: list[Any]) -> list[Any]:
        result: list[Any] = []
        for value in values:
            if value is None:
                continue
            children = _children(value)
            if children:
                result.append(value)
                result.extend(self.eval_recursive(children))
        return result

    def eval_filter(self, values: list[Any], node: Filter) -> list[Any]:
        results: list[Any] = []
        for value in values:
            if not isinstance(value, list):
                raise _EvalError(f"{sprint(value)} is not array or slice and cannot be filtered", values)
            for item in map(as_go, value):
                if node.operator == "exists":
                    try:
                        lefts = self.eval_list([item], node.left)
                    except _EvalError as err:  # client-go looks at what came back, error or not
                        lefts = err.returned
                    if lefts:
                        results.append(item)
                    continue
                sides = []
                for side in (node.left, node.right):
                    try:
                        found = self.eval_list([item], side)
                    except _EvalError as err:
                        raise _EvalError(err.message, values) from None
                    if len(found) > 1:
                        raise _EvalError("can only compare one element at a time", values)
                    sides.append(found)
                    if not found:
                        break
                if len(sides) < 2 or not sides[1]:
                    continue
                try:
                    passed = _compare(node.operator, sides[0][0], sides[1][0])
                except _EvalError as err:
                    raise _EvalError(err.message, results) from None
                if passed:
                    results.append(item)
        return results


# ---- the API ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Template:
    """A parsed template; executing it does not change it."""

    source: str
    _root: tuple[Node, ...]

    def results(self, document: Any, allow_missing: bool = True) -> list[list[Any]]:
        """client-go's FindResults: the values found, one list per action or text of the template.

        Values are the document's own (dict, list, str, ...), plus GoByte, GoInt and NO_VALUE.
        """
        run = _Run(list(self._root), allow_missing)
        try:
            return run.find_results(NO_VALUE if document is None else as_go(document))
        except RecursionError:
            raise JsonPathError("the document is nested too deeply") from None

    def execute(self, document: Any, allow_missing: bool = True) -> str:
        """The text `kubectl get -o jsonpath=TEMPLATE` prints for the document (kubectl adds no newline).

        A list or a map found prints as Go's json.Marshal prints it, several values in one action are
        separated by a space, a null prints `null`; with allow_missing false a missing key is an error.
        """
        out: list[str] = []
        for found in self.results(document, allow_missing):
            try:
                out.append(" ".join(to_text(v) for v in found))
            except ValueError as err:  # json.Marshal's refusal of a NaN
                raise JsonPathError(str(err)) from None
            except RecursionError:
                raise JsonPathError("the document is nested too deeply") from None
        return "".join(out)

    def column(self, document: Any) -> str:
        """One cell of kubectl's custom columns: every value with fmt.Sprint, joined by `,`; `<none>` if none."""
        found = self.results(document, allow_missing=True)
        cells = ["<none>"] if not found or not found[0] else []
        for value in (v for row in found for v in row):
            if value is NO_VALUE:
                raise _GoPanic("reflect: call of reflect.Value.Interface on zero Value")
            try:
                cells.append(sprint(value))
            except RecursionError:
                raise JsonPathError("the document is nested too deeply") from None
        return ",".join(cells)


def parse(template: str) -> Template:
    """Parse a template as kubectl's `-o jsonpath=` does; JsonPathError with client-go's message if it cannot."""
    return Template(template, tuple(parse_template(template)))


_RELAXED = re.compile(r"\{\.?([^{}]+)\}|\.?([^{}]+)")


def relaxed(expression: str) -> str:
    """kubectl's RelaxedJSONPathExpression (custom columns, --sort-by): `a.b`, `.a.b`, `{a.b}` → `{.a.b}`."""
    if not expression:
        return expression
    match = _RELAXED.fullmatch(expression)
    if match is None:
        raise JsonPathError("unexpected path string, expected a 'name1.name2' or '.name1.name2' or "
                            "'{name1.name2}' or '{.name1.name2}'")
    return "{." + (match.group(1) or match.group(2)) + "}"

