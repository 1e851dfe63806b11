"""Label selectors, checked as apimachinery's `labels.Parse` checks them, before they are sent.

`-l/--selector` goes to the server as `labelSelector`; the server would refuse
a malformed one with a 400, after the command has started. Checking it here
makes it what kubectl makes it: a usage error before any API call. The
grammar: requirements separated by `,`, each `key`, `!key`, `key=value`,
`key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`,
`key>N` or `key<N`; keys are qualified names (`[prefix/]name`), values label
values (at most 63 characters of `[A-Za-z0-9_.-]`, alphanumeric at both ends, or empty).
"""
from __future__ import annotations

import re

from aicr_core.errors import shown, shown_argument

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PREFIX = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|>|<|[^\s!=(),<>]+)")
OPERATORS = ("=", "==", "!=", "in", "notin", ">", "<")


class SelectorError(ValueError):
    pass


def check_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _PREFIX.fullmatch(prefix)):
        raise SelectorError(f"key {shown(key)}: the prefix must be a DNS subdomain (lower case, at most 253 "
                            "characters)")
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        raise SelectorError(f"key {shown(key)}: a name is at most 63 characters of [A-Za-z0-9_.-], "
                            "beginning and ending with a letter or digit")


def check_value(value: str) -> None:
    if value and (len(value) > 63 or not _NAME.fullmatch(value)):
        raise SelectorError(f"value {shown(value)}: a label value is at most 63 characters of [A-Za-z0-9_.-], "
                            "beginning and ending with a letter or digit, or empty")


def tokens(text: str) -> list[str]:
    found, at = [], 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        match = _TOKEN.match(text, at)
        if match is None:  # pragma: no cover - every character starts some token
            raise SelectorError(f"unexpected character at {at}")
        found.append(match.group(1))
        at = match.end()
    return found


def valid_selector(text: str) -> str:
    """`text` if it is a valid label selector (the empty one selects everything); SelectorError if not."""
    words = tokens(text)
    i = 0

    def peek() -> str | None:
        return words[i] if i < len(words) else None

    while i < len(words):
        if words[i] == "!":
            i += 1
            key = peek()
            if key is None or key in "!=(),<>" or key in OPERATORS:
                raise SelectorError("'!' must be followed by a key")
            check_key(key)
            i += 1
            if peek() not in (None, ","):
                raise SelectorError(f"'!{shown_argument(key)}' takes no operator (found {shown(peek())})")
        else:
            key = words[i]
            if key in ("=", "==", "!=", "(", ")", ",", ">", "<"):
                raise SelectorError(f"found {shown(key)}, expected a key")
            check_key(key)
            i += 1
            op = peek()
            if op in ("=", "==", "!="):
                i += 1
                value = peek()
                if value in (None, ","):
                    value = ""
                else:
                    assert value is not None
                    if value in ("=", "==", "!=", "!", "(", ")", ">", "<"):
                        raise SelectorError(f"found {shown(value)}, expected a value for {shown(key)}")
                    i += 1
                check_value(value)
            elif op in (">", "<"):
                i += 1
                value = peek()
                if value is None or not re.fullmatch(r"[+-]?[0-9]+", value):
                    raise SelectorError(f"for '{op}', the value of {shown(key)} must be an integer")
                i += 1
            elif op in ("in", "notin"):
                i += 1
                if peek() != "(":
                    raise SelectorError(f"found {shown(peek())}, expected '(' after {op}")
                i += 1
                values: list[str] = []
                while peek() not in (")", None):
                    word = peek()
                    assert word is not None
                    if word == ",":
                        if not values or words[i - 1] == ",":
                            values.append("")
                        i += 1
                        continue
                    if word in ("=", "==", "!=", "!", "(", ">", "<"):
                        raise SelectorError(f"found {shown(word)} in the values of {shown(key)}")
                    check_value(word)
                    values.append(word)
                    i += 1
                if peek() != ")":
                    raise SelectorError(f"found end of input, expected ')' after the values of {shown(key)}")
                i += 1
                if not values:
                    raise SelectorError(f"for '{op}', the values of {shown(key)} cannot be empty")
            elif op not in (None, ","):
                raise SelectorError(f"found {op!r}, expected an operator ({', '.join(OPERATORS)}), ',' or the end")
        if peek() == ",":
            i += 1
            if peek() is None:
                raise SelectorError("found end of input after ',', expected a requirement")
        elif peek() is not None:
            raise SelectorError(f"found {shown(peek())}, expected ','")
    return text
