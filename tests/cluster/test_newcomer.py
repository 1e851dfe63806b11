"""A newcomer's first hour (issue 14, item 12): the demo's kubeconfigs, and the webhook verb, on real control planes."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import envtest
from testfixtures import compare

from support.harness import BIN, ROOT, Aicr, read_until_running


@contextmanager
def running(verb: str) -> Iterator[str]:
    """`python tools/testbed.py VERB` until it says it runs; its output so far. Stopped (SIGTERM) after."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.Popen([sys.executable, "tools/testbed.py", verb], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        text = read_until_running(proc, 180)
        assert text.endswith("Running until interrupted (Ctrl-C).\n"), text
        yield text
        proc.send_signal(signal.SIGTERM)
        compare(proc.wait(timeout=30), expected=0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def kubeconfigs(text: str) -> dict[str, tuple[Path, str]]:
    """The demo's list: user -> (kubeconfig, what the user may do)."""
    block = text.split("Kubeconfigs, one per user", 1)[1].split("\nAll of them as contexts", 1)[0]
    found = re.findall(r"^  (\S+) +(/\S+)\n {2,}(.+)$", block, re.M)
    return {user: (Path(path), role.strip()) for user, path, role in found}


def test_the_demo_lists_every_users_kubeconfig_with_what_they_may_do(aicr: Aicr, plane: envtest.ControlPlane) -> None:
    with running("demo") as text:
        listed = kubeconfigs(text)
        compare(sorted(listed), expected=sorted([*envtest.USERS, envtest.EXEC_USER]))
        compare({user: role for user, (_, role) in listed.items()}, expected=envtest.USER_ROLES)
        for user in ("alice", "erin", "victor", "pat"):  # each file is that user, with what the list says
            proc = aicr("whoami", "-o", "json", kubeconfig=listed[user][0])
            compare(proc.returncode, expected=0, suffix=proc.stderr)
            doc = json.loads(proc.stdout)
            compare((doc["username"], doc["mayApprove"]), expected=(user, user in ("alice", "erin")))


def test_the_webhook_verb_runs_aicr_admission_against_the_demo(aicr: Aicr, plane: envtest.ControlPlane) -> None:
    with running("webhook") as text:
        match = re.search(r"^Admission webhook aicr-admission at (https://127\.0\.0\.1:\d+)/validate, registered .*"
                          r"its log \(one JSON line per decision\): (\S+)$", text, re.M)
        assert match, text
        log = Path(match.group(2))
        metrics = re.search(r"^Its metrics \(Prometheus text\): (http://127\.0\.0\.1:\d+/metrics)$", text, re.M)
        assert metrics, text
        alice = kubeconfigs(text)["alice"][0]
        waiting = re.search(r"^  waiting +(\S+)$", text, re.M).group(1)  # type: ignore[union-attr]
        proc = aicr("approve", waiting, "--reason", "webhook demo", "--expires", "1h", "--dry-run=server",
                    kubeconfig=alice)
        compare(proc.returncode, expected=0, suffix=proc.stderr)
        decisions = [json.loads(line) for line in log.read_text().splitlines()
                     if '"decision"' in line and waiting in line]
        assert decisions and decisions[-1].get("rollout") == waiting, log.read_text()[-2000:]
        with urllib.request.urlopen(metrics.group(1), timeout=5) as resp:
            assert 'aicr_admission_reviews_total{action="approve",verdict="allow"}' in resp.read().decode()
