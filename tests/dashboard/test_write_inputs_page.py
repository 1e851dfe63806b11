"""A site's write input (the site example's `ticket`) on the page: a form field, reaching the policies as the flag does.

The real `kubectl aicr dashboard` with the site example installed (support.plugin_env), against
the fake API server of tests/cli/test_write_inputs.py: one rollout awaiting approval whose policy
file names change-ticket. The same input gives the same decision, in the same words, from the page
as from the CLI.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from markupsafe import escape
from testfixtures import compare

from aicr_dashboard.page_render import rollout_path

from support.dashboard_process import Running, dashboard
from support.fake_apiserver import ByPath, Respond, fake_apiserver, status
from support.harness import Aicr
from support.samples import ROLLOUT

R = ROLLOUT["metadata"]["name"]
ME = {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
      "status": {"userInfo": {"username": "alice", "groups": ["aicr:approvers"]}}}
POLICY = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system"},
          "data": {"policy.yaml": json.dumps({"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy",
                                              "policies": {"change-ticket": {}}})}}
ALLOWED = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "status": {"allowed": True}}


def cluster() -> list[ByPath]:
    routes = ByPath((("/apis/authentication.k8s.io", Respond(201, ME)),
                     ("/apis/authorization.k8s.io", Respond(201, ALLOWED)),
                     ("/apis/operator.aicr.run/v1alpha1/clusterruntimes", status(404, "not found", "NotFound")),
                     ("/apis/operator.aicr.run/v1alpha1/runtimerollouts", Respond(200, ROLLOUT)),
                     ("/api/v1/namespaces/aicr-system/configmaps", Respond(200, POLICY))),
                    default=status(500, "no such request was expected"))
    return [routes] * 200


def signed_in_as_alice(running: Running) -> None:
    running.sign_in()
    end = time.monotonic() + 20
    while '<td class="user">alice</td>' not in running.request("GET", "/")[2]:
        assert time.monotonic() < end, "who-am-I never answered"
        time.sleep(0.2)


def shown(lines: str) -> list[str]:
    """The CLI's lines as the page escapes them (Jinja2's autoescape: markupsafe)."""
    return [str(escape(line)) for line in lines.splitlines() if line.strip()]


def test_the_ticket_is_a_field_and_decides_as_the_flag(site_package: Aicr, tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, cluster()) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        cli_denied = site_package("approve", R, "--reason", "window", "--expires", "1h", kubeconfig=kc)
        cli_checked = site_package("policy", "check", R, "--reason", "window", "--expires", "1h", "--ticket",
                                    "CHG-77", kubeconfig=kc)
        with dashboard(site_package, kc, tmp_path) as running:
            signed_in_as_alice(running)
            page = rollout_path("fake", R)
            _, _, text = running.request("GET", page)
            assert 'name="ticket"' in text, text
            running.request("POST", f"{page}/approve",
                            {"csrf": running.csrf(page), "reason": "window", "expires": "1h"})
            _, _, denied = running.request("GET", page)
            running.request("POST", f"{page}/check",
                            {"csrf": running.csrf(page), "reason": "window", "expires": "1h", "ticket": "CHG-77"})
            _, _, checked = running.request("GET", page)
        patches = [r for r in server.requests if r.method == "PATCH"]
    compare(cli_denied.returncode, expected=1, suffix=cli_denied.stderr)
    for line in shown(cli_denied.stderr):
        assert line in denied, (line, denied)
    compare(cli_checked.returncode, expected=0, suffix=cli_checked.stderr)
    ticket_lines = [line for line in shown(cli_checked.stdout) if "change-ticket" in line]
    assert ticket_lines, cli_checked.stdout
    for line in ticket_lines:
        assert line in checked, checked.split('id="verdicts"><pre>')[1].split("</pre>")[0]
    page_lines = checked.split('id="verdicts"><pre>')[1].split("</pre>")[0].splitlines()
    compare([line for line in page_lines if line.strip() and " at 20" not in line],
            expected=[line for line in shown(cli_checked.stdout) if " at 20" not in line])  # but the time
    assert f"kubectl aicr policy check {R} --action approve --reason window --expires 1h --ticket CHG-77" in checked
    compare(patches, expected=[])
