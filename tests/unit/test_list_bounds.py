"""The bounds of a list read page by page, and the count of a page's values before it is parsed."""
from __future__ import annotations

import pytest
from testfixtures import compare

from aicr_core.errors import AicrError, Code
from aicr_core.session import bounded_json, list_bounds


@pytest.mark.parametrize(("text", "values"), [
    (b"{}", 2),
    (b'{"items":[{},{},{}]}', 8),
    (b'{"a":"x,y,[{\\"", "b":[1,2]}', 5),  # commas, brackets and an escaped quote inside a string do not count
    (b'["a\\\\",1]', 3),
    (b"[" + b"{}," * 999 + b"{}]", 2001),
])
def test_values_are_counted_outside_strings(text: bytes, values: int) -> None:
    compare(bounded_json.values_in(text), expected=values)


def refused(call: object, *args: object) -> str:
    with pytest.raises(AicrError) as caught:
        call(*args)  # type: ignore[operator]
    compare(caught.value.code, expected=Code.INVALID_OBJECT)
    return caught.value.message


def test_a_page_beyond_the_limit_a_token_again_and_the_lists_bounds_are_refused() -> None:
    bounds = list_bounds.ListBounds("/p", 500)
    bounds.page(b'{"items":[]}')
    bounds.items_of_page(500)
    bounds.next_token("a")
    assert "a page holds 501 items, more than the 500 asked for" in refused(bounds.items_of_page, 501)
    assert "a continue token came back a second time" in refused(bounds.next_token, "a")
    pages = list_bounds.ListBounds("/p", 500)
    for _ in range(list_bounds.MAX_LIST_PAGES):
        pages.page(b"{}")
    assert f"more than {list_bounds.MAX_LIST_PAGES} pages" in refused(pages.page, b"{}")
    many = b"[" + b"0," * list_bounds.MAX_LIST_VALUES + b"0]"
    assert "more than 2,000,000 JSON values" in refused(list_bounds.ListBounds("/p", 500).page, many)
    items = list_bounds.ListBounds("/p", 500)
    for _ in range(list_bounds.MAX_LIST_ITEMS // 500):
        items.items_of_page(500)
    assert "more than 50,000 items" in refused(items.items_of_page, 1)
