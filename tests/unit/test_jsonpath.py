"""The public face of `aicr_core.framework.jsonpath`: parse once, execute per document, errors as JsonPathError.

What kubectl prints for each template is the differential test's business (test_jsonpath_differential.py);
here: the API a renderer builds on, and the choices where this module knowingly differs from client-go.
"""
from __future__ import annotations

import pytest

from aicr_core.framework import jsonpath
from aicr_core.framework.jsonpath import NO_VALUE, JsonPathError

ROLLOUTS = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {"metadata": {"name": "r1", "labels": {"b": "2", "a": "1"}}, "status": {"phase": "Ready", "restarts": 2}},
        {"metadata": {"name": "r2"}, "status": {"phase": "Pending", "restarts": 0}},
    ],
}


def test_parse_then_execute_on_many_documents() -> None:
    template = jsonpath.parse('{range .items[*]}{.metadata.name}={.status.phase}{"\\n"}{end}')
    assert template.execute(ROLLOUTS) == "r1=Ready\nr2=Pending\n"
    # client-go's JSONPath cannot run a range twice ("not in range, nothing to end"); a Template can
    assert template.execute(ROLLOUTS) == "r1=Ready\nr2=Pending\n"
    assert template.execute({"items": []}) == ""
    assert template.source.startswith("{range")


@pytest.mark.parametrize(("template", "message"), [
    ("{.a", "unclosed action"),
    ("{.a[0}", "unterminated array"),
    ("{.a,.b}", "unrecognized character in action: U+002C ','"),
    ("{....a}", "invalid multiple recursive descent"),
    ('{"\\q"}', 'unquote string "\\q" error invalid syntax'),
    ("{.a[x]}", "invalid array index x"),
    ("{.a[?(@.b==1)}", "unclosed array expect ]"),
])
def test_a_bad_template_fails_at_parse_with_client_gos_message(template: str, message: str) -> None:
    with pytest.raises(JsonPathError) as caught:
        jsonpath.parse(template)
    assert caught.value.message == message == str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_missing_keys_print_nothing_unless_they_are_not_allowed() -> None:
    template = jsonpath.parse("[{.metadata.namespace}]")
    assert template.execute(ROLLOUTS["items"][0]) == "[]"
    assert template.execute(ROLLOUTS["items"][0], allow_missing=True) == "[]"
    with pytest.raises(JsonPathError, match="^namespace is not found$"):
        template.execute(ROLLOUTS["items"][0], allow_missing=False)


def test_evaluation_errors_are_json_path_errors() -> None:
    with pytest.raises(JsonPathError, match="array index out of bounds: index 5, length 2"):
        jsonpath.parse("{.items[5]}").execute(ROLLOUTS)
    with pytest.raises(JsonPathError, match="incompatible types for comparison"):
        jsonpath.parse("{.items[?(@.status.restarts>1.5)]}").execute(ROLLOUTS)
    with pytest.raises(JsonPathError, match="unrecognized identifier nmae"):
        jsonpath.parse("{nmae}").execute(ROLLOUTS)


def test_kubectls_printing_rules() -> None:
    doc = {"m": {"z": "<&>", "a": [1, 2.5, None, True]}, "f": 1e6, "b": False, "n": None, "big": 2**64}
    assert jsonpath.parse("{.m}").execute(doc) == '{"a":[1,2.5,null,true],"z":"\\u003c\\u0026\\u003e"}'
    assert jsonpath.parse("{.m.a[*]}").execute(doc) == "1 2.5 null true"
    assert jsonpath.parse("{.f} {.b} {.n}").execute(doc) == "1e+06 false null"
    assert jsonpath.parse("{.big}").execute(doc) == "1.8446744073709552e+19"  # beyond int64: a float64
    assert jsonpath.parse("{.m.*}").execute(doc) == '[1,2.5,null,true] <&>'  # map values in sorted key order


def test_filters_and_unions() -> None:
    names = jsonpath.parse("{.items[?(@.status.restarts>0)].metadata.name}")
    assert names.execute(ROLLOUTS) == "r1"
    assert jsonpath.parse("{.items[?(@.metadata.labels)].metadata.name}").execute(ROLLOUTS) == "r1"
    assert jsonpath.parse("{.items[*]['metadata.name','status.phase']}").execute(ROLLOUTS) == "r1 r2 Ready Pending"


def test_a_literal_byte_that_is_not_utf8_comes_back_surrogate_escaped() -> None:
    text = jsonpath.parse('{"\\xff"}{"\\xc3\\xa9"}').execute({})
    assert text == "\udcffé"
    assert text.encode("utf-8", "surrogateescape") == b"\xff\xc3\xa9"


def test_results_are_the_values_found() -> None:
    found = jsonpath.parse("{.items[*].status.restarts}{range .l[*]}{@}{end}").results({**ROLLOUTS, "l": [None]})
    assert found == [[2, 0], [NO_VALUE]]
    assert repr(NO_VALUE) == "NO_VALUE"


def test_a_custom_columns_cell() -> None:
    assert jsonpath.parse("{.metadata.labels}").column(ROLLOUTS["items"][0]) == "map[a:1 b:2]"
    assert jsonpath.parse("{.metadata.labels}").column(ROLLOUTS["items"][1]) == "<none>"
    assert jsonpath.parse("{.items[*].metadata.name}").column(ROLLOUTS) == "r1,r2"


@pytest.mark.parametrize(("expression", "relaxed"), [
    ("", ""), ("metadata.name", "{.metadata.name}"), (".metadata.name", "{.metadata.name}"),
    ("{metadata.name}", "{.metadata.name}"), ("{.metadata.name}", "{.metadata.name}"),
    ("..name", "{..name}"), ("{.}", "{..}"), ("{.items[*]}", "{.items[*]}"),
])
def test_relaxed_expressions_as_kubectls_custom_columns_and_sort_by(expression: str, relaxed: str) -> None:
    assert jsonpath.relaxed(expression) == relaxed


@pytest.mark.parametrize("expression", ["{foo.bar", "foo.bar}", "{foo.bar}}", "{{foo.bar}", "{}", "a{b}c"])
def test_relaxed_refuses_what_kubectl_refuses(expression: str) -> None:
    with pytest.raises(JsonPathError, match="^unexpected path string, expected a 'name1.name2'"):
        jsonpath.relaxed(expression)


def test_a_long_template_and_a_deep_document() -> None:
    long = "".join("{.a}" for _ in range(5000))
    assert jsonpath.parse(long).execute({"a": 1}) == "1" * 5000
    deep: dict[str, object] = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]  # type: ignore[assignment]
    with pytest.raises(JsonPathError, match="nested too deeply"):
        jsonpath.parse("{..}").execute(deep)
    with pytest.raises(JsonPathError, match="nested too deeply"):
        jsonpath.parse("{@}").execute(deep)
