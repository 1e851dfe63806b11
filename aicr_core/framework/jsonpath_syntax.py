"""The syntax of kubectl's jsonpath templates: client-go's parser (util/jsonpath/parser.go), rune for rune.

`parse_template` turns a template into its parse tree: text and actions, an action a list of nodes.
Its quirks are client-go's and are kept, since kubectl accepts and refuses by them.
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Union

from aicr_core.framework.jsonpath_format import INT64_MAX, INT64_MIN, GoInt


class JsonPathError(ValueError):
    """A template that does not parse, or fails on a document; the message is client-go's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# The parse tree. The root is a list of Text and Action; an Action `{...}` holds the nodes it chains,
# each working on the values the one before it found.

@dataclass(frozen=True)
class Text:
    """Text outside braces, or a quoted literal."""

    text: str


@dataclass(frozen=True)
class Field:
    name: str


@dataclass(frozen=True)
class Slice:
    # (known, value, derived) for start, end and step, as client-go's ParamsEntry
    params: tuple[tuple[bool, int, bool], ...]


@dataclass(frozen=True)
class Filter:
    left: Action
    right: Action
    operator: str


@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class Wildcard:
    pass


@dataclass(frozen=True)
class Recursive:
    pass


@dataclass(frozen=True)
class Branches:
    """A union `[a,b]`: each branch on the same values, results one after the other."""

    branches: tuple[Action, ...]


@dataclass(frozen=True)
class Identifier:
    """`range`, `end`, or any other word (an error only when executed)."""

    name: str


@dataclass
class Action:
    nodes: list[Node] = field(default_factory=list)


Node = Union[Text, Field, Slice, Filter, Literal, Wildcard, Recursive, Branches, Identifier, Action]

_EOF = ""
_DICT_KEY = re.compile(r"'([^']*)'")
_SLICE = re.compile(r"(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?")
_COMPARISON = re.compile(r"([^!<>=]+)([!<>=]+)(.+?)")
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")


def _is_digit(r: str) -> bool:
    return r != _EOF and unicodedata.category(r) == "Nd"


def _is_alphanumeric(r: str) -> bool:
    return r == "_" or r.isalpha() or _is_digit(r)


def _is_terminator(r: str) -> bool:
    return r in (_EOF, " ", "\t", "\r", "\n", ".", ",", "[", "]", "$", "@", "{", "}")


def _go_rune(r: str) -> str:
    """fmt's %#U: U+0021 '!'."""
    return f"U+{ord(r):04X}" + (f" '{r}'" if r.isprintable() else "")


def _atoi(text: str) -> int | None:
    """strconv.Atoi: ASCII digits with an optional sign, within int64."""
    if not _INT.fullmatch(text) or len(text.lstrip("+-").lstrip("0")) > 19:
        return None
    value = int(text)
    return value if INT64_MIN <= value <= INT64_MAX else None


def parse_template(text: str) -> list[Node]:
    """The root of a template's tree: its text and its actions; JsonPathError with client-go's message."""
    return _Parser(text).parse()


class _Parser:
    """client-go's parser, one rune at a time; its tail calls are a loop here, so no template is too long."""

    def __init__(self, text: str) -> None:
        self.input = text
        self.pos = 0
        self.start = 0
        self.width = 0

    def parse(self) -> list[Node]:
        root: list[Node] = []
        while self._text(root):
            action = Action()
            root.append(action)
            self._action(action)
        return root

    def _consume(self) -> str:
        value = self.input[self.start:self.pos]
        self.start = self.pos
        return value

    def _next(self) -> str:
        if self.pos >= len(self.input):
            self.width = 0
            return _EOF
        self.width = 1
        self.pos += 1
        return self.input[self.pos - 1]

    def _peek(self) -> str:
        r = self._next()
        self._backup()
        return r

    def _backup(self) -> None:
        self.pos -= self.width

    def _text(self, root: list[Node]) -> bool:
        """Text up to the next `{`; True when an action starts there."""
        brace = self.input.find("{", self.pos)
        self.pos = len(self.input) if brace < 0 else brace
        if self.pos > self.start:
            root.append(Text(self._consume()))
        if brace < 0:
            return False
        self.pos += 1
        self._consume()
        return True

    def _action(self, cur: Action) -> None:
        while True:
            rest = self.input[self.pos:]
            if rest.startswith("}"):
                self.pos += 1
                self._consume()
                return
            if rest.startswith("[?("):
                self._filter(cur)
                continue
            if rest.startswith(".."):
                self._recursive(cur)
                continue
            r = self._next()
            if r in (_EOF, "\r", "\n"):
                raise JsonPathError("unclosed action")
            if r in (" ", "@", "$"):
                self._consume()
            elif r == "[":
                self._array(cur)
            elif r in ('"', "'"):
                self._quote(cur, r)
            elif r == ".":
                self._field(cur)
            elif r in ("+", "-") or _is_digit(r):
                self._backup()
                self._number(cur)
            elif _is_alphanumeric(r):
                self._backup()
                self._identifier(cur)
            else:
                raise JsonPathError(f"unrecognized character in action: {_go_rune(r)}")

    def _identifier(self, cur: Action) -> None:
        while not _is_terminator(self._next()):
            pass
        self._backup()
        value = self._consume()
        cur.nodes.append(Literal(value == "true") if value in ("true", "false") else Identifier(value))

    def _recursive(self, cur: Action) -> None:
        if cur.nodes and isinstance(cur.nodes[-1], Recursive):
            raise JsonPathError("invalid multiple recursive descent")
        self.pos += 2
        self._consume()
        cur.nodes.append(Recursive())
        if _is_alphanumeric(self._peek()):
            self._field(cur)

    def _number(self, cur: Action) -> None:
        if self._peek() in ("+", "-"):
            self._next()
        while True:
            r = self._next()
            if r != "." and not _is_digit(r):
                self._backup()
                break
        value = self._consume()
        integer = _atoi(value)
        if integer is not None:
            cur.nodes.append(Literal(GoInt(integer)))
            return
        if _FLOAT.fullmatch(value) and not math.isinf(float(value)):
            cur.nodes.append(Literal(float(value)))
            return
        raise JsonPathError(f"cannot parse number {value}")

    def _array(self, cur: Action) -> None:
        while True:
            r = self._next()
            if r in (_EOF, "\n"):
                raise JsonPathError("unterminated array")
            if r == "]":
                break
        text = self._consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.nodes.append(Branches(tuple(Action(parse_action(f"[{part.strip(' ')}]")) for part in parts)))
            return
        key = _DICT_KEY.fullmatch(text)
        if key:
            cur.nodes.extend(parse_action("." + key.group(1)))
            return
        match = _SLICE.fullmatch(text)
        if not match:
            raise JsonPathError(f"invalid array index {text}")
        params: list[tuple[bool, int, bool]] = []
        for i, group in enumerate(match.groups()):
            raw = (group or "")[1:] if i > 0 else (group or "")
            if group:
                if i > 0 and raw == "":
                    params.append((False, 0, False))
                else:
                    number = _atoi(raw)
                    if number is None:
                        raise JsonPathError(f"array index {raw} is not a number")
                    params.append((True, number, False))
            elif i == 1:  # `[n]` is `[n:n+1]`, the end worked out from the start (int wraps as Go's does)
                end = params[0][1] + 1
                params.append((True, end - 2**64 if end > INT64_MAX else end, True))
            else:
                params.append((False, 0, False))
        cur.nodes.append(Slice(tuple(params)))

    def _filter(self, cur: Action) -> None:
        self.pos += 3
        self._consume()
        begin = end = False
        pair = ""
        while True:
            r = self._next()
            if r in (_EOF, "\n"):
                raise JsonPathError("unterminated filter")
            if r in ('"', "'"):
                if not begin:
                    begin, pair = True, r
                    continue
                if self.input[self.pos - 2] != "\\" and r == pair:
                    end = True
            elif r == ")" and begin == end:
                break
        if self._next() != "]":
            raise JsonPathError("unclosed array expect ]")
        text = self._consume()[:-2]
        match = _COMPARISON.fullmatch(text)
        if match is None:
            cur.nodes.append(Filter(Action(parse_action(text)), Action(), "exists"))
        else:
            left, operator, right = match.groups()
            cur.nodes.append(Filter(Action(parse_action(left)), Action(parse_action(right)), operator))

    def _quote(self, cur: Action, end: str) -> None:
        while True:
            r = self._next()
            if r in (_EOF, "\n"):
                raise JsonPathError("unterminated quoted string")
            if r == end and self.input[self.pos - 2] != "\\":
                break
        value = self._consume()
        try:
            text = _unquote(value)
        except ValueError:
            raise JsonPathError(f"unquote string {value} error invalid syntax") from None
        cur.nodes.append(Text(text))

    def _field(self, cur: Action) -> None:
        self._consume()
        while True:
            r = self._next()
            if r == "\\":
                self._next()
            elif _is_terminator(r):
                self._backup()
                break
        value = self._consume()
        cur.nodes.append(Wildcard() if value == "*" else Field(value.replace("\\", "")))


def parse_action(text: str) -> list[Node]:
    """The nodes of one action `{text}`, as client-go parses a union's branch or a filter's side."""
    first = parse_template("{" + text + "}")[0]
    assert isinstance(first, Action)
    return first.nodes


_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}


def _unquote(quoted: str) -> str:
    """client-go's UnquoteExtend: Go's string escapes in '...' or "...".

    `\\xNN` and octal escapes give raw bytes, which need not be UTF-8: such a byte comes back as a
    surrogate escape (U+DC80..U+DCFF), so `text.encode("utf-8", "surrogateescape")` is Go's bytes.
    """
    quote, body = quoted[0], quoted[1:-1].encode("utf-8", "surrogateescape")
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c == ord(quote):
            raise ValueError(quoted)
        if c != 92:  # not a backslash: the byte as it is (a multibyte rune passes byte by byte)
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(body):
            raise ValueError(quoted)
        e = chr(body[i + 1])
        i += 2
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
        elif e in "xuU":
            n = {"x": 2, "u": 4, "U": 8}[e]
            digits = body[i:i + n].decode("latin-1")
            if len(digits) < n or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(quoted)
            value = int(digits, 16)
            i += n
            if e == "x":
                out.append(value)
            elif value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                raise ValueError(quoted)
            else:
                out += chr(value).encode("utf-8")
        elif e in "01234567":
            digits = e + body[i:i + 2].decode("latin-1")
            if len(digits) < 3 or any(d not in "01234567" for d in digits):
                raise ValueError(quoted)
            value = int(digits, 8)
            if value > 255:
                raise ValueError(quoted)
            out.append(value)
            i += 2
        elif e in "'\"" and e == quote:
            out.append(ord(e))
        else:
            raise ValueError(quoted)
    return out.decode("utf-8", "surrogateescape")
