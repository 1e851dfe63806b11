"""How Go prints the values a jsonpath template finds: `fmt.Print`, `fmt.Sprint` and `encoding/json`.

kubectl prints a map or a list found by a template as `json.Marshal` does it, and anything else with
`fmt.Fprint`; its custom columns print every value with `fmt.Sprint`. The document is JSON-like Python
(dict, list, str, bool, int, float, None), seen as kubectl sees an object decoded from JSON: an integer
is an int64 (one outside int64's range a float64, as apimachinery's decoder makes it), anything else a
float64. Two more Go types appear in results: the bytes of a string that `*` or `..` walked into
(`GoByte`, uint8), and a number literal of the template (`GoInt`, int).
"""
from __future__ import annotations

import math
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class GoByte(int):
    """One byte of a string, as Go's reflect indexes a string: a uint8."""


class GoInt(int):
    """A number literal of a template such as `{5}`: Go's int, not the document's int64."""


class NoValue:
    """Go's zero reflect.Value: what a range's `{@}` is on a null element; it prints as `<no value>`."""

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE = NoValue()


def as_go(value: Any) -> Any:
    """The value as the decoded document holds it: an int beyond int64 became a float64."""
    if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
        return float(value)
    return value


def type_name(value: Any) -> str:
    """Go's name of the value's type, for messages such as `string is not array or slice`."""
    value = as_go(value)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, GoByte):
        return "uint8"
    if isinstance(value, GoInt):
        return "int"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    return type(value).__name__


def _shortest_digits(f: float) -> tuple[str, int]:
    """The shortest digits that read back as `f` (> 0), and where the point goes: f = 0.DIGITS × 10^point.

    Python's repr and Go's strconv both pick the shortest round-tripping digits, closest to the value.
    """
    mantissa, _, exponent = repr(f).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0") or "0", point


def _e_form(digits: str, point: int) -> str:
    exp = point - 1
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _f_form(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def _special(f: float) -> str | None:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    return None


def float_text(f: float) -> str:
    """fmt's %v of a float64: strconv's shortest 'g', exponent form from 1e+06 and below 1e-04."""
    special = _special(f)
    if special is not None:
        return special
    digits, point = _shortest_digits(abs(f))
    sign = "-" if f < 0 else ""
    exp = point - 1
    return sign + (_e_form(digits, point) if exp < -4 or exp >= 6 else _f_form(digits, point))


def float_json(f: float) -> str:
    """encoding/json's float64: plain digits, exponent form below 1e-6 and from 1e21 (`1e-7`, `1e+21`)."""
    if math.isnan(f) or math.isinf(f):
        raise ValueError(f"json: unsupported value: {_special(f)}")
    special = _special(f)
    if special is not None:
        return special
    digits, point = _shortest_digits(abs(f))
    sign = "-" if f < 0 else ""
    if abs(f) < 1e-6 or abs(f) >= 1e21:
        text = _e_form(digits, point)
        if text[-4:-1] == "e-0":  # Go writes e-7, not e-07
            text = text[:-2] + text[-1]
        return sign + text
    return sign + _f_form(digits, point)


_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
               "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_string(s: str) -> str:
    """encoding/json's string: HTML-safe (`<` is \\u003c), control characters escaped, U+2028/9 too."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch in _JSON_SHORT:
            out.append(_JSON_SHORT[ch])
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        elif 0xD800 <= code <= 0xDFFF:  # not UTF-8: Go's decoder made it U+FFFD
            out.append("\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def to_json(value: Any) -> str:
    """json.Marshal of a decoded document's value (map keys sorted, as Go sorts them)."""
    value = as_go(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return float_json(value)
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, list):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json_string(k)}:{to_json(value[k])}" for k in sorted(value)) + "}"
    raise ValueError(f"json: unsupported type: {type_name(value)}")


def sprint(value: Any) -> str:
    """fmt.Sprint of a value (a nil is `<nil>`, a map `map[k:v ...]` with sorted keys, a list `[a b]`)."""
    value = as_go(value)
    if value is None:
        return "<nil>"
    if value is NO_VALUE:
        return "<invalid reflect.Value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(sprint(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{sprint(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def to_text(value: Any) -> str:
    """What kubectl prints for one value a template found: JSON for a map or a list, fmt.Fprint otherwise."""
    if value is NO_VALUE:
        return "<no value>"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return to_json(value)
    return sprint(value)
