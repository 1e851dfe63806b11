"""Output options in-process: colour marks, --no-headers, custom columns, jsonpath, selectors, --sort-by,
the rows of a stream, and the collection watch's re-list after 410 (a fake cluster)."""
from __future__ import annotations

import argparse
import io
import itertools
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.errors import AicrError, UsageError
from aicr_core.framework import output_options as output
from aicr_core.framework.app import AicrApp
from aicr_core.framework.common_flags import FlagParser, add_common_flags
from aicr_core.framework.output_options import OutputOptions, finish, paint, strip_marks, use_color
from aicr_core.framework.result import Result, Rows, Stream
from aicr_core.framework.sort_by import natural_less, parse_sort_by, quantity, sort_items
from aicr_core.framework.text_layout import listing, table
from aicr_core.session import kube
from aicr_core.session.label_selector import SelectorError, valid_selector
from aicr_core.session.watch import follow_collection
from aicr_renderers.custom_columns import CustomColumnsFileRenderer, CustomColumnsRenderer
from aicr_renderers.json import JsonRenderer
from aicr_renderers.templates import JsonPathRenderer
from aicr_renderers.text import TextRenderer

SGR = re.compile("\x1b\\[[0-9;]*m")


def rendered(renderer: Any, result: Result, **options: Any) -> str:
    out = io.StringIO()
    with output.rendering(OutputOptions(**options)):
        renderer.render(result, out)
    return out.getvalue()


# -- colour ---------------------------------------------------------------------------------------------

def test_colour_is_added_after_escaping_and_never_changes_the_text() -> None:
    text = f"phase {paint('AwaitingApproval', 'waiting')} msg \x1b[2Jevil {paint('bad' + chr(0x1b), 'bad')}"
    plain, coloured = finish(text, color=False), finish(text, color=True)
    compare(plain, expected="phase AwaitingApproval msg \\x1b[2Jevil bad\\x1b")
    compare(coloured, expected="phase \x1b[33mAwaitingApproval\x1b[0m msg \\x1b[2Jevil \x1b[31mbad\\x1b\x1b[0m")
    compare(SGR.sub("", coloured), expected=plain)


def test_a_forged_mark_is_escaped_not_obeyed() -> None:
    forged = "\x0enot-a-role\x1fx\x0f"
    compare(finish(forged, color=True), expected="\\x0enot-a-role\\x1fx\\x0f")
    with pytest.raises(ValueError):
        paint("x", "pink")
    compare(paint("", "bad"), expected="")


def test_marks_do_not_count_in_column_widths() -> None:
    rows = [[paint("AwaitingApproval", "waiting"), "x"], ["Ended", "y"]]
    compare([strip_marks(line) for line in table(["PHASE", "N"], rows, indent="")],
            expected=["PHASE             N", "AwaitingApproval  x", "Ended             y"])


@pytest.mark.parametrize(("choice", "terminal", "env", "expected"), [
    ("auto", True, {}, True), ("auto", False, {}, False), ("auto", True, {"NO_COLOR": "1"}, False),
    ("auto", True, {"NO_COLOR": ""}, True), ("always", False, {"NO_COLOR": "1"}, True),
    ("never", True, {}, False)])
def test_use_color(choice: str, terminal: bool, env: dict[str, str], expected: bool) -> None:
    compare(use_color(choice, terminal, env), expected=expected)


def test_listing_leaves_out_the_header_with_no_headers() -> None:
    compare(listing(["A", "B"], [["xx", "y"]]), expected=["A   B", "xx  y"])
    with output.rendering(OutputOptions(no_headers=True)):
        compare(listing(["A", "B"], [["xx", "y"]]), expected=["xx  y"])


# -- flags ----------------------------------------------------------------------------------------------

def parse(*words: str) -> argparse.Namespace:
    parser = FlagParser(prog="t")
    parser.add_argument("name", nargs="?")
    add_common_flags(parser)
    return parser.parse_args(list(words))


def test_boolean_flags_as_pflag_reads_them() -> None:
    args = parse("--no-headers", "r1", "--allow-missing-template-keys=false")
    compare((args.no_headers, args.allow_missing_template_keys, args.name), expected=(True, False, "r1"))
    args = parse("--allow-missing-template-keys", "r2")  # the next word is never a boolean's value
    compare((args.allow_missing_template_keys, args.name, args.color), expected=(True, "r2", "auto"))
    with pytest.raises(UsageError):
        parse("--no-headers=maybe")
    with pytest.raises(UsageError):
        parse("--color=sometimes")


# -- jsonpath and custom columns ---------------------------------------------------------------------------

LIST = Result("RolloutList", {"items": [
    {"name": "r-1", "phase": "AwaitingApproval", "assessment": {"verdict": None}, "tags": ["a", "b"]},
    {"name": "r-22", "phase": "Ended\x1b[2J", "assessment": {"verdict": "safe"}, "tags": []}]})


def configured(renderer: Any, name: str, argument: str | None) -> Any:
    renderer.configure(name, argument)
    return renderer


def test_jsonpath_prints_the_json_document_without_a_newline_and_escaped() -> None:
    renderer = configured(JsonPathRenderer(), "jsonpath", "{.kind}:{range .items[*]}{.name}={.phase};{end}")
    compare(rendered(renderer, LIST), expected="RolloutList:r-1=AwaitingApproval;r-22=Ended\\x1b[2J;")
    missing = configured(JsonPathRenderer(), "jsonpath", "{.nope}")
    compare(rendered(missing, LIST), expected="")
    with pytest.raises(UsageError, match="error executing jsonpath {.nope}: nope is not found"):
        rendered(missing, LIST, allow_missing_template_keys=False)


@pytest.mark.parametrize(("argument", "message"), [
    (None, 'output format "jsonpath" needs an argument: -o jsonpath=TEMPLATE'),
    ("", "template format specified but no template given"),
    ("{.a", "error parsing jsonpath {.a: unclosed action"),
    ("{.a[?(@.b=='x')}", "error parsing jsonpath {.a[?(@.b=='x')}: ")])
def test_a_template_that_does_not_parse(argument: str | None, message: str) -> None:
    with pytest.raises(UsageError) as raised:
        JsonPathRenderer().configure("jsonpath", argument)
    assert raised.value.message.startswith(message), raised.value.message


def test_custom_columns_as_kubectl_lays_them_out() -> None:
    renderer = configured(CustomColumnsRenderer(), "custom-columns",
                          "NAME:.name,P:phase,VERDICT:{.assessment.verdict},TAGS:.tags[*],NONE:.x")
    compare(rendered(renderer, LIST).splitlines(), expected=[
        "NAME   P                  VERDICT   TAGS     NONE",
        "r-1    AwaitingApproval   <nil>     a,b      <none>",
        "r-22   Ended\\x1b[2J       safe      <none>   <none>"])
    compare(rendered(renderer, LIST, no_headers=True).splitlines()[0].split(), expected=[
        "r-1", "AwaitingApproval", "<nil>", "a,b", "<none>"])
    one = configured(CustomColumnsRenderer(), "custom-columns", "KIND:kind")
    compare(rendered(one, Result("Version", {"client": {}})), expected="KIND\nVersion\n")


def test_custom_columns_remember_widths_across_a_stream() -> None:
    renderer = configured(CustomColumnsRenderer(), "custom-columns", "NAME:.name,P:.phase")
    rendered(renderer, Result("RolloutList", {"items": [{"name": "a-long-name", "phase": "x"}]}))
    compare(rendered(renderer, Result("RolloutList", {"items": [{"name": "b", "phase": "y"}]}), no_headers=True),
            expected="b             y\n")


@pytest.mark.parametrize(("spec", "message"), [
    ("", "custom-columns format specified but no custom columns given"),
    ("NAME", "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"),
    ("A:.a,B", "unexpected custom-columns spec: B, expected <header>:<json-path-expr>"),
    ("A:{.a", "custom-columns: unexpected path string, expected a 'name1.name2' or '.name1.name2' or "
              "'{name1.name2}' or '{.name1.name2}'")])
def test_bad_custom_columns(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as raised:
        CustomColumnsRenderer().configure("custom-columns", spec)
    compare(raised.value.message, expected=message)


def test_custom_columns_file(tmp_path: Path) -> None:
    spec = tmp_path / "columns"
    spec.write_text("NAME   PHASE\n.name\t{.phase}\n", encoding="utf-8")
    renderer = configured(CustomColumnsFileRenderer(), "custom-columns-file", str(spec))
    compare(rendered(renderer, LIST).splitlines()[:2], expected=["NAME   PHASE", "r-1    AwaitingApproval"])
    for text, message in (("", "invalid template, missing header line."), ("A B\n", "invalid template, missing spec"),
                          ("A B\n.a\n", "number of headers (2) and field specifications (1) don't match")):
        spec.write_text(text, encoding="utf-8")
        with pytest.raises(UsageError, match=re.escape(message)):
            CustomColumnsFileRenderer().configure("custom-columns-file", str(spec))
    with pytest.raises(UsageError, match="error reading custom-columns-file .*: No such file or directory"):
        CustomColumnsFileRenderer().configure("custom-columns-file", str(tmp_path / "none"))


# -- selectors and sorting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "a", "!a", "a=b", "a==b", "a!=b", "a=", "a in (x,y)", "a notin (x)",
                                  "a>1", "a<-2", "x.io/a-b_c=V.1", "a=b,c!=d,!e", " a = b , c "])
def test_valid_selectors(text: str) -> None:
    compare(valid_selector(text), expected=text)


@pytest.mark.parametrize("text", ["a b", "a=b=c", "a in ()", "a in (b", "!a=b", "a,", "=b", "x@y=1", "a=-b",
                                  "A/b=c", "a>b", "a in b", "," + "a", "k" * 64, "a=" + "v" * 64])
def test_invalid_selectors(text: str) -> None:
    with pytest.raises(SelectorError):
        valid_selector(text)


def test_sort_by_as_kubectl_sorts() -> None:
    items = [{"n": "b10"}, {"n": "b2"}, {}, {"n": None}, {"n": "a"}]
    compare(sort_items(items, parse_sort_by(".n")), expected=[{}, {"n": None}, {"n": "a"}, {"n": "b2"}, {"n": "b10"}])
    compare(sort_items([{"q": "2"}, {"q": "500m"}, {"q": "1Ki"}], parse_sort_by("q")),
            expected=[{"q": "500m"}, {"q": "2"}, {"q": "1Ki"}])
    compare(sort_items([{"n": 3}, {"n": 1}, {"n": 2}], parse_sort_by("{.n}")), expected=[{"n": 1}, {"n": 2}, {"n": 3}])
    tie = [{"n": 1, "i": 0}, {"n": 0}, {"n": 1, "i": 1}]
    compare([x.get("i") for x in sort_items(tie, parse_sort_by(".n"))], expected=[None, 0, 1])  # stable
    for bad in ([{"n": 1}, {"n": 1.5}], [{"n": True}, {"n": False}], [{"n": {}}, {"n": {}}], [{"n": "a"}, {"n": 1}]):
        with pytest.raises(UsageError, match="unsortable"):
            sort_items(bad, parse_sort_by(".n"))
    with pytest.raises(UsageError, match="couldn't find any field with path '{.x}'"):
        sort_items([{"n": 1}], parse_sort_by(".x"))
    compare(sort_items([], parse_sort_by(".x")), expected=[])


def test_natural_order_and_quantities() -> None:
    assert natural_less("rollout-2", "rollout-10") and not natural_less("rollout-10", "rollout-2")
    assert natural_less("a", "ab") and natural_less("a01", "a001") and not natural_less("b", "a")
    compare([quantity(q) for q in ("1", "1.5", "500m", "2Ki", "1e3", "2026-11-30T02:00:00Z", "abc", "")],
            expected=[1, quantity("1.5"), quantity("0.5"), 2048, 1000, None, None, None])


# -- streams of rows ---------------------------------------------------------------------------------------

ROW = {"name": "r-1", "created": None, "phase": "AwaitingApproval", "outcome": None,
       "approval": {"required": True}, "deadline": None, "waitingOn": None, "waitingForPerson": True,
       "assessment": {"status": "none"}, "transition": {}, "steps": 1}


def stream_output(renderer: Any, **options: Any) -> str:
    out = io.StringIO()
    app = AicrApp(stdout=out, stderr=io.StringIO())
    stream = Stream([Result("RolloutList", {"items": [ROW, {**ROW, "name": "r-2"}]}, names=("x/r-1", "x/r-2")),
                     Result("RolloutList", {"items": [{**ROW, "phase": "Progressing"}]}, names=("x/r-1",))],
                    rows=Rows("items", "RolloutListItem"))
    with output.rendering(OutputOptions(**options)):
        app.render_stream(stream, renderer, "r")
    return out.getvalue()


def test_a_table_renderer_prints_the_header_once_and_appends_rows() -> None:
    lines = stream_output(TextRenderer()).splitlines()
    compare([line.split()[:2] for line in lines], expected=[
        ["NAME", "PHASE"], ["r-1", "AwaitingApproval"], ["r-2", "AwaitingApproval"], ["r-1", "Progressing"]])
    compare(len(stream_output(TextRenderer(), no_headers=True).splitlines()), expected=3)


def test_a_document_renderer_prints_one_document_per_row() -> None:
    import json

    text = stream_output(JsonRenderer())
    decoder, docs, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        doc, at = decoder.raw_decode(text, at + (len(text[at:]) - len(text[at:].lstrip())))
        docs.append(doc)
    compare([(d["kind"], d["name"], d["phase"]) for d in docs], expected=[
        ("RolloutListItem", "r-1", "AwaitingApproval"), ("RolloutListItem", "r-2", "AwaitingApproval"),
        ("RolloutListItem", "r-1", "Progressing")])


# -- the collection watch ------------------------------------------------------------------------------------

def obj(name: str, version: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}}


class FakeCluster:
    """Lists and watches from scripts; the second watch is refused with 410 after one event."""

    class deadline:  # noqa: N801 - the attribute the follower reads
        @staticmethod
        def remaining() -> float:
            return math.inf

    def __init__(self) -> None:
        self.lists = [([obj("a", "1"), obj("b", "2")], "10"), ([obj("a", "11"), obj("c", "12")], "13")]
        self.watches: list[list[dict[str, Any] | Exception]] = [
            [{"type": "BOOKMARK", "object": obj("", "10")}, {"type": "MODIFIED", "object": obj("a", "11")},
             kube.Gone("too old")],
            [{"type": "ADDED", "object": obj("d", "14")}]]
        self.requests: list[tuple[str, dict[str, str]]] = []

    def list(self, path: str, params: dict[str, str] | None = None,
             limit: int | None = None) -> tuple[list[dict[str, Any]], str]:
        self.requests.append(("LIST", dict(params or {})))
        return self.lists.pop(0)

    def watch(self, path: str, params: dict[str, str] | None = None) -> Iterator[dict[str, Any]]:
        self.requests.append(("WATCH", dict(params or {})))
        for event in self.watches.pop(0):
            if isinstance(event, Exception):
                raise event
            yield event


def test_the_collection_watch_relists_after_gone_and_yields_what_changed() -> None:
    cluster = FakeCluster()
    batches = list(itertools.islice(follow_collection(cluster, "/rollouts", {"labelSelector": "x=y"}), 4))  # type: ignore[arg-type]
    compare([[(c.kind, c.object["metadata"]["name"]) for c in batch] for batch in batches], expected=[
        [("LISTED", "a"), ("LISTED", "b")], [("MODIFIED", "a")], [("ADDED", "c"), ("DELETED", "b")], [("ADDED", "d")]])
    compare([(kind, params.get("labelSelector"), params.get("resourceVersion")) for kind, params in cluster.requests],
            expected=[("LIST", "x=y", None), ("WATCH", "x=y", "10"), ("LIST", "x=y", None), ("WATCH", "x=y", "13")])


def test_a_renderer_that_takes_no_argument_refuses_one() -> None:
    with pytest.raises(UsageError, match='output format "json" takes no argument'):
        JsonRenderer().configure("json", "x")
    with pytest.raises(AicrError):
        AicrApp(stdout=io.StringIO(), stderr=io.StringIO()).load_renderer("text=x")


def test_list_watch_shows_a_rollout_leaving_then_no_more_of_it() -> None:
    from aicr_commands.list import watch_rows
    from aicr_core.domain.assessments import Assessments
    from aicr_core.session.watch import Change

    from support.samples import rollout

    def named(name: str, version: str, **status: str) -> dict[str, Any]:
        doc = rollout(status=status) if status else rollout()
        doc["metadata"] = {**doc["metadata"], "name": name, "resourceVersion": version}
        return doc

    args = argparse.Namespace(all=False, pending=False, phase=[], sort_by=None)
    batches = [[Change("LISTED", named("r-1", "1"))],
               [Change("MODIFIED", named("r-1", "2", phase="Ended", outcome="Failed"))],  # leaves: shown
               [Change("MODIFIED", named("r-1", "3", phase="Ended", outcome="Failed"))],  # gone: not shown
               [Change("ADDED", named("r-2", "4", phase="Ended", outcome="Succeeded"))],  # never shown
               [Change("ADDED", {**named("bad", "5"), "spec": {**rollout()["spec"], "deadline": "nope"}})],  # warned
               [Change("ADDED", named("r-3", "5"))]]
    shown = list(watch_rows(iter(batches), args, Assessments({}, "aicr-system"), None))
    compare([[(i["name"], i["phase"]) for i in r.data["items"]] if isinstance(r, Result) else r.message[:22]
             for r in shown], expected=[[("r-1", "AwaitingApproval")], [("r-1", "Ended")], "warning: not listed: r",
                                        [("r-3", "AwaitingApproval")]])


def test_the_plugins_table_has_no_header_with_no_headers() -> None:
    from aicr_renderers.layouts import plugin_list

    data = {"plugins": [{"group": "aicr.renderers", "name": "json", "distribution": "kubectl-aicr", "version": "1",
                         "active": None, "mode": None, "status": "ok"}], "policyFile": {"source": "s"}}
    compare(plugin_list(data)[0].split()[:2], expected=["GROUP", "NAME"])
    with output.rendering(OutputOptions(no_headers=True)):
        compare(plugin_list(data)[0].split()[:2], expected=["aicr.renderers", "json"])
