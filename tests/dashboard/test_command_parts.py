"""The command's parts that need no server: the loopback rule, the port in use, the URL file."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from testfixtures import ShouldRaise, compare

from aicr_core.errors import AicrError, Code, UsageError
from aicr_dashboard import loopback, serving
from aicr_dashboard.url_file import UrlFiles, folder

from support.harness import Aicr


@pytest.mark.parametrize(("given", "bound"), [("127.0.0.1", "127.0.0.1"), ("127.8.9.10", "127.8.9.10"),
                                              ("::1", "::1"), ("localhost", "127.0.0.1"), ("LOCALHOST", "127.0.0.1")])
def test_a_loopback_address_is_taken(given: str, bound: str) -> None:
    compare(loopback.bind_address(given), expected=bound)


@pytest.mark.parametrize("given", ["0.0.0.0", "::", "192.168.1.5", "10.0.0.1", "example.com", "::ffff:127.0.0.1", ""])
def test_any_other_address_is_usage_saying_why(given: str) -> None:
    with ShouldRaise(UsageError) as raised:
        loopback.bind_address(given)
    assert "the page acts with your credentials" in str(raised.raised), raised.raised


def test_the_hosts_and_origins_of_an_address() -> None:
    compare(loopback.allowed_hosts("::1", 8080), expected=frozenset({"[::1]:8080", "localhost:8080"}))
    compare(loopback.origins("127.0.0.2", 9), expected=frozenset({"http://127.0.0.2:9", "http://localhost:9"}))


def test_a_port_in_use_is_unavailable_naming_it() -> None:
    first = serving.listening_socket("127.0.0.1", 0)
    try:
        port = first.getsockname()[1]
        with ShouldRaise(AicrError) as raised:
            serving.listening_socket("127.0.0.1", port)
        compare(raised.raised.code, expected=Code.UNAVAILABLE)
        assert f"port {port}" in raised.raised.message, raised.raised.message
    finally:
        first.close()


def test_the_url_file_is_the_users_alone_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    compare(folder(), expected=tmp_path / "kubectl-aicr")
    files = UrlFiles("http://127.0.0.1:1/?token=abc", 1)
    files.write()
    compare((files.path.read_text(), stat.S_IMODE(os.stat(files.path).st_mode)),
            expected=("http://127.0.0.1:1/?token=abc\n", 0o600))
    compare([p.name for p in files.path.parent.iterdir()], expected=["dashboard-1.url"])  # no part file left
    files.remove()
    assert not files.path.exists()
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    compare(folder(), expected=tmp_path / "cache" / "kubectl-aicr")


def test_the_command_refuses_before_it_listens(aicr: Aicr, tmp_path: Path) -> None:
    for args, code, words in ((("--address", "0.0.0.0"), 2, "loopback only"),
                              (("--parallel", "2"), 2, "--parallel needs"),
                              (("--port", "70000"), 2, "invalid --port")):
        proc = aicr("dashboard", *args, kubeconfig=tmp_path / "none")
        compare(proc.returncode, expected=code, suffix=proc.stderr)
        assert proc.stderr.startswith("error: [USAGE]") and words in proc.stderr, proc.stderr


def test_the_stop_begins_no_write_and_waits_for_those_on_the_wire() -> None:
    from aicr_dashboard.page_actions import InFlight

    writes = InFlight()
    assert writes.begin()
    writes.stop()
    assert not writes.begin()  # none begins once the stop is asked
    writes.end(["rollout r approved by alice until 2099-01-01T00:00:00Z"])
    compare(writes.wait(1), expected=[["rollout r approved by alice until 2099-01-01T00:00:00Z"]])


def test_open_gives_the_browser_a_file_of_the_users_not_the_token(aicr: Aicr, tmp_path: Path) -> None:
    """--open hands the browser (here $BROWSER, a script recording its arguments) a file: no token in any argv."""
    import signal
    import subprocess
    import time

    from support.harness import aicr_env

    record = tmp_path / "browser-args"
    browser = tmp_path / "browser"
    browser.write_text(f"#!/bin/sh\necho \"$@\" > {record}\n")
    browser.chmod(0o700)
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text('{"apiVersion": "v1", "kind": "Config", "current-context": "c", "clusters": [{"name": "c", '
                          '"cluster": {"server": "https://127.0.0.1:1"}}], "users": [{"name": "u", "user": {}}], '
                          '"contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}')
    env = aicr_env(aicr.home, kubeconfig, XDG_RUNTIME_DIR=str(tmp_path), BROWSER=str(browser))
    proc = subprocess.Popen([aicr.kubectl, "aicr", "dashboard", "--open"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 20
        while not record.exists() or not record.read_text().strip():
            assert time.monotonic() < end and proc.poll() is None, "the browser was never started"
            time.sleep(0.1)
        given = record.read_text().strip()
        page = Path(given.removeprefix("file://"))
        assert "token" not in given, given
        text = page.read_text()
        url = (tmp_path / "kubectl-aicr" / page.name.replace(".html", ".url")).read_text().strip()
        assert f'content="0;url={url.replace("&", "&amp;")}"' in text, text
        compare(stat.S_IMODE(os.stat(page).st_mode), expected=0o600)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    assert not page.exists()  # removed at the stop, with the URL file


def test_on_ipv6_loopback_the_url_has_brackets_and_the_host_check_holds(aicr: Aicr, tmp_path: Path) -> None:
    import http.client
    import re
    import select
    import signal
    import subprocess

    from support.harness import aicr_env

    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text('{"apiVersion": "v1", "kind": "Config", "current-context": "c", "clusters": [{"name": "c", '
                          '"cluster": {"server": "https://127.0.0.1:1"}}], "users": [{"name": "u", "user": {}}], '
                          '"contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}')
    env = aicr_env(aicr.home, kubeconfig, XDG_RUNTIME_DIR=str(tmp_path))
    proc = subprocess.Popen([aicr.kubectl, "aicr", "dashboard", "--address", "::1"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None and select.select([proc.stderr], [], [], 20)[0]
        found = re.search(r"http://\[::1\]:(\d+)/\?token=([A-Za-z0-9_-]{32,})", proc.stderr.readline())
        assert found
        port, token = int(found.group(1)), found.group(2)
        answers = {}
        for host in (f"[::1]:{port}", f"localhost:{port}", f"127.0.0.1:{port}"):
            conn = http.client.HTTPConnection("::1", port, timeout=10)
            conn.request("GET", f"/?token={token}", headers={"Host": host})
            answers[host] = conn.getresponse().status
            conn.close()
        compare(answers, expected={f"[::1]:{port}": 303, f"localhost:{port}": 303, f"127.0.0.1:{port}": 421})
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    compare(proc.returncode, expected=143)


def test_the_equivalent_command_has_the_connection_flags_quoted_and_no_token() -> None:
    import argparse

    from aicr_dashboard import equivalent

    args = argparse.Namespace(kubeconfig="/home/a b/kc", operator_namespace="aicr-system", token="s3cr3t",
                              as_user="alice", as_group=["g1", "g 2"], request_timeout=30.0,
                              insecure_skip_tls_verify=True, server=None)
    compare(equivalent.command(["approve", "r-1", "--reason", "CHG-1 window"], "ctx", single=True, plan=None,
                               args=args),
            expected="kubectl aicr approve r-1 --reason 'CHG-1 window' --context ctx --kubeconfig '/home/a b/kc' "
                     "--insecure-skip-tls-verify --token TOKEN --as alice --as-group g1 --as-group 'g 2' "
                     "--request-timeout 30s")


def test_the_script_sets_text_only_and_the_templates_hold_no_inline_script_or_style() -> None:
    import re

    import aicr_dashboard

    package = Path(aicr_dashboard.__file__).parent
    script = (package / "static" / "dashboard.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                 "setAttribute(\"on", "javascript:"):
        assert sink not in script, sink
    assert "textContent" in script
    for template in sorted((package / "templates").glob("*.html")):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), template.name  # only <script src=...>
        assert "<style" not in text and " style=" not in text, template.name
        assert not re.search(r"\son[a-z]+=", text), template.name  # no inline handler
        assert "|safe" not in text and "Markup" not in text, template.name  # nothing marked safe
