"""`aicr_core.go_duration` against Go's own `time.ParseDuration`, string by string.

A ten-line Go program is built with the local Go toolchain (the one that
builds the control plane; the standard library only, no network) and asked
about every string of the corpus; our parser must give the same nanoseconds
where Go accepts and the same error where Go refuses.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from testfixtures import compare

from aicr_core import go_duration as duration

GO_PROGRAM = """\
package main

import ("bufio"; "encoding/hex"; "fmt"; "os"; "time")

func main() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		raw, _ := hex.DecodeString(in.Text())
		d, err := time.ParseDuration(string(raw))
		if err != nil { fmt.Println("err", err) } else { fmt.Println("ok", int64(d)) }
	}
}
"""

UNITS = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
NUMBERS = ["0", "1", "7", "10", "00", "007", "1.5", ".5", "1.", "0.001", "2.25", "123456789", "1.000000001",
           "0.0000000001", "9.9999999999999999999"]


def corpus() -> list[str]:
    cases = [
        # the contract's examples and the ordinary ones
        "90m", "2h", "1h30m", "45s", "1.5h", "500ms", "2h45m30.5s", "1h1m1s1ms1us1ns", "300ms", "-1.5h",
        # signs, zero, emptiness
        "", "0", "-0", "+0", "-0s", "+0s", "0s", "00", "+", "-", "--1h", "+-1h", "-+1h", "++1h", "+1h", "-1h",
        "- 1h", "+.5h", ".5h", "1.h", ".h", "-.h", ".", "..5h", "1..5h", "1.5.5h", "1.5", ".5", "h", "s", "1",
        "0.0", "-0.0", "0.s", ".0s", "-.0s",
        # units: unknown, case, spelling, micro signs
        "1d", "1w", "1y", "1H", "1S", "1Ms", "1MS", "1hour", "2hours", "1sec", "1min", "1m1", "1h1", "1µ", "1μ",
        "1µs", "1μs", "1us", "1uS", "1ns", "1n", "1µss", "1h m", "1hh", "1mm", "1ms1", "1h-1m", "1h+1m",
        "1\u00b5s", "1\u03bcs", "1\u00b5\u03bcs",
        # spaces and other whitespace are not trimmed
        " 1h", "1h ", " 1h ", "1 h", "1h 30m", "\t1h", "1h\t", "1h\n", "\n", " ", "1h\u00a0", "\u20001h",
        # non-ASCII digits are no digits
        "\u0661h", "1\u0661h", "\u0661\u0662h", "\uff11h", "\u0967h", "\u00b2h", "1\u0663s", "\u2460h",
        # look-alikes and controls
        "1h\x00", "\x001h", "1\u200bh", "\u202e1h", "1h\u202e", "1\u0127", "1\u210e", "1\u1d34", "1\"h", "1\\h",
        "1h\x7f", "\x1b[31m1h", "1h\ufffd", "\ufffd",
        # overflow at the largest duration and around it
        "2562047h", "2562048h", "2562047h47m16.854775807s", "2562047h47m16.854775808s",
        "-2562047h47m16.854775808s", "-2562047h47m16.854775809s", "2562047h47m16.854775806s",
        "9223372036854775807ns", "9223372036854775808ns", "-9223372036854775808ns", "-9223372036854775809ns",
        "9223372036854775807", "92233720368547758070ns", "9223372036854775807us", "9223372036854775.807us",
        "9223372036854.775807ms", "9223372036.854775807s", "9223372036.854775808s", "153722867m",
        "153722867.28091258m", "153722868m", "2562047.7880152155h", "2562047.788015215h", "2562047.79h",
        "99999999999999h", "9999999999h", "999999999999999999999h", "18446744073709551616ns",
        "18446744073709551615ns", "1e3s", "1e-3s", "0x10s", "1_000s", "1,5h",
        # Go's uint64 wrap-around: 2^63 + 2^63 ns is 0 for Go
        "9223372036854775808ns9223372036854775808ns", "-9223372036854775808ns1ns",
        "4611686018427387904ns4611686018427387904ns", "4611686018427387904ns4611686018427387903ns",
        # long fractions: digits past uint64 precision are ignored
        "0.12345678901234567890123456789h", "1.00000000000000000000000000001s", "0." + "9" * 40 + "s",
        "1." + "0" * 30 + "1ns", "." + "1" * 25 + "h", "3.999999999999999999999999ns",
        "0.0000000001ns", "0.9ns", "1.9ns", "0.5us", "0.0005ms", "0.1s", "0.3h", "1.0000000000000001h",
        # several parts
        "1h2m3s4ms5us6ns", "1s1s1s", "1h1h", "0h0m0s", "1.5h1.5m1.5s", "10m0.5s", "1h.5m", "1h0.5m",
        "-1h30m", "+1h30m", "1h-30m", "1h30", "h30m", "1h30mx",
    ]
    for sign in ("", "-", "+"):
        for number in NUMBERS:
            for unit in UNITS:
                cases.append(f"{sign}{number}{unit}")
    return cases


def go_binary(tmp: Path) -> Path | None:
    go = shutil.which("go")
    if go is None:
        return None
    (tmp / "main.go").write_text(GO_PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GO")}
    env.update(GOTOOLCHAIN="local", GOFLAGS="", CGO_ENABLED="0", GO111MODULE="on", GOPROXY="off")
    for key in ("GOCACHE", "GOPATH", "GOMODCACHE"):  # keep the machine's caches: a warm build of the stdlib
        if key in os.environ:
            env[key] = os.environ[key]
    proc = subprocess.run([go, "build", "-o", str(tmp / "parse-duration"), "main.go"], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return tmp / "parse-duration"


@pytest.fixture(scope="module")
def go_parse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    binary = go_binary(tmp_path_factory.mktemp("go-duration"))
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the Go differential test, but `go` is not on PATH")
        pytest.skip("the Go toolchain is not on PATH")
    yield binary


def ask_go(binary: Path, cases: list[str]) -> list[str]:
    data = "".join(c.encode("utf-8", "surrogateescape").hex() + "\n" for c in cases)
    proc = subprocess.run([str(binary)], input=data, capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout.splitlines()


def ours(text: str) -> str:
    try:
        return f"ok {duration.parse(text)}"
    except ValueError as err:
        return f"err {err}"


def test_the_corpus_is_large_and_varied() -> None:
    cases = corpus()
    assert len(set(cases)) >= 300, len(set(cases))


def test_go_and_we_agree_on_every_string(go_parse: Path) -> None:
    cases = corpus()
    answers = ask_go(go_parse, cases)
    compare(len(answers), expected=len(cases))
    disagreements = [(c, theirs, ours(c)) for c, theirs in zip(cases, answers, strict=True) if ours(c) != theirs]
    compare(disagreements, expected=[])
    accepted = sum(a.startswith("ok ") for a in answers)
    assert 100 < accepted < len(cases) - 100, accepted  # the corpus tests both sides


def test_undecodable_argv_bytes_are_seen_as_go_sees_them(go_parse: Path) -> None:
    raw = [b"1h\xff", b"\xc3\x281h", b"1\xe2\x82h", b"\xef\xbf\xbd"]
    cases = [r.decode("utf-8", "surrogateescape") for r in raw]
    compare([ours(c) for c in cases], expected=ask_go(go_parse, cases))
