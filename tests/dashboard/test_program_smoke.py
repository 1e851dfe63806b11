"""The dashboard starts, exchanges its token, serves the inbox's JSON and stops: the frozen release's smoke test.

The real `kubectl aicr dashboard` (the virtualenv's, or the frozen program's when the release's
parity run puts it first on PATH: support.harness.aicr_env) against a fake API server holding one
rollout; no control plane. Its templates and static files must be in the program: the inbox page
and its script are fetched too.
"""
from __future__ import annotations

import http.client
import json
import re
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from testfixtures import compare

from support.fake_apiserver import ByPath, Respond, fake_apiserver
from support.harness import Aicr, aicr_env
from support.samples import ROLLOUT

URL_LINE = re.compile(r"(http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{32,}))")
NAME = ROLLOUT["metadata"]["name"]


def get(port: int, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("GET", path, headers=headers)
    answer = conn.getresponse()
    text = answer.read().decode()
    conn.close()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, text


def test_start_token_inbox_json_stop(aicr: Aicr, tmp_path: Path) -> None:
    listing = {"kind": "RuntimeRolloutList", "metadata": {"resourceVersion": "1"}, "items": [ROLLOUT]}
    reports = {"kind": "ConfigMapList", "metadata": {}, "items": []}
    me = {"kind": "SelfSubjectReview", "status": {"userInfo": {"username": "alice"}}}
    routes = ByPath((("/api/v1/namespaces/aicr-system/configmaps", Respond(200, reports)),
                     ("/apis/authentication.k8s.io", Respond(201, me)),
                     ("/apis/authorization.k8s.io", Respond(201, {"status": {"allowed": True}}))),
                    Respond(200, listing))
    with fake_apiserver(tmp_path, [routes]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        env = aicr_env(aicr.home, kc, XDG_RUNTIME_DIR=str(tmp_path))
        proc = subprocess.Popen([aicr.kubectl, "aicr", "dashboard"], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            assert select.select([proc.stderr], [], [], 30)[0], "no URL line"
            found = URL_LINE.search(proc.stderr.readline())
            assert found, "no URL in the first line"
            port, token = int(found.group(2)), found.group(3)
            status, headers, _ = get(port, f"/?token={token}", {})
            compare(status, expected=303)
            cookie = {"Cookie": headers["set-cookie"].split(";", 1)[0]}
            document: dict[str, Any] = {}
            end = time.monotonic() + 20
            while not document.get("items") and time.monotonic() < end:
                status, _, text = get(port, "/api/rollouts", cookie)
                document = json.loads(text)
                time.sleep(0.2)
            compare([i["name"] for i in document["items"]], expected=[NAME])
            status, _, page = get(port, "/", cookie)
            compare((status, NAME in page), expected=(200, True))
            status, _, script = get(port, "/static/dashboard.js", cookie)
            compare((status, "textContent" in script), expected=(200, True))
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    # Nothing printed per request (no access log): the URL line (read above), then the stop's line alone.
    compare((proc.returncode, stderr.splitlines()), expected=(143, ["error: [INTERRUPTED] interrupted (SIGTERM)"]))
