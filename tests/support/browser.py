"""The real `kubectl aicr dashboard` as a process, and Debian's Chromium driven by Playwright, for the browser tests.

`Dashboard` starts the command as a user would (through the real kubectl, with that user's kubeconfig),
reads the URL line from its stderr (`http://ADDRESS:PORT/?token=TOKEN`, docs/dashboard.md) and keeps
draining stderr so that the process never blocks on a full pipe (the lines are kept: a test can look
at everything it printed). `stop()` sends SIGINT and returns what it printed and its exit code.

`chromium()` launches /usr/bin/chromium (never `playwright install`: CI must not depend on a CDN).
Without it, or without the `playwright` package, outside CI the tests skip with the reason; with
CI=true that is a failure, as a missing control plane is (tests/support/harness.py).

`Api` reads the JSON beside the pages as a script does: `Authorization: Bearer TOKEN`.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.harness import aicr_env

CHROMIUM = Path(os.environ.get("AICR_CHROMIUM", "/usr/bin/chromium"))
# evil.test resolves to loopback inside the browser only: a DNS rebinding attack without a DNS server.
EVIL_HOST = "evil.test"
CHROMIUM_ARGS = ["--no-sandbox", f"--host-resolver-rules=MAP {EVIL_HOST} 127.0.0.1", "--no-proxy-server"]
URL_LINE = re.compile(r"(http://(\[[0-9a-fA-F:]+\]|[0-9.]+):(\d+)/\?token=([A-Za-z0-9_-]{32,}))")
START_SECONDS = 60  # the command's start (kubectl, then the plugin and its web stack) on a loaded 2-core machine
STOP_SECONDS = 10


def unavailable(reason: str) -> None:
    """Skip with the reason outside CI; under CI=true, fail: CI never skips the browser tests."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the browser tests, but: {reason}")
    pytest.skip(f"browser tests need Chromium and Playwright: {reason}")


def chromium(extra_args: Sequence[str] = ()) -> Iterator[Any]:
    """A Playwright Browser on Debian's Chromium (a fixture yields it); closed after."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (pip install -e '.[test]')")
    if not os.access(CHROMIUM, os.X_OK):
        unavailable(f"{CHROMIUM} is missing (apt-get install chromium); never `playwright install`")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, *extra_args])
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Dashboard:
    """One `kubectl aicr dashboard` process; `url` the URL it printed, `token` its token."""

    proc: subprocess.Popen[str]
    url: str = ""
    host: str = ""
    port: int = 0
    token: str = ""
    lines: list[str] = field(default_factory=list)
    _reader: threading.Thread | None = None
    _found: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def start(cls, kubectl: str, home: Path, cwd: Path, kubeconfig: Path, *args: str,
              env: dict[str, str] | None = None) -> Dashboard:
        runtime = home / "run"  # the URL file's folder ($XDG_RUNTIME_DIR): in the test's own, not the machine's
        runtime.mkdir(mode=0o700, exist_ok=True)
        proc = subprocess.Popen([kubectl, "aicr", "dashboard", *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd,
                                env=aicr_env(home, kubeconfig, XDG_RUNTIME_DIR=str(runtime), **(env or {})))
        dashboard = cls(proc)
        dashboard._reader = threading.Thread(target=dashboard._drain, daemon=True)
        dashboard._reader.start()
        if not dashboard._found.wait(START_SECONDS) or not dashboard.url:
            code, printed = dashboard.stop()
            raise AssertionError(f"kubectl aicr dashboard printed no URL within {START_SECONDS}s "
                                 f"(exit {code}):\n{printed}")
        return dashboard

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            found = URL_LINE.search(line)
            if found and not self.url:
                self.url, host, port, self.token = found.groups()
                self.host, self.port = host, int(port)
                self._found.set()
        self._found.set()  # the process ended (without a URL, if none was found)

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def page_url(self, context: str, name: str) -> str:
        return f"{self.origin}{rollout_path(context, name)}"

    def stderr(self) -> str:
        return "".join(self.lines)

    def stop(self, signum: int = signal.SIGINT) -> tuple[int, str]:
        """Signal it, wait for its end (killed after STOP_SECONDS), and return (exit code, all it printed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
            try:
                self.proc.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        return self.proc.returncode, self.stderr()


def encode_context(context: str) -> str:
    """A context as one path segment: every byte outside [A-Za-z0-9_~-] percent-encoded (docs/dashboard.md)."""
    return "".join(chr(b) if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "_~-") else f"%{b:02X}"
                   for b in context.encode())


def rollout_path(context: str, name: str) -> str:
    return f"/c/{encode_context(context)}/r/{name}"


class Api:
    """The dashboard's JSON as a script reads it: a bearer token, the dashboard's own Host."""

    def __init__(self, dashboard: Dashboard) -> None:
        self.dashboard = dashboard

    def request(self, path: str, *, method: str = "GET", headers: dict[str, str] | None = None,
                body: bytes | None = None, bearer: bool = True) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of one request; redirects are not followed."""
        sent = {**({"Authorization": f"Bearer {self.dashboard.token}"} if bearer else {}), **(headers or {})}
        request = urllib.request.Request(f"{self.dashboard.origin}{path}", data=body, method=method, headers=sent)
        opener = urllib.request.build_opener(_NoRedirect, urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=30) as answer:
                return answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def json(self, path: str) -> Any:
        status, _, body = self.request(path)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def rollouts(self, pending: bool = False) -> Any:
        return self.json("/api/rollouts" + ("?pending=true" if pending else ""))

    def wait_listed(self, contexts: Sequence[str], seconds: float = 60) -> Any:
        """The listing once every one of `contexts` has listed (its `read`); the document."""
        ends = time.monotonic() + seconds
        while True:
            status, _, body = self.request("/api/rollouts")  # 503 while a cluster alone has not listed
            document = json.loads(body) if status in (200, 503) else {}
            if status == 200 and set(contexts) <= set(document.get("read", [])):
                return document
            if time.monotonic() > ends:
                raise AssertionError(f"not every cluster listed within {seconds:.0f}s: {status} {body[:500]!r}")
            time.sleep(0.2)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def eventually(check: Callable[[], Any], seconds: float, what: str, every: float = 0.2) -> Any:
    """`check()`'s first truthy value within `seconds`; else an AssertionError naming `what`."""
    ends = time.monotonic() + seconds
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > ends:
            raise AssertionError(f"{what}: not within {seconds:g}s")
        time.sleep(every)


def form_body(fields: dict[str, str] | Sequence[tuple[str, str]]) -> bytes:
    return urllib.parse.urlencode(fields).encode()
