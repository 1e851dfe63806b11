"""The real `kubectl aicr dashboard` (a subprocess, through kubectl) on the real control plane, as the demo's users.

alice approves (`aicr:approvers`), victor only views. Each test starts its own dashboard, reads
the URL line, exchanges the token and asks over HTTP as a browser would (cookie, Origin, the
form's token); what is written is read back with the real `kubectl aicr describe`. The plane is
the session's (marked `cluster` for its fixture): the tests look only at the rollouts they seeded.
"""
from __future__ import annotations

import http.client
import json
import re
import signal
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import envtest
from testfixtures import compare

from aicr_dashboard.page_render import rollout_path

from support.dashboard_process import Running, dashboard
from support.harness import Aicr
from support.tcp_relay import Proxy


def described(aicr: Aicr, plane: envtest.ControlPlane, name: str) -> dict[str, Any]:
    proc = aicr("describe", name, "-o", "json", kubeconfig=plane.kubeconfig_for("victor"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    document: dict[str, Any] = json.loads(proc.stdout)
    return document


def test_the_url_the_token_and_the_listing_are_lists(aicr: Aicr, plane: envtest.ControlPlane,
                                                    seed: envtest.Seeder, tmp_path: Path) -> None:
    waiting = seed.rollout()
    with dashboard(aicr, plane.kubeconfig_for("alice"), tmp_path) as running:
        compare(running.url_file.read_text(), expected=running.url + "\n")
        compare(running.url_file.stat().st_mode & 0o777, expected=0o600)
        status, _, _ = running.request("GET", "/api/rollouts")
        compare(status, expected=401)
        running.sign_in()
        mine = running.listing(waiting)
        proc = aicr("list", "-o", "json", kubeconfig=plane.kubeconfig_for("alice"))
        listed = json.loads(proc.stdout)
        names = {i["name"] for i in mine["items"]} & {i["name"] for i in listed["items"]}
        assert waiting in names
        compare([i for i in mine["items"] if i["name"] in names],
                expected=[i for i in listed["items"] if i["name"] in names])
        _, _, inbox = running.request("GET", "/")
        assert waiting in inbox and "alice" in inbox


def test_alice_approves_through_the_page_and_it_is_written(aicr: Aicr, plane: envtest.ControlPlane,
                                                           seed: envtest.Seeder, tmp_path: Path) -> None:
    name = seed.rollout()
    with dashboard(aicr, plane.kubeconfig_for("alice"), tmp_path) as running:
        running.sign_in()
        running.listing(name)
        page = rollout_path(envtest_context(plane, "alice"), name)
        status, headers, _ = running.request("POST", f"{page}/approve",
                                             {"csrf": running.csrf(page), "reason": "Maintenance window"})
        compare((status, headers["location"]), expected=(303, page))
        _, _, shown = running.request("GET", page)
        assert re.search(rf"rollout {name} approved by alice until \d{{4}}-", shown), shown
    compare(described(aicr, plane, name)["approval"]["user"], expected="alice")


def test_victors_forced_post_is_forbidden_and_nothing_is_written(aicr: Aicr, plane: envtest.ControlPlane,
                                                                 seed: envtest.Seeder, tmp_path: Path) -> None:
    name = seed.rollout()
    with dashboard(aicr, plane.kubeconfig_for("victor"), tmp_path) as running:
        running.sign_in()
        running.listing(name)
        page = rollout_path(envtest_context(plane, "victor"), name)
        _, _, before = running.request("GET", page)
        assert f'action="{page}/approve"' not in before  # the buttons follow his RBAC
        status, _, _ = running.request("POST", f"{page}/approve", {"csrf": running.csrf(page), "reason": "forced"})
        compare(status, expected=303)
        _, _, shown = running.request("GET", page)
        assert "error: [FORBIDDEN]" in shown, shown
    compare(described(aicr, plane, name)["approval"]["user"], expected=None)


def test_sigterm_ends_it_in_3_seconds_as_the_cli_ends(aicr: Aicr, plane: envtest.ControlPlane,
                                                      tmp_path: Path) -> None:
    for signum, code, words in ((signal.SIGTERM, 143, "interrupted (SIGTERM)"), (signal.SIGINT, 130, "interrupted")):
        with dashboard(aicr, plane.kubeconfig_for("alice"), tmp_path) as running:
            running.sign_in()
            stream = http.client.HTTPConnection("127.0.0.1", running.port, timeout=10)
            stream.request("GET", "/events", headers={"Cookie": running.cookie})
            events = stream.getresponse()
            assert events.readline().startswith(b":")  # an open event stream: it ends at once at the stop
            started = time.monotonic()
            running.proc.send_signal(signum)
            _, stderr = running.proc.communicate(timeout=10)
            took = time.monotonic() - started
            compare((running.proc.returncode, stderr.strip().splitlines()[-1]),
                    expected=(code, f"error: [INTERRUPTED] {words}"))
            assert took < 3, took
            assert "Traceback" not in stderr, stderr
            assert not running.url_file.exists()
            events.read()  # the stream ended (the server closed it), nothing left hanging
            stream.close()


def envtest_context(plane: envtest.ControlPlane, user: str) -> str:
    """The current context of the user's kubeconfig (the dashboard's one cluster)."""
    return str(json.loads(plane.kubeconfig_for(user).read_text())["current-context"])


def cluster_state(running: Running) -> str:
    _, _, inbox = running.request("GET", "/")
    found = re.search(r'<td class="state">([^<]*)</td>', inbox)
    assert found, inbox
    return found.group(1)


def wait_for_state(running: Running, prefix: str, seconds: float) -> float:
    started = time.monotonic()
    while not cluster_state(running).startswith(prefix):
        assert time.monotonic() - started < seconds, cluster_state(running)
        time.sleep(0.2)
    return time.monotonic() - started


def test_a_cluster_that_stops_answering_is_disconnected_then_back_without_a_restart(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, tmp_path: Path) -> None:
    name = seed.rollout()
    config = json.loads(plane.kubeconfig_for("alice").read_text())
    upstream = urlsplit(config["clusters"][0]["cluster"]["server"])
    proxy = Proxy((upstream.hostname or "127.0.0.1", upstream.port or 443))
    config["clusters"][0]["cluster"]["server"] = f"https://{upstream.hostname}:{proxy.port}"
    kubeconfig = tmp_path / "kubeconfig-proxied"
    kubeconfig.write_text(json.dumps(config))
    kubeconfig.chmod(0o600)
    try:
        with dashboard(aicr, kubeconfig, tmp_path) as running:
            running.sign_in()
            running.listing(name)
            compare(cluster_state(running), expected="connected")
            port = proxy.port
            proxy.stop()
            took = wait_for_state(running, "disconnected: [UNAVAILABLE]", 15)
            _, _, inbox = running.request("GET", "/")
            assert name in inbox and "(as of " in inbox  # its rows kept, with the time of its last answer
            proxy = Proxy(proxy.upstream, port)
            back = wait_for_state(running, "connected", 30)
            assert took < 15 and back < 30, (took, back)
    finally:
        proxy.stop()


def test_a_rollout_made_after_the_page_loaded_is_an_event_within_2_seconds(aicr: Aicr, plane: envtest.ControlPlane,
                                                                          seed: envtest.Seeder,
                                                                          tmp_path: Path) -> None:
    first = seed.rollout()
    with dashboard(aicr, plane.kubeconfig_for("alice"), tmp_path) as running:
        running.sign_in()
        running.listing(first)
        stream = http.client.HTTPConnection("127.0.0.1", running.port, timeout=10)
        stream.request("GET", "/events", headers={"Cookie": running.cookie})
        events = stream.getresponse()
        compare(events.getheader("content-type", "").split(";")[0], expected="text/event-stream")
        started = time.monotonic()
        later = seed.rollout()
        while True:
            line = events.readline().decode()
            assert line, "the stream ended"
            data = json.loads(line[6:]) if line.startswith("data: ") else {}
            if data.get("name") == later and data.get("waitingForPerson"):  # made, then its status written
                break
        took = time.monotonic() - started
        stream.close()
        assert took < 2, took
