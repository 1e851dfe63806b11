"""A member's server as `strict_server` accepts it, against Go's net/url and Python's urllib.

tools/url_ref is a small Go program on the standard library's net/url (what client-go parses a
kubeconfig server with): it answers, for each URL, the error or the scheme, userinfo, host, port,
query and fragment it reads. Every server `strict_server` accepts must read alike in Go and in
urllib (an https URL with no userinfo, query or fragment, the same host and port): where they
would disagree (`https://A\\@B`: Go refuses it, urllib finds host B), the server is refused. The
corpus is the unit tests' servers and every one-character insertion of a hostile character into
a few good ones. Built with the local Go toolchain into ~/.cache/aicr-url-ref/ (standard library
only); without Go the test skips, saying so; under CI=true it fails instead.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from aicr_core.fleet.hub_limits import strict_server

REF_SOURCE = Path(__file__).resolve().parents[2] / "tools" / "url_ref"
GOOD = ["https://a.example", "https://a.example:6443", "https://10.0.0.1:443/prefix/", "https://[fd00::1]:6443",
        "https://a.example/x@y", "https://kube.example.com:443/clusters/eu-1"]
HOSTILE = ["\\", "@", ":", "/", "?", "#", "%", " ", "\t", "\r", "\n", "\x00", "\x7f", "[", "]", "\u00a0", "\u3002",
           "\uff0e", "\u200b", "%40", "%5c", "%2f", "@evil.example", "\\@evil.example", ":1@evil", "..", "%00"]


def corpus() -> list[str]:
    urls = list(GOOD) + ["http://a.example", "https://u@a.example", "https://a.example\\@b.example",
                         "https://a.example:99999", "https://:6443", "https:a.example", "https:/a.example",
                         "https:///a.example", "HTTPS://a.example", "https://a.example:+1", "https://a.example:0x1"]
    for good in GOOD:
        for at in range(len(good) + 1):
            urls += [good[:at] + char + good[at:] for char in HOSTILE]
    return sorted(set(urls))


def ref_binary() -> Path | None:
    go = shutil.which("go")
    if go is None:
        return None
    digest = hashlib.sha256()
    for name in ("go.mod", "main.go"):
        digest.update((REF_SOURCE / name).read_bytes())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aicr-url-ref"
    binary = cache / digest.hexdigest()[:16] / "url_ref"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOTOOLCHAIN="local", CGO_ENABLED="0")
    partial = binary.with_name(f"url_ref.{os.getpid()}.tmp")
    proc = subprocess.run([go, "build", "-trimpath", "-o", str(partial), "."], cwd=REF_SOURCE, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"building tools/url_ref failed:\n{proc.stderr}"
    partial.replace(binary)
    return binary


@pytest.fixture(scope="module")
def go_reads() -> dict[str, dict[str, Any]]:
    binary = ref_binary()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the server URL differential test against Go's net/url, but `go` is not on PATH")
        pytest.skip("the Go toolchain is not on PATH, so Go's net/url cannot be asked: install Go to run this")
    urls = corpus()
    proc = subprocess.run([str(binary)], input=json.dumps(urls), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return dict(zip(urls, json.loads(proc.stdout), strict=True))


def test_every_accepted_server_reads_alike_in_go_and_in_python(go_reads: dict[str, dict[str, Any]]) -> None:
    accepted = [url for url in go_reads if strict_server(url) is None]
    assert set(GOOD) <= set(accepted), sorted(set(GOOD) - set(accepted))
    disagreements = []
    for url in accepted:
        go = go_reads[url]
        split = urllib.parse.urlsplit(url)
        host = split.hostname or ""
        python = {"scheme": split.scheme.lower(), "user": "@" in split.netloc, "host": host,
                  "port": str(split.port or ""), "query": bool(split.query), "fragment": bool(split.fragment)}
        ours = {"error": "", "scheme": "https", "user": False, "host": host, "port": python["port"], "query": False,
                "fragment": False, "opaque": False}
        theirs = {"error": go.get("error", ""), "scheme": go["scheme"].lower() if "scheme" in go else "",
                  "user": go.get("user"), "host": go.get("host", "").lower(), "port": go.get("port", ""),
                  "query": go.get("query"), "fragment": go.get("fragment"), "opaque": go.get("opaque")}
        if theirs != ours or {k: python[k] for k in ("scheme", "user", "query", "fragment")} != {
                "scheme": "https", "user": False, "query": False, "fragment": False}:
            disagreements.append((url, theirs, python))
    assert not disagreements, disagreements[:10]
    assert len(accepted) > len(GOOD)  # the corpus holds accepted servers beyond the good ones (paths with %40, ...)


def test_what_go_refuses_is_refused(go_reads: dict[str, dict[str, Any]]) -> None:
    refused_by_go = [url for url, go in go_reads.items() if go.get("error")]
    assert refused_by_go, "the corpus holds servers Go refuses"
    compare_none = [url for url in refused_by_go if strict_server(url) is None]
    assert not compare_none, compare_none[:10]
