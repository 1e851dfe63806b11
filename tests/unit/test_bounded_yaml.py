"""The one bounded YAML loader (aicr_core/session/bounded_yaml.py) and the short quoting of values in messages
(aicr_core.errors.shown): the pure logic; tests/cli/test_bounded_inputs.py runs them through kubectl aicr."""
from __future__ import annotations

import time

import pytest
import yaml
from testfixtures import ShouldRaise, compare

from aicr_core.errors import shown, shown_argument
from aicr_core.session import bounded_yaml
from aicr_core.session.bounded_yaml import Refused


def levels(count: int, width: int = 9) -> str:
    """`count` levels of `width` aliases each: width**count leaves once expanded."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, count)]
    return "\n".join(lines) + "\n"


def test_an_anchor_bomb_is_refused_without_being_expanded() -> None:
    started = time.perf_counter()
    with pytest.raises(Refused, match=r"^aliases expand too far: more than [0-9,]+ nodes from a document of "
                                      r"[0-9,]+ \(document contains excessive aliasing\)$"):
        bounded_yaml.load(levels(9))  # 387 million leaves
    assert time.perf_counter() - started < 0.5


def test_a_merge_key_bomb_is_refused_before_pyyaml_copies_the_merged_pairs() -> None:
    text = "a0: &a0 {k0: 1}\n" + "".join(f"a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}], k{i}: 1}}\n"
                                         for i in range(1, 40))
    with pytest.raises(Refused, match="^aliases expand too far"):
        bounded_yaml.load(text)


def test_what_people_write_with_anchors_loads() -> None:
    contexts = "".join(f"- name: c{i}\n  context: *shared\n" for i in range(500))
    doc = bounded_yaml.load("shared: &shared {cluster: a, user: u}\ncontexts:\n" + contexts)
    compare(doc["contexts"][499], expected={"name": "c499", "context": {"cluster": "a", "user": "u"}})
    compare(len(bounded_yaml.load(levels(3))["l2"]), expected=9)  # 729 leaves from 30 nodes: within


def test_the_share_of_aliases_follows_go_yaml() -> None:
    """Up to 400,000 decoded nodes 99% may come from aliases (each alias itself counts as one written node)."""
    base = "base: &b [" + ", ".join(["x"] * 199) + "]\n"  # 200 nodes

    def copies(count: int) -> str:
        return base + "copies: [" + ", ".join(["*b"] * count) + "]\n"

    compare(len(bounded_yaml.load(copies(150))["copies"]), expected=150)  # 30,000 through aliases: 98.7%
    with pytest.raises(Refused):
        bounded_yaml.load(copies(250))  # 50,000 through aliases from 455 written: 99.1%


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with ShouldRaise(Refused("an anchor's value contains an alias of itself")):
        bounded_yaml.load("a: &a [1, *a]\n")


@pytest.mark.parametrize("text", ["a: " + "[" * 150 + "]" * 150, "a: " + "[" * 5000 + "]" * 5000,
                                  "a: &deep " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 60 + "*deep" + "]" * 60])
def test_nesting_beyond_100_levels_is_refused(text: str) -> None:
    """Written, beyond libyaml's own 1,000, or reached through an alias."""
    with ShouldRaise(Refused("nested too deeply (more than 100 levels)")):
        bounded_yaml.load(text)


def test_unique_keys_refuse_a_key_given_twice_but_let_a_merged_key_be_overridden() -> None:
    compare(bounded_yaml.load("a: &x {p: 1, q: 2}\nb: {<<: *x, p: 3}\n", unique_keys=True),
            expected={"a": {"p": 1, "q": 2}, "b": {"p": 3, "q": 2}})
    with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key 'a'"):
        bounded_yaml.load("a: 1\na: 2\n", unique_keys=True)
    compare(bounded_yaml.load("a: 1\na: 2\n"), expected={"a": 2})  # YAML's own rule otherwise


@pytest.mark.parametrize(("text", "problem"), [
    ("a: !!timestamp foo\n", "a value does not match its tag (!!timestamp, say)"),
    ("a: !!int x\n", "invalid literal for int() with base 10: 'x'"),
    ("? {a: 1}\n: y\n", "found unhashable key"),
    ("a: " + "1" * 5000 + "\n", "Exceeds the limit (4300 digits) for integer string conversion: value has 5000 "
                                "digits; use sys.set_int_max_str_digits() to increase the limit"),
])
def test_a_value_its_tag_cannot_build_is_a_yaml_error(text: str, problem: str) -> None:
    with pytest.raises(yaml.constructor.ConstructorError) as raised:
        bounded_yaml.load(text)
    compare(raised.value.problem, expected=problem)


def test_documents_of_a_stream() -> None:
    compare(bounded_yaml.load_all("a: 1\n---\n---\nb: [x]\n"), expected=[{"a": 1}, None, {"b": ["x"]}])
    with pytest.raises(yaml.YAMLError, match="expected a single document"):
        bounded_yaml.load("a: 1\n---\nb: 2\n")


def test_shown_quotes_a_short_escaped_prefix_with_bounded_work() -> None:
    compare(shown("x" * 10_000), expected="'" + "x" * 60 + "'...")
    compare(shown("\x1b[31mred"), expected="'\\x1b[31mred'")
    compare(shown(10 ** 5000), expected="<a number of about 5000 digits>")
    compare(shown({"a": [1, 2, 3, 4, 5, 6], "b": {"c": {"d": {"e": 1}}}}),
            expected="{'a': [1, 2, 3, 4, ...], 'b': {'c': {'d': {...}}}}")
    shared: list[object] = ["lol"] * 9
    for _ in range(9):  # what an anchor bomb builds: shared lists, 387 million leaves walked
        shared = [shared] * 9
    started = time.perf_counter()
    assert len(shown(shared)) < 80
    assert time.perf_counter() - started < 0.1


def test_shown_argument_keeps_a_short_printable_argument_as_it_is() -> None:
    compare([shown_argument("gpu-*"), shown_argument("a\nb"), shown_argument("y" * 300)],
            expected=["gpu-*", "'a\\nb'", "'" + "y" * 200 + "'..."])
