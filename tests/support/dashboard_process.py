"""The real `kubectl aicr dashboard` as a subprocess, asked over HTTP as a browser asks (cookie, Origin, form token)."""
from __future__ import annotations

import http.client
import json
import re
import select
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from testfixtures import compare

from support.harness import Aicr, aicr_env

URL_LINE = re.compile(r"open (http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{32,})) \(also in (\S+),")
START_SECONDS = 20.0


@dataclass
class Running:
    proc: subprocess.Popen[str]
    url: str
    port: int
    token: str
    url_file: Path
    cookie: str = ""

    def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        sent = {**({"Cookie": self.cookie} if self.cookie else {}), **(headers or {})}
        data = urlencode(body, doseq=True) if body is not None else None
        if data is not None:
            sent.update({"Content-Type": "application/x-www-form-urlencoded",
                         "Origin": f"http://127.0.0.1:{self.port}"})
        conn.request(method, path, body=data, headers=sent)
        answer = conn.getresponse()
        text = answer.read().decode()
        conn.close()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, text

    def sign_in(self) -> None:
        status, headers, _ = self.request("GET", f"/?token={self.token}")
        compare((status, headers["location"]), expected=(303, "/"))
        self.cookie = headers["set-cookie"].split(";", 1)[0]

    def listing(self, wanted: str, seconds: float = 20) -> dict[str, Any]:
        """`/api/rollouts` once the watch has listed rollout `wanted`."""
        return self.until(lambda document: any(i["name"] == wanted for i in document["items"]), seconds)

    def until(self, done: Callable[[dict[str, Any]], bool], seconds: float = 20,
              path: str = "/api/rollouts") -> dict[str, Any]:
        """The JSON at `path` once `done` holds of it."""
        end = time.monotonic() + seconds
        while True:
            status, _, text = self.request("GET", path)
            document: dict[str, Any] = json.loads(text)
            if status == 200 and done(document):
                return document
            assert time.monotonic() < end, text
            time.sleep(0.2)

    def csrf(self, path: str) -> str:
        _, _, page = self.request("GET", path)
        found = re.search(r'name="csrf" value="([^"]+)"', page)
        assert found, page
        return found.group(1)


@contextmanager
def dashboard(aicr: Aicr, kubeconfig: Path, tmp_path: Path, *args: str) -> Iterator[Running]:
    env = aicr_env(aicr.home, kubeconfig, **{**aicr.extra_env, "XDG_RUNTIME_DIR": str(tmp_path)})
    proc = subprocess.Popen([aicr.kubectl, "aicr", "dashboard", *args], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], START_SECONDS)
        assert ready, "no URL line"
        line = proc.stderr.readline()
        found = URL_LINE.search(line)
        assert found, line
        yield Running(proc, found.group(1), int(found.group(2)), found.group(3), Path(found.group(4)))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
