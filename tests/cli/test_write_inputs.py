"""A site's write input (the site example's `ticket`) through the real `kubectl aicr`, against a fake API server.

The example is installed as tests/cli/test_site_plugins.py installs it (support.plugin_env): its
`ticket` is declared under `aicr.write_inputs`, no hook of it runs, and still `--ticket` reaches the
change-ticket policy and the reason recorded names the ticket.
"""
from __future__ import annotations

import json
from pathlib import Path

from testfixtures import compare

from support.fake_apiserver import ByPath, Respond, fake_apiserver, status
from support.harness import Aicr, complete, error_line, words
from support.plugin_env import PluginPath
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
    """The API server of one rollout awaiting approval whose policy file names change-ticket (any order, repeated)."""
    routes = ByPath((("/apis/authentication.k8s.io", Respond(201, ME)),
                     ("/apis/authorization.k8s.io", Respond(201, ALLOWED)),
                     ("/apis/operator.aicr.run/v1alpha1/clusterruntimes", status(404, "not found", "NotFound")),
                     ("/apis/operator.aicr.run/v1alpha1/runtimerollouts", Respond(200, ROLLOUT)),
                     ("/api/v1/namespaces/aicr-system/configmaps", Respond(200, POLICY))),
                    default=status(500, "no such request was expected"))
    return [routes] * 20


def written(proc_stdout: str) -> tuple[str, str]:
    """The approval's reason and the reason of the PATCH --dry-run=client would send."""
    doc = json.loads(proc_stdout)
    return doc["reason"], doc["request"]["body"]["spec"]["approval"]["reason"]


def test_ticket_reaches_the_policy_and_the_reason(site_package: Aicr, tmp_path: Path) -> None:
    """Before or after the command name, as every flag; the reason recorded names the ticket."""
    with fake_apiserver(tmp_path, cluster()) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        before = site_package("--ticket", "CHG-77", "approve", R, "--reason", "window", "--expires", "1h",
                              "--dry-run=client", "-o", "json", kubeconfig=kc)
        after = site_package("approve", R, "--reason", "CHG-77 window", "--expires", "1h", "--dry-run=client",
                             "--ticket", "CHG-77", "-o", "json", kubeconfig=kc)
        patches = [r for r in server.requests if r.method == "PATCH"]
    compare((before.returncode, before.stderr, written(before.stdout)),
            expected=(0, "", ("window (CHG-77)", "window (CHG-77)")))
    compare((after.returncode, written(after.stdout)), expected=(0, ("CHG-77 window", "CHG-77 window")))
    compare(patches, expected=[])  # --dry-run=client writes nothing


def test_without_a_ticket_the_policy_denies_as_before(site_package: Aicr, tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, cluster()) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = site_package("approve", R, "--reason", "window", "--expires", "1h", kubeconfig=kc)
        methods = [r.method for r in server.requests]
    compare((proc.returncode, error_line(proc)),
            expected=(1, "error: [POLICY_DENIED] 1 policy violation(s); nothing was written"), suffix=proc.stderr)
    assert "change-ticket: the reason must cite a change ticket (CHG-1234): 'window'" in proc.stderr, proc.stderr
    assert "PATCH" not in methods, methods


def test_a_ticket_past_its_bounds_is_a_usage_error(site_package: Aicr, tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, [status(500, "no request was expected")]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        long = site_package("approve", R, "--reason", "w", "--expires", "1h", "--ticket", "C" * 65, kubeconfig=kc)
        bell = site_package("approve", R, "--reason", "w", "--expires", "1h", "--ticket", "CHG-1\a", kubeconfig=kc)
        requests = server.requests
    compare((long.returncode, error_line(long)),
            expected=(2, "error: [USAGE] --ticket is 65 characters; at most 64 are allowed"))
    compare((bell.returncode, error_line(bell)),
            expected=(2, "error: [USAGE] --ticket 'CHG-1\\x07' holds a control character"))
    compare(requests, expected=[])


def test_help_and_plugins_show_the_input(site_package: Aicr) -> None:
    text = site_package("help", "approve").stdout
    assert "--ticket ID" in text and "the change ticket that authorises this approval" in text, text
    assert "--ticket" not in site_package("help", "revoke").stdout  # declared for approve only
    rows = {(p["group"], p["name"]): p for p in json.loads(site_package("plugins", "-o", "json").stdout)["plugins"]}
    row = rows[("aicr.write_inputs", "ticket")]
    compare((row["distribution"], row["origin"], row["status"], row["target"]),
            expected=("aicr-site-example", "environment", "ok", "aicr_site_example.ticket:TICKET"))


def declaring(aicr: Aicr, tmp_path: Path, source: str) -> Aicr:
    """`kubectl aicr` with the site example and a plugin declaring `BAD = <source>` under aicr.write_inputs."""
    plugins = PluginPath(tmp_path / "bad").add(
        "aicr-bad-input", "0.1", {"aicr.write_inputs": {"bad": "aicr_bad_input:BAD"}},
        modules={"aicr_bad_input": f"from aicr_core.plugin import WriteInput\nBAD = {source}\n"})
    return aicr.with_env(PYTHONPATH=f"{plugins.root}:{aicr.extra_env['PYTHONPATH']}")


def test_a_reserved_or_taken_name_is_refused_naming_the_plugin(site_package: Aicr, tmp_path: Path) -> None:
    """A bad declaration stops the writes of its action (a required input must not go missing), nothing else."""
    reserved = declaring(site_package, tmp_path / "r", "WriteInput('reason', help='why')")
    proc = reserved("approve", R, "--reason", "w", "--kubeconfig", str(tmp_path / "none"))
    compare((proc.returncode, error_line(proc)), expected=(1, (
        "error: [PLUGIN_ERROR] aicr.write_inputs 'bad' from aicr-bad-input 0.1: name 'reason' is reserved "
        "(csrf, expires, override, reason are the write's own)")))
    taken = declaring(site_package, tmp_path / "t", "WriteInput('dry-run', help='x')")
    proc = taken("approve", R, "--reason", "w", "--kubeconfig", str(tmp_path / "none"))
    compare((proc.returncode, error_line(proc)), expected=(1, (
        "error: [PLUGIN_ERROR] aicr.write_inputs 'bad' from aicr-bad-input 0.1: --dry-run is a flag approve "
        "already has; a write input needs a name of its own")))
    twice = declaring(site_package, tmp_path / "d", "WriteInput('ticket', help='again')")
    proc = twice("approve", R, "--reason", "w", "--kubeconfig", str(tmp_path / "none"))
    compare((proc.returncode, error_line(proc)), expected=(1, (
        "error: [PLUGIN_ERROR] write input 'ticket' is declared twice: by aicr.write_inputs 'bad' from "
        "aicr-bad-input 0.1 and by aicr.write_inputs 'ticket' from aicr-site-example 1.0.0; uninstall one of them")))
    other = taken("whoami", "--kubeconfig", str(tmp_path / "none"))  # no write: [KUBECONFIG], not the plugin's
    compare((other.returncode, error_line(other).startswith("error: [KUBECONFIG]")), expected=(1, True))
    listed = {p["name"]: p for p in json.loads(reserved("plugins", "-o", "json").stdout)["plugins"]}
    compare((listed["bad"]["status"], listed["bad"]["error"]),
            expected=("failed", "name 'reason' is reserved (csrf, expires, override, reason are the write's own)"))


def test_policy_check_takes_the_ticket_as_approve_does(site_package: Aicr, tmp_path: Path) -> None:
    """The decision explained is the one approve would take: the flag reaches the policy (its facts say so)."""
    with fake_apiserver(tmp_path, cluster()) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = site_package("policy", "check", R, "--reason", "window", "--expires", "1h", "--ticket", "CHG-77",
                            "-o", "json", kubeconfig=kc)
        without = site_package("policy", "check", R, "--reason", "window", "--expires", "1h", "-o", "json",
                               kubeconfig=kc)
        revoking = site_package("policy", "check", R, "--action", "revoke", "--reason", "stop", "--ticket", "CHG-1",
                                kubeconfig=kc)
    ticket = next(p for p in json.loads(proc.stdout)["policies"] if p["name"] == "change-ticket")
    compare((proc.returncode, ticket["verdict"], ticket["messages"], ticket["facts"]),
            expected=(0, "allow", ["--ticket CHG-77"], {"prefix": "CHG", "ticket": "CHG-77"}), suffix=proc.stderr)
    denied = next(p for p in json.loads(without.stdout)["policies"] if p["name"] == "change-ticket")
    compare((without.returncode, denied["verdict"]), expected=(1, "deny"))
    compare((revoking.returncode, error_line(revoking)),
            expected=(2, "error: [USAGE] --ticket is an input of approve, not of revoke"))


def test_the_shell_completes_the_input_on_its_commands(site_package: Aicr) -> None:
    compare(words(complete(site_package, "approve", "r", "--tic")[0]), expected=["--ticket"])
    compare(words(complete(site_package, "revoke", "r", "--tic")[0]), expected=[])  # declared for approve only
