"""The bounds of one list read page by page (`limit` + `continue`): what no API server answers is refused.

An API server's page holds at most the `limit` asked for, and each `continue` token it gives names a
point further on: a page with more items, or a token given before, is a lie, and a list that never
ends (a new token every time) fills memory. Each page's values are counted before it is parsed (a
64 MiB page of `{},` is 22 million objects, 2 GiB once built), and the whole list is bounded in
pages, items, values and bytes. Any of these ends the list with INVALID_OBJECT, naming the bound
(docs/sessions.md has the bounds and what a lying server costs within them).
"""
from __future__ import annotations

from aicr_core.errors import AicrError, Code
from aicr_core.session import bounded_json

MAX_LIST_PAGES = 200  # a list of MAX_LIST_ITEMS in pages of 500 is 100 pages
MAX_LIST_ITEMS = 50_000
MAX_LIST_VALUES = 2_000_000  # JSON values in all pages together (bounded_json.values_in)
MAX_LIST_BYTES = 96 * 1024 * 1024  # all pages' bodies together


class ListBounds:
    """What one list has read so far; each method refuses what goes beyond a bound."""

    def __init__(self, path: str, limit: int) -> None:
        self.path, self.limit = path, limit
        self.pages = self.items = self.values = self.bytes = 0
        self.tokens: set[str] = set()

    def _refuse(self, why: str) -> AicrError:
        return AicrError(Code.INVALID_OBJECT, f"GET {self.path}: the API server's list is refused: {why}; "
                         f"no API server answers so (after {self.pages} pages, {self.items} items)")

    def page(self, body: bytes) -> None:
        """A page's body, before it is parsed: its bytes and values, with the list's so far."""
        self.pages += 1
        if self.pages > MAX_LIST_PAGES:
            raise self._refuse(f"it runs to more than {MAX_LIST_PAGES} pages")
        self.bytes += len(body)
        if self.bytes > MAX_LIST_BYTES:
            raise self._refuse(f"its pages hold more than {MAX_LIST_BYTES // (1024 * 1024)} MiB")
        values = bounded_json.values_in(body)
        # Beyond the list's bound, or beyond what `limit` items could hold at the largest share of it:
        # a page of millions of empty objects is refused before one is built.
        if self.values + values > MAX_LIST_VALUES:
            raise self._refuse(f"its pages hold more than {MAX_LIST_VALUES:,} JSON values")
        self.values += values

    def items_of_page(self, count: int) -> None:
        if count > self.limit:
            raise self._refuse(f"a page holds {count} items, more than the {self.limit} asked for")
        self.items += count
        if self.items > MAX_LIST_ITEMS:
            raise self._refuse(f"it holds more than {MAX_LIST_ITEMS:,} items")

    def next_token(self, token: str) -> None:
        if token in self.tokens:
            raise self._refuse("a continue token came back a second time (the list would never end)")
        self.tokens.add(token)
