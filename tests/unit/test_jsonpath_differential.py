"""`aicr_core.framework.jsonpath` against client-go's own engine, template by template.

tools/jsonpath_ref is a small Go program on `k8s.io/client-go/util/jsonpath` (v0.37.2, kubectl 1.37's):
it runs each case as kubectl's JSONPath printer does (the document decoded as `kubectl get` decodes an
object, integers int64, other numbers float64) and answers with the exact bytes printed, or the error.
It is built with the local Go toolchain into ~/.cache/aicr-jsonpath-ref/ (the modules come through the
Go module proxy the first time). Without Go the test skips, saying so; under CI=true it fails instead.

Go walks a map in random order for `*` and `..`, and this module in sorted key order, so the program
runs such a case many times and reports every outcome; ours must be one of them (the documents keep
their maps small and sorted, so that Go's iteration reaches the sorted order often).
"""
from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aicr_core.framework import jsonpath

REF_SOURCE = Path(__file__).resolve().parents[2] / "tools" / "jsonpath_ref"

# ---- documents -------------------------------------------------------------------------------------------

PODS: dict[str, Any] = {
    "apiVersion": "v1",
    "items": [
        {"metadata": {"labels": {"app": "web", "tier": "front"}, "name": "web-1"},
         "spec": {"containers": [{"image": "nginx:1.25", "name": "nginx"}, {"image": "envoy", "name": "sidecar"}],
                  "replicas": 3},
         "status": {"conditions": [{"status": "True", "type": "Ready"}, {"status": "False", "type": "Synced"}],
                    "cpu": 0.25, "phase": "Running", "ready": True, "restarts": 0}},
        {"metadata": {"name": "web-2"},
         "spec": {"containers": [{"image": "nginx:1.25", "name": "nginx"}], "replicas": 12},
         "status": {"cpu": 1.5, "phase": "Pending", "ready": False, "restarts": 12}},
        {"metadata": {"labels": {"app": "db"}, "name": "datenbank-ü"},
         "spec": {"containers": [], "replicas": None},
         "status": {"conditions": [], "phase": None, "restarts": 3}},
    ],
    "kind": "List",
}

STRINGS: dict[str, Any] = {
    "ctl": "tab\there\nnew\rline\x01\x7f\b\f",
    "e": "",
    "html": '<a href="x">&</a>',
    "s": "text",
    "seps": "a\u2028b\u2029c",
    "strs": ["b", "a", "c", "ä"],
    "u": "héllo ✓ 日本",
    "名前": "value",
}

NUMBERS: dict[str, Any] = {
    "f": 3.14, "fe": 1e21, "fi": 2.0, "fm": 1234567.0, "fs": 1e-7,
    "i": 42, "ints": [1, 2, 3, 4, 5], "neg": -7,
}

MORE_NUMBERS: dict[str, Any] = {
    "big": 9007199254740993, "floats": [0.1, 1e-6, 1e-5, 123456.0, 1e20, -0.0, 5e-324, 1.7976931348623157e308],
    "huge": 12345678901234567890, "i64": [9223372036854775807, -9223372036854775808], "zero": 0,
}

MISC: dict[str, Any] = {
    "l": [], "m": {}, "mixed": [1, "a", None, True, 2.5, {"k": "v"}, [1]],
    "n": None, "nested": {"a": {"b": {"c": "deep"}}, "x": [{"y": 1}, {"y": 2}, {"z": 3}]},
    "t": True, "fa": False,
}

TOP_LIST: list[Any] = [1, "two", {"three": 3}, [4], None]

DOCS: dict[str, Any] = {"pods": PODS, "strings": STRINGS, "numbers": NUMBERS, "more": MORE_NUMBERS,
                        "misc": MISC, "list": TOP_LIST, "null": None}

# ---- templates -------------------------------------------------------------------------------------------

TEMPLATES = [
    # fields, maps, text around actions
    "", "plain text", "{.s}", "{.i}", "{.f}", "{.t}", "{.n}", "{.l}", "{.m}", "{}", "{ }", "{@}", "{$}",
    "{ .s }", "{.nested.a.b.c}", "{.nested}", "{.missing}", "{.missing.deeper}", "{.n.x}", "{.s.x}",
    "{.l.x}", "{['s']}", "{['nested']['a']}", "{.nested['a'].b}", "{['nested.a']}", "{['a b']}", "{['']}",
    "a{.s}b{.i}c", "{.s}}", "}{.s}", "{.s}{.i}{.f}", "{.}", "{.nested.}", "{.nested..c}", "{.s .i}",
    "{.apiVersion}/{.kind}", "{.items}", "{.items[0].metadata}", "{.名前}", "{['名前']}", "{.u}", "{.html}",
    "{.ctl}", "{.seps}", "{.e}", "{.strs}", "{.ints}", "{.floats}", "{.floats[*]}", "{.big} {.huge} {.zero}",
    "{.i64}", "{.i64[*]}", "{.fe} {.fs} {.fm} {.fi}", "{.mixed}", "{.mixed[*]}", "text ✓ {.s} ✓",
    r"{.nested\.a}", r"{.a\.b}", "{.items[*].metadata.labels}",
    # literals
    '{"\\n"}', "{'x'}", '{"a\\tb"}', '{"\\u00e9"}', '{"\\xff"}', '{"\\xc3\\xa9"}', "{'\\''}", "{\"\\'\"}",
    "{'\"'}", '{"\\""}', '{"\\101"}', '{"\\400"}', '{"\\q"}', '{"\\U0001F600"}', '{"\\UFFFFFFFF"}',
    '{"\\ud800"}', '{"abc}', '{"a\\\\"b"}', "{'a''b'}", '{"x" "y"}', '{"<&>"}', "{'✓'}", '{"\\a\\b\\f\\v\\r"}',
    '{"\\x4"}', '{"\\7"}', '{"a\\"}', "{5}", "{-3}", "{+4}", "{1.5}", "{.5}", "{1.}", "{1.2.3}", "{-}", "{+}",
    "{0001}", "{99999999999999999999}", "{1000000.0}", "{0.00001}", "{true}", "{false}", "{truex}", "{foo}",
    "{range}", "{end}", "{٣}", "{é}", "{_x}", "{5.s}", "{'a'.s}", "{true false}", "{1 2}",
    # arrays and slices
    "{.ints[0]}", "{.ints[-1]}", "{.ints[1:3]}", "{.ints[:2]}", "{.ints[2:]}", "{.ints[::2]}",
    "{.ints[1:4:2]}", "{.ints[*]}", "{.ints[]}", "{.ints[5]}", "{.ints[-6]}", "{.ints[-5]}", "{.ints[0:0]}",
    "{.ints[3:1]}", "{.ints[0:10]}", "{.ints[0:-1]}", "{.ints[-2:]}", "{.ints[::0]}", "{.ints[::-1]}",
    "{.ints[a]}", "{.ints[1:2:3:4]}", "{.ints[-]}", "{.ints[:-]}", "{.ints[0,2]}", "{.ints[0, 2]}",
    "{.ints[0,-1]}", "{.ints[0,5]}", "{.ints[0,]}", "{.ints[,]}", "{.ints[1:3,0]}", "{.ints[ 1 ]}",
    "{.ints[99999999999999999999]}", "{.ints[9223372036854775807]}", "{.ints[-9223372036854775808]}",
    "{.strs[*]}", "{.strs[-1]}", "{.s[0]}", "{.m[0]}", "{.n[0]}", "{.missing[0]}", "{[0]}", "{[-1]}",
    "{[*]}", "{[1:]}", "{.l[0]}", "{.l[-1]}", "{.l[0:0]}", "{.l[*]}", "{.l[:]}", "{.items[*].metadata.name}",
    "{.items[-1].metadata.name}", "{.items[0:2].status.phase}", "{.items[*]['metadata.name', 'status.phase']}",
    "{.items[*].spec.containers[*].name}", "{.items[*].spec.containers[0].image}", "{['s','i','missing']}",
    "{[0,1]}", "{.items[0].spec.containers[*]['name','image']}", "{.nested.x[*].y}", "{.mixed[5].k}",
    "{.mixed[6][0]}", "{.ints[0].x}", "{.ints[0]['x']}", "{.items[*].status.conditions[*].type}",
    # wildcards and recursive descent
    "{.*}", "{.nested.*}", "{.nested.*.*}", "{.s.*}", "{.u.*}", "{..}", "{..c}", "{..name}", "{...name}",
    "{....name}", "{..*}", "{.items[*]..name}", "{..[0]}", "{.l.*}", "{.m.*}", "{.n.*}", "{..y}",
    "{.nested..y}", "{..metadata.name}", "{..labels.app}", "{.. name}", "{..['name']}", "{@..c}", "{.e.*}",
    "{.items.*}", "{.items[*].*}", "{..three}",
    # filters
    '{.items[?(@.status.phase=="Running")].metadata.name}', "{.items[?(@.status.phase=='Pending')].metadata.name}",
    '{.items[?(@.status.phase!="Running")].metadata.name}', "{.items[?(@.status.restarts>2)].metadata.name}",
    "{.items[?(@.status.restarts<12)].metadata.name}", "{.items[?(@.status.restarts<=12)].metadata.name}",
    "{.items[?(@.status.restarts>=3)].metadata.name}", "{.items[?(@.status.cpu>1)].metadata.name}",
    "{.items[?(@.status.cpu>1.0)].metadata.name}", "{.items[?(@.status.cpu==0.25)].metadata.name}",
    "{.items[?(@.status.ready==true)].metadata.name}", "{.items[?(@.status.ready!=false)].metadata.name}",
    "{.items[?(@.status.ready<true)].metadata.name}", "{.items[?(@.metadata.labels)].metadata.name}",
    "{.items[?(@.metadata.labels.app)].metadata.name}", "{.items[?(@.nope)].metadata.name}",
    "{.items[?(@.status.phase)].metadata.name}", "{.items[?(@.status.restarts=<3)].metadata.name}",
    '{.items[?(@.metadata.name>"db")].metadata.name}', "{.items[?(@.status.restarts==@.spec.replicas)]}",
    '{.items[?(@.metadata.name=="datenbank-ü")].status.restarts}', "{.ints[?(@==2)]}", "{.ints[?(@<3)]}",
    "{.ints[?(@>=4)]}", "{.ints[?(@==2.0)]}", '{.ints[?(@=="2")]}', "{.ints[?(@)]}", "{.ints[?()]}",
    "{.strs[?(@>'a')]}", "{.strs[?(@=='ä')]}", "{.mixed[?(@.k)]}", "{.mixed[?(@==1)]}", "{.mixed[?(@.k=='v')]}",
    "{.s[?(@.x)]}", "{.nested[?(@.x)]}", "{.n[?(@.x)]}", "{.missing[?(@.x)]}", "{.l[?(@.x)]}",
    "{.items[?(@.a)", "{.items[?(@.a)x}", '{.items[?(@.a==")]}', "{.items[?(@.a==y)]}",
    "{.items[?(@.status.phase==y)].metadata.name}", '{.items[?(@.spec.containers[?(@.name=="nginx")])]}',
    "{.items[?(@.spec.containers[5])].metadata.name}", "{.items[?(@.spec.containers[0])].metadata.name}",
    "{.items[?(@.status.phase == 'Running')].metadata.name}", "{.items[?(@.status.restarts>'a')]}",
    "{.nested.x[?(@.y==2)]}", "{.nested.x[?(@.y)].y}", "{.nested.x[?(@.y>1)]}", "{.nested.x[?(@.z)]}",
    "{.items[?(@.status.conditions[?(@.type)])]}", "{.items[?(@.status.phase==@.status.phase)].metadata.name}",
    '{.items[?(@.metadata.labels.app=="web")].spec.containers[*].name}', "{.items[?(@.x=='a)b')]}",
    "{[?(@==1)]}", "{[?(@)]}", "{.items[?(@.status.restarts==0)].metadata.name}", "{.items[?(@..name)]}",
    # ranges
    '{range .items[*]}{.metadata.name}{"\\n"}{end}',
    "{range .items[*]}{.metadata.name}:{range .spec.containers[*]}{.name},{end};{end}",
    "{range .items[*]}{.x}{end}", "{range .l[*]}{@}{end}", "{range .l[*]}{.x}{end}", "{range .mixed[*]}[{@}]{end}",
    "{range .mixed[*]}{[0]}{end}", "{range .mixed[*]}{.k}{end}", "{range .items[*]}{.metadata.name}",
    "{range .ints[*]}{@}{end}{end}", "{range .ints}{@}{end}", "{range @}{.s}{end}", "{range .nested.*}{@}{end}",
    "{range .ints[*]}{range .strs[*]}{@}{end}|{end}", "{range .missing[*]}{.a}{end}", "{range .n}{@}{end}",
    "{range .items[*]}{.metadata.name}{range .status.conditions[*]} {.type}={.status}{end}{'\\n'}{end}",
    "{range .items[*]}{range .status.conditions[*]}{.type}{end}{.metadata.name}{end}",
    "{ range .ints[*] }{ @ }{ end }", "{range .ints[0:2]}<{@}>{end} after", "{range .items[*]}{end}",
    "{range .ints[*]}{@}{range .l[*]}{@}{end}{end}", "{range .ints[*]}{end}{@}", "{range .strs[*]}{@}{end}",
    "{range .ints[?(@>2)]}{@},{end}", "{range .items[*].metadata}{.name} {end}", "{range}{end}",
    "{range .items[*]}{.status.phase}{range .x[*]}{@}{end}{end}", "{range .mixed[*]}{range @}{@}{end}{end}",
    "{range .mixed[*]}{@.k}{end}", "{range .ints[*]}{.}{end}", "{range .ints[*] .x}{@}{end}",
    "{range range .ints[*]}{@}{end}{end}", "{end}{range .ints[*]}{@}{end}", "{.ints[*]}{range .ints[*]}{end}",
    # parse errors
    "{", "{.a", "{.a[", "{.a[0", "{.a\n}", "{.a\r}", "{!}", "{.a,.b}", "{\t.a}", "{.a}{", "{#}", "{.a[0]",
    "{[?(@.a==1)}", "{[?(@.a==1)]", "{'x}", '{"x}', "{....a}", "{.a...b}", "{.a[\n]}", "{.a}\n{.b", "{(}",
    "{.a)}", "{*}", "{.a-b}", "{.a:b}", "{[?(@.a\n)]}", "{=}", "{..}{....}", "{\u00a0}", "{\u200b}",
]

# Paths, selectors and tails combined: each path against each selector, then a field after it.
PATHS = ["", ".items", ".ints", ".strs", ".mixed", ".nested", ".nested.x", ".m", ".l", ".n", ".missing", ".s"]
SELECTORS = ["", "[0]", "[-1]", "[1:3]", "[*]", ".*", "[?(@)]", "..", "['a','y']", "[?(@.y==1)]", "[0][0]"]
TAILS = ["", ".name", ".y", ".metadata.name", "[0]"]


def combined_templates() -> list[tuple[str, list[str]]]:
    """Each combination with the documents it is about: those holding the path's first key, and the top list."""
    out = []
    for path, selector, tail in itertools.product(PATHS, SELECTORS, TAILS):
        key = path.split(".")[1] if path else ""
        homes = [n for n, d in DOCS.items() if isinstance(d, dict) and key in d] if key else list(DOCS)
        out.append(("{" + path + selector + tail + "}", sorted(set(homes or ["misc"]) | {"list"})))
    return out


# Whole templates assembled from fragments by a seeded generator: ranges holding paths, literals and
# text, ranges nested and left open, on every document.
FRAGMENTS = [".items", "[*]", ".metadata", ".name", ".labels", ".app", "[0]", "[-1]", "[1:]", "[:2]", "[::2]", ".*",
             "..", "[?(@.y)]", "[?(@.y>1)]", "['a','y']", "[0,1]", ".status", ".phase", ".restarts", ".conditions",
             ".type", ".spec", ".containers", ".ints", ".strs", ".mixed", ".nested", ".x", ".y", ".k", ".s", ".u",
             "[?(@)]", "[?(@.status.restarts>2)]", "[?(@.name=='nginx')]", "[?(@<3)]", ".floats", ".n", ".l", "@"]
LITERALS = ["{'\\n'}", '{","}', "{' '}", "{@}", "{5}", "{1.5}", "{true}", "x", "|", "✓"]


def generated_templates(count: int = 1500, seed: int = 17) -> list[str]:
    rnd = random.Random(seed)

    def path() -> str:
        return "".join(rnd.choice(FRAGMENTS) for _ in range(rnd.randint(0, 5)))

    def action(depth: int) -> str:
        r = rnd.random()
        if r < 0.5 or depth > 2:
            return "{" + path() + "}"
        if r < 0.65:
            return rnd.choice(LITERALS)
        body = "".join(action(depth + 1) for _ in range(rnd.randint(0, 3)))
        return "{range " + path() + "}" + body + ("{end}" if rnd.random() < 0.9 else "")

    return ["".join(action(0) for _ in range(rnd.randint(1, 4))) for _ in range(count)]


def max_map_size(value: Any) -> int:
    if isinstance(value, dict):
        return max([len(value)] + [max_map_size(v) for v in value.values()])
    if isinstance(value, list):
        return max([0] + [max_map_size(v) for v in value])
    return 0


def walks_maps(template: str) -> bool:
    return ".*" in template or ".." in template


def cases() -> list[dict[str, Any]]:
    """Every template of the table on every document, each combination on its documents (missing keys
    allowed, then not), then the generated templates, each on one document.

    Map-walking templates go only with documents whose maps Go's random order can show sorted.
    """
    out: list[dict[str, Any]] = []
    for template, names in [(t, list(DOCS)) for t in TEMPLATES] + combined_templates():
        for name, doc in ((n, DOCS[n]) for n in names):
            if walks_maps(template) and max_map_size(doc) > 8:
                continue
            for allow in (True, False):
                out.append({"template": template, "docName": name, "allowMissing": allow})
    small = [name for name, doc in DOCS.items() if max_map_size(doc) <= 8]
    for i, template in enumerate(generated_templates()):
        names = small if walks_maps(template) else list(DOCS)
        out.append({"template": template, "docName": names[i % len(names)], "allowMissing": i % 3 != 0})
    return out


# ---- the reference program ---------------------------------------------------------------------------

def ref_binary() -> Path | None:
    go = shutil.which("go")
    if go is None:
        return None
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((REF_SOURCE / name).read_bytes())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aicr-jsonpath-ref"
    binary = cache / digest.hexdigest()[:16] / "jsonpath_ref"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local", CGO_ENABLED="0")
    partial = binary.with_name(f"jsonpath_ref.{os.getpid()}.tmp")
    proc = subprocess.run([go, "build", "-trimpath", "-o", str(partial), "."], cwd=REF_SOURCE, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"building tools/jsonpath_ref failed:\n{proc.stderr}"
    partial.replace(binary)
    return binary


@pytest.fixture(scope="module")
def ref() -> Path:
    binary = ref_binary()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the jsonpath differential test against client-go, but `go` is not on PATH")
        pytest.skip("the Go toolchain is not on PATH, so client-go's jsonpath cannot be asked: install Go to run this")
    return binary


def ask_go(binary: Path, requests: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    payload = json.dumps(requests, sort_keys=True)  # sorted keys: Go's map order can then come out sorted
    proc = subprocess.run([str(binary)], input=payload, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    answers: list[list[dict[str, Any]]] = json.loads(proc.stdout)
    return answers


def go_request(case: dict[str, Any], runs: int, mode: str = "print") -> dict[str, Any]:
    return {"template": case["template"], "doc": DOCS[case["docName"]], "allowMissing": case["allowMissing"],
            "mode": mode, "runs": runs if walks_maps(case["template"]) else 1}


def go_outcomes(answer: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [("out", base64.b64decode(a.get("bytes", ""))) if "out" in a else ("error", a["error"])
            for a in answer]


def ours(case: dict[str, Any], mode: str = "print") -> tuple[str, Any]:
    try:
        template = jsonpath.parse(case["template"])
        doc = DOCS[case["docName"]]
        text = template.column(doc) if mode == "columns" else template.execute(doc, case["allowMissing"])
    except jsonpath.JsonPathError as err:
        return ("error", err.message)
    return ("out", text.encode("utf-8", "surrogateescape"))


def disagreements(binary: Path, all_cases: list[dict[str, Any]], mode: str) -> list[tuple[Any, ...]]:
    answers = ask_go(binary, [go_request(c, 64, mode) for c in all_cases])
    assert len(answers) == len(all_cases)
    wrong = []
    for case, answer in zip(all_cases, answers, strict=True):
        mine = ours(case, mode)
        if mine in go_outcomes(answer):
            continue
        if len(answer) > 1:  # Go's order was random: ask again, many more times, before calling it a difference
            answer = ask_go(binary, [go_request(case, 5000, mode)])[0]
            if mine in go_outcomes(answer):
                continue
        wrong.append((case["template"], case["docName"], case["allowMissing"], mine, go_outcomes(answer)))
    return wrong


def test_the_cases_are_many_and_varied() -> None:
    all_cases = cases()
    assert len(all_cases) >= 300, len(all_cases)
    outcomes = [ours(c)[0] for c in all_cases]
    assert outcomes.count("out") > 1000 and outcomes.count("error") > 300, (outcomes.count("out"),
                                                                              outcomes.count("error"))


def test_kubectl_prints_what_we_print(ref: Path) -> None:
    all_cases = cases()
    wrong = disagreements(ref, all_cases, "print")
    assert not wrong, f"{len(wrong)} of {len(all_cases)} cases differ from client-go:\n" + "\n".join(
        repr(w) for w in wrong[:40])


def test_custom_columns_cells_match(ref: Path) -> None:
    """The same engine as kubectl's custom-columns cell: fmt.Sprint of each value, `<none>` when empty."""
    all_cases = [c for c in cases() if c["allowMissing"]]
    wrong = disagreements(ref, all_cases, "columns")
    assert not wrong, f"{len(wrong)} of {len(all_cases)} cells differ from client-go:\n" + "\n".join(
        repr(w) for w in wrong[:40])
