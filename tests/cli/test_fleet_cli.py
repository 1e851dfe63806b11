"""The fleet flags through the real `kubectl aicr`, against no cluster or stand-in servers.

The [USAGE] rules hold before any call (the request log stays empty); a fleet flag on a
command or form that does not take it is refused, never ignored. Each cluster's deadline is
its own: a trickling server and a hung credentials plugin in two contexts of several end in
TIMEOUT for those two alone, within their deadline, and leave no process behind.
"""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import envtest
import pytest
from testfixtures import compare

from support.fake_apiserver import FakeApiServer, Respond, Silent, Trickle, fake_apiserver
from support.harness import Aicr, complete, error_line, words

PLAN = "sha256:" + "ab" * 32
CONTEXTS = ("gpu-lab-1", "gpu-eu-1", "gpu-eu-2", "cpu-dev")


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    """Four contexts whose servers are all down (closed ports)."""
    clusters = [{"name": c, "cluster": {"server": f"https://127.0.0.1:{envtest.free_port()}"}} for c in CONTEXTS]
    contexts = [{"name": c, "context": {"cluster": c, "user": "u"}} for c in CONTEXTS]
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": clusters, "contexts": contexts,
                                "users": [{"name": "u", "user": {"token": "t"}}], "current-context": CONTEXTS[0]}))
    return path


def waves(tmp_path: Path, text: str = "waves: [{name: all, contexts: ['*']}]") -> str:
    path = tmp_path / "waves.yaml"
    path.write_text(f"apiVersion: aicr.run/v1alpha1\nkind: Waves\n{text}\n")
    return str(path)


USAGE_CASES: list[tuple[list[str], str]] = [
    (["list", "--contexts", "gpu-ap-*"], "--contexts: 'gpu-ap-*' matches no context of the kubeconfig"),
    (["list", "--contexts", "gpu-*,!gpu-ap-*"], "--contexts: 'gpu-ap-*' matches no context of the kubeconfig"),
    (["list", "--contexts", ""], "--contexts needs at least one context name or pattern"),
    (["list", "--contexts", "gpu-lab-1,,cpu-dev"], "--contexts 'gpu-lab-1,,cpu-dev' has an empty entry"),
    (["list", "--all-contexts", "--context", "gpu-lab-1"], "--context cannot be used with --all-contexts"),
    (["list", "--contexts", "gpu-*", "--context", "gpu-lab-1"], "--context cannot be used with --contexts"),
    (["list", "--contexts", "gpu-*", "--all-contexts"], "--contexts and --all-contexts cannot be used together"),
    (["list", "--parallel", "4"], "--parallel needs --contexts, --all-contexts or --cluster-profiles"),
    (["list", "--all-contexts", "--parallel", "0"], "invalid --parallel '0'"),
    (["list", "--all-contexts", "--yes"], "unknown flag: --yes"),
    (["list", "--all-contexts", "--plan", PLAN], "unknown flag: --plan"),
    (["describe", "r", "--all-contexts"], "unknown flag: --all-contexts"),
    (["wait", "r", "--for", "ended", "--contexts", "gpu-*"], "unknown flag: --contexts"),
    (["reproduce", "--all-contexts"], "unknown flag: --all-contexts"),
    (["version", "--client", "--all-contexts"], "--all-contexts cannot be used with version --client"),
    (["version", "--all-contexts", "--waves", "w"], "unknown flag: --waves"),
    (["approve", "r", "--all-contexts", "--reason", "x"], "--all-contexts cannot be used with approve ROLLOUT"),
    (["approve", "r", "--plan", PLAN, "--reason", "x"], "--plan cannot be used with approve ROLLOUT"),
    (["approve", "r", "--yes", "--reason", "x"], "--yes cannot be used with approve ROLLOUT"),
    (["revoke", "r", "--parallel", "2", "--reason", "x"], "--parallel cannot be used with revoke ROLLOUT"),
    (["approve", "--plan", PLAN, "--reason", "x"],
     "--plan needs --contexts, --all-contexts, --cluster-profiles or --waves"),
    (["acknowledge", "--plan", PLAN], "--plan needs --contexts, --all-contexts or --cluster-profiles"),
    (["approve", "--all-contexts", "--reason", "x"], "--all-contexts needs --plan DIGEST in place of ROLLOUT"),
    (["approve"], "the following arguments are required: ROLLOUT"),
    (["approve", "--all-contexts", "--plan", "sha256:abc", "--reason", "x"], "invalid --plan 'sha256:abc'"),
    (["approve", "--all-contexts", "--plan", "3f9a1c0d2b7e4a51", "--reason", "x"], "invalid --plan"),
    (["approve", "--all-contexts", "--plan", PLAN], "approve needs --reason"),
    (["approve", "--all-contexts", "--plan", PLAN, "--reason", "x", "--expires", "-1h"],
     "--expires must not be negative"),
    (["approve", "--all-contexts", "--plan", PLAN, "--reason", "x", "--policy-file", "p.yaml"],
     "--policy-file only tries a policy file"),
    (["approve", "--all-contexts", "--plan", PLAN, "--reason", "x"], "pass --yes to confirm"),
    (["approve", "--all-contexts", "--plan", PLAN, "--reason", "x", "--yes", "--server", "https://x"],
     "--server cannot be used with --all-contexts: each cluster's own kubeconfig entry decides it"),
    (["list", "--contexts", "gpu-*", "--token", "t"], "--token cannot be used with --contexts"),
    (["list", "--contexts", "gpu-*", "--user", "u"], "--user cannot be used with --contexts"),
    (["list", "--contexts", "gpu-*", "--cluster", "c"], "--cluster cannot be used with --contexts"),
    (["list", "--contexts", "gpu-*", "--insecure-skip-tls-verify"], "--insecure-skip-tls-verify cannot be used"),
    (["list", "--contexts", "gpu-*", "--certificate-authority", "ca"], "--certificate-authority cannot be used"),
    (["list", "--contexts", "gpu-*", "--client-certificate", "c"], "--client-certificate cannot be used"),
    (["list", "--contexts", "gpu-*", "--client-key", "k"], "--client-key cannot be used"),
    (["list", "--contexts", "gpu-*", "--tls-server-name", "n"], "--tls-server-name cannot be used"),
    (["policy", "validate", "f.yaml", "--all-contexts"], "--all-contexts cannot be used with policy validate"),
    (["policy", "check", "r", "--all-contexts"], "--all-contexts cannot be used with policy check ROLLOUT"),
    (["policy", "check", "--all-contexts", "--plan", PLAN, "--yes"], "unknown flag: --yes"),
    (["revoke", "--all-contexts", "--plan", PLAN, "--reason", "x", "--waves", "w"], "unknown flag: --waves"),
]


@pytest.mark.parametrize(("args", "message"), USAGE_CASES, ids=[" ".join(a)[:60] for a, _ in USAGE_CASES])
def test_usage_rules_hold_before_any_call(aicr: Aicr, kubeconfig: Path, tmp_path: Path, args: list[str],
                                          message: str) -> None:
    log = tmp_path / "requests.log"
    proc = aicr(*args, kubeconfig=kubeconfig, AICR_REQUEST_LOG=str(log))
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    line = error_line(proc)
    assert line.startswith("error: [USAGE] ") and message in line, (line, proc.stderr)
    compare(proc.stdout, expected="")
    assert not log.exists(), log.read_text()


WAVES_CASES = [
    ("waves: [{name: a, contexts: ['gpu-ap-*']}]", "wave 'a': 'gpu-ap-*' matches no context"),
    ("waves: [{name: a, contexts: ['*']}, {name: b, contexts: ['gpu-*']}]",
     "wave 'b' selects only contexts claimed by earlier waves"),
    ("waves: [{name: a, contexts: ['*']}]\nsoak: 2d", "soak: "),
    ("waves: [{name: a, contexts: ['*']}]\nstrategy: fast", "unknown key strategy"),
    ("waves: []", "at least one wave"),
]


@pytest.mark.parametrize(("text", "message"), WAVES_CASES)
def test_a_malformed_waves_file_is_usage_before_any_call(aicr: Aicr, kubeconfig: Path, tmp_path: Path, text: str,
                                                         message: str) -> None:
    log = tmp_path / "requests.log"
    proc = aicr("approve", "--plan", PLAN, "--waves", waves(tmp_path, text), "--reason", "x", "--yes",
                kubeconfig=kubeconfig, AICR_REQUEST_LOG=str(log))
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    assert error_line(proc).startswith("error: [USAGE] --waves") and message in error_line(proc), proc.stderr
    assert not log.exists()


# -- --cluster-profiles: what is refused before any call (the hub read included) -------------------------

GOOD_PROVIDERS = {"providers": [{"name": "token", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1",
                                                                 "command": "token-plugin"}}]}
PROFILES = ["--cluster-profiles", "--cluster-profile-providers", "p.json"]
PROFILE_USAGE_CASES: list[tuple[list[str], str]] = [
    (["list", "--cluster-profiles"], "--cluster-profiles needs --cluster-profile-providers FILE"),
    (["list", "--profile-namespace", "gpu-fleet"], "--profile-namespace needs --cluster-profiles"),
    (["version", "--profile-selector", "region=eu"], "--profile-selector needs --cluster-profiles"),
    (["list", "--contexts", "gpu-*", "--cluster-profile-providers", "p.json"],
     "--cluster-profile-providers needs --cluster-profiles"),
    (["list", *PROFILES, "--all-contexts"], "--all-contexts cannot be used with --cluster-profiles"),
    (["list", *PROFILES, "--contexts", ""], "--contexts needs at least one context name or pattern"),
    (["list", *PROFILES, "--profile-selector", "region in (eu"], "--profile-selector 'region in (eu': "),
    (["list", *PROFILES, "--profile-namespace", "GPU_Fleet"], "--profile-namespace 'GPU_Fleet': a namespace name"),
    (["list", *PROFILES, "--server", "https://x"],
     "--server cannot be used with --cluster-profiles: each member's ClusterProfile and provider decide it"),
    (["version", *PROFILES, "--token", "t"], "--token cannot be used with --cluster-profiles"),
    (["list", *PROFILES, "--user", "u"], "--user cannot be used with --cluster-profiles"),
    (["approve", "r", *PROFILES, "--reason", "x"], "--cluster-profiles cannot be used with approve ROLLOUT"),
    (["revoke", "r", "--profile-namespace", "ns", "--reason", "x"], "--profile-namespace cannot be used with revoke"),
    (["approve", "--plan", PLAN, *PROFILES, "--reason", "x"], "pass --yes to confirm"),
    (["approve", "--plan", PLAN, *PROFILES, "--contexts", "a/*", "--waves", "w.yaml", "--reason", "x", "--yes"],
     "--contexts cannot be used with --waves"),
    (["version", "--client", *PROFILES], "--cluster-profiles cannot be used with version --client"),
    (["policy", "validate", "f.yaml", "--cluster-profiles"], "--cluster-profiles cannot be used with policy validate"),
    (["describe", "r", "--cluster-profiles"], "unknown flag: --cluster-profiles"),
    (["wait", "r", "--for", "ended", "--profile-selector", "a=b"], "unknown flag: --profile-selector"),
    (["list", "--cluster-profiles", "--cluster-profile-providers", "missing.json"],
     "--cluster-profile-providers missing.json: cannot read it"),
]


@pytest.mark.parametrize(("args", "message"), PROFILE_USAGE_CASES,
                         ids=[" ".join(a)[:60] for a, _ in PROFILE_USAGE_CASES])
def test_cluster_profile_usage_rules_hold_before_any_call(aicr: Aicr, kubeconfig: Path, tmp_path: Path,
                                                          args: list[str], message: str) -> None:
    (tmp_path / "p.json").write_text(json.dumps(GOOD_PROVIDERS))
    (tmp_path / "w.yaml").write_text("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: a, contexts: ['*']}]")
    log = tmp_path / "requests.log"
    proc = aicr(*args, kubeconfig=kubeconfig, AICR_REQUEST_LOG=str(log))
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    line = error_line(proc)
    assert line.startswith("error: [USAGE] ") and message in line, (line, proc.stderr)
    compare(proc.stdout, expected="")
    assert not log.exists(), log.read_text()


PROVIDER_FILES = [
    ("not json", "--cluster-profile-providers p.json: not JSON"),
    ('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "c"}},'
     ' {"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "d"}}]}',
     "provider 'a': two providers have that name"),
    ('{"providers": [{"execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "c"}}]}',
     "providers[0].name: every provider needs a name"),
    ('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1"}}]}',
     "provider 'a': execConfig.command"),
    ('{"providers": [{"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": ""}}]}',
     "provider 'a': execConfig.command"),
]


@pytest.mark.parametrize(("text", "message"), PROVIDER_FILES)
def test_a_bad_provider_file_is_usage_naming_it_before_any_call(aicr: Aicr, kubeconfig: Path, tmp_path: Path,
                                                                text: str, message: str) -> None:
    (tmp_path / "p.json").write_text(text)
    log = tmp_path / "requests.log"
    for args in (["list", *PROFILES], ["approve", "--plan", PLAN, *PROFILES, "--reason", "x", "--yes"]):
        proc = aicr(*args, kubeconfig=kubeconfig, AICR_REQUEST_LOG=str(log))
        compare(proc.returncode, expected=2, suffix=proc.stderr)
        assert error_line(proc).startswith("error: [USAGE] ") and message in error_line(proc), proc.stderr
        assert not log.exists(), log.read_text()


def test_a_waves_selector_needs_cluster_profiles_and_must_parse(aicr: Aicr, kubeconfig: Path, tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps(GOOD_PROVIDERS))
    log = tmp_path / "requests.log"
    selector = waves(tmp_path, "waves: [{name: canary, selector: {matchLabels: {aicr.run/wave: canary}}}]")
    proc = aicr("approve", "--plan", PLAN, "--waves", selector, "--reason", "x", "--yes", kubeconfig=kubeconfig,
                AICR_REQUEST_LOG=str(log))
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    compare(error_line(proc), expected=f"error: [USAGE] --waves {selector}: wave 'canary': selector needs "
                                       "--cluster-profiles (it chooses ClusterProfiles by their labels)")
    broken = waves(tmp_path, "waves: [{name: eu, selector: {matchExpressions: [{key: region, operator: Near}]}}]")
    proc = aicr("approve", "--plan", PLAN, "--waves", broken, *PROFILES, "--reason", "x", "--yes",
                kubeconfig=kubeconfig, AICR_REQUEST_LOG=str(log))
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    assert error_line(proc).startswith(f"error: [USAGE] --waves {broken}: wave 'eu': selector: "
                                       "matchExpressions[0].operator must be"), proc.stderr
    assert not log.exists(), log.read_text()


def test_with_cluster_profiles_context_names_the_hub_which_is_read_first(aicr: Aicr, kubeconfig: Path,
                                                                         tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps(GOOD_PROVIDERS))
    log = tmp_path / "requests.log"
    proc = aicr("list", *PROFILES, "--context", "gpu-eu-1", kubeconfig=kubeconfig, AICR_REQUEST_LOG=str(log))
    compare((proc.returncode, proc.stdout), expected=(1, ""), suffix=proc.stderr)
    assert error_line(proc).startswith("error: [UNAVAILABLE] the hub (context gpu-eu-1): cannot list its "
                                       "ClusterProfiles: cannot connect to the API server"), proc.stderr
    compare(log.read_text().splitlines(),
            expected=["GET /apis/multicluster.x-k8s.io/v1alpha1/clusterprofiles?limit=500"])


def test_waves_choose_the_clusters_themselves(aicr: Aicr, kubeconfig: Path, tmp_path: Path) -> None:
    for selection in (["--all-contexts"], ["--contexts", "gpu-*"]):
        proc = aicr("approve", "--plan", PLAN, "--waves", waves(tmp_path), *selection, "--reason", "x", "--yes",
                    kubeconfig=kubeconfig)
        compare(proc.returncode, expected=2)
        assert "cannot be used with --waves: the waves choose the clusters" in error_line(proc), proc.stderr


def test_every_failing_cluster_is_one_error_line_in_kubeconfig_order(aicr: Aicr, kubeconfig: Path) -> None:
    proc = aicr("list", "--contexts", "cpu-dev,gpu-*,!gpu-eu-2", "-o", "json", kubeconfig=kubeconfig)
    compare(proc.returncode, expected=1)
    document = json.loads(proc.stdout)
    compare([(e["context"], e["code"]) for e in document["errors"]],
            expected=[("gpu-lab-1", "UNAVAILABLE"), ("gpu-eu-1", "UNAVAILABLE"), ("cpu-dev", "UNAVAILABLE")])
    compare(document["items"], expected=[])
    lines = proc.stderr.splitlines()
    compare([line.split(":")[0:2] for line in lines],
            expected=[["error", " [UNAVAILABLE] context gpu-lab-1"], ["error", " [UNAVAILABLE] context gpu-eu-1"],
                      ["error", " [UNAVAILABLE] context cpu-dev"]])


# -- a deadline per cluster ------------------------------------------------------------------------------

VERSION = {"gitVersion": "v1.37.2"}
DISCOVERY = {"kind": "APIResourceList", "groupVersion": "operator.aicr.run/v1alpha1",
             "resources": [{"name": "runtimerollouts", "kind": "RuntimeRollout"}]}


def fleet_kubeconfig(path: Path, entries: dict[str, tuple[FakeApiServer, dict[str, Any]]]) -> Path:
    clusters, users, contexts = [], [], []
    for name, (server, user) in entries.items():
        clusters.append({"name": name, "cluster": {"server": server.url,
                                                   "certificate-authority-data": envtest.b64(server.ca_pem)}})
        users.append({"name": name, "user": user})
        contexts.append({"name": name, "context": {"cluster": name, "user": name}})
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users,
                                "contexts": contexts, "current-context": next(iter(entries))}))
    return path


def test_a_hung_cluster_times_out_alone_within_its_deadline(aicr: Aicr, tmp_path: Path) -> None:
    marker = f"sleep {os.getpid() % 1000 + 986000}"
    plugin, started_file = tmp_path / "hang.sh", tmp_path / "plugin-started"
    plugin.write_text(f"#!/bin/sh\ndate +%s.%N > {started_file}\n{marker}\n")  # a child that would outlive sh
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    hung_exec = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                          "interactiveMode": "Never"}}
    dirs = [tmp_path / d for d in ("a", "b", "c", "d")]
    for d in dirs:
        d.mkdir()
    with fake_apiserver(dirs[0], [Respond(200, VERSION), Respond(200, DISCOVERY)]) as good, \
            fake_apiserver(dirs[1], [Trickle(interval=0.5)]) as trickling, \
            fake_apiserver(dirs[2], [Respond(200, VERSION)]) as behind_plugin, \
            fake_apiserver(dirs[3], [Respond(200, VERSION), Respond(200, DISCOVERY)]) as also_good:
        kc = fleet_kubeconfig(tmp_path / "kc", {"good": (good, {"token": "t"}),
                                                "trickling": (trickling, {"token": "t"}),
                                                "hung-plugin": (behind_plugin, hung_exec),
                                                "also-good": (also_good, {"token": "t"})})
        proc = aicr("version", "--all-contexts", "--request-timeout", "2s", kubeconfig=kc)
        ended = time.monotonic()
        ended_wall = time.time()
        compare(proc.returncode, expected=1, suffix=proc.stderr)
        compare([line for line in proc.stdout.splitlines() if line.startswith("==")],
                expected=["== good ==", "== also-good =="])
        assert proc.stdout.count("Server Version: v1.37.2") == 2, proc.stdout
        compare(sorted(line for line in proc.stderr.splitlines() if line.startswith("error: ")), expected=[
            "error: [TIMEOUT] context hung-plugin: the credentials plugin \"" + str(plugin)
            + "\" did not finish within 2s",
            "error: [TIMEOUT] context trickling: the API calls of this command did not finish within 2s"])
        # Each deadline began with its cluster's turn, before its connection or its plugin.
        assert ended - trickling.accepted[0] < 2.5, ended - trickling.accepted[0]
        assert ended_wall - float(started_file.read_text()) < 2.5, ended_wall - float(started_file.read_text())
        compare(behind_plugin.requests, expected=[])
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    compare(left, expected="", suffix="the plugin's children were left running")


# -- completion and clean-up ------------------------------------------------------------------------------

def test_contexts_complete_context_names_entry_by_entry(aicr: Aicr, kubeconfig: Path) -> None:
    candidates, directive = complete(aicr, "list", "--contexts", "gpu-", kubeconfig=kubeconfig)
    compare((words(candidates), directive), expected=(["gpu-lab-1", "gpu-eu-1", "gpu-eu-2"], ":6"))  # no space
    candidates, _ = complete(aicr, "approve", "--contexts", "gpu-lab-1,!gpu-e", kubeconfig=kubeconfig)
    compare(words(candidates), expected=["gpu-lab-1,!gpu-eu-1", "gpu-lab-1,!gpu-eu-2"])
    candidates, _ = complete(aicr, "list", "--contexts=cpu-dev,", kubeconfig=kubeconfig)
    compare(words(candidates), expected=[f"--contexts=cpu-dev,{c}" for c in CONTEXTS[:3]])


def test_sigterm_leaves_no_credential_file_of_any_cluster(kubectl: str, tmp_path: Path) -> None:
    """Each cluster's key data goes to private temporary files; a terminated fleet command removes them all."""
    from support.harness import aicr_env

    dirs = [tmp_path / d for d in ("a", "b")]
    for d in dirs:
        d.mkdir()
    with fake_apiserver(dirs[0], [Silent()]) as one, fake_apiserver(dirs[1], [Silent()]) as two:
        entries = {}
        for name, server in (("one", one), ("two", two)):
            pair = server.client_certificate(f"mallory-{name}")
            entries[name] = (server, {"client-certificate-data": envtest.b64(pair.cert_pem),
                                      "client-key-data": envtest.b64(pair.key_pem)})
        kc = fleet_kubeconfig(tmp_path / "kc", entries)
        tmp = tmp_path / "tmp"
        tmp.mkdir()
        proc = subprocess.Popen([kubectl, "aicr", "version", "--all-contexts"], env=aicr_env(tmp_path, kc,
                                TMPDIR=str(tmp)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not (one.accepted and two.accepted) and time.monotonic() < deadline:
            time.sleep(0.05)
        written = [p for p in tmp.rglob("*") if p.is_file()]  # in the process's private folder under TMPDIR
        assert one.accepted and two.accepted and len(written) >= 4, written
        proc.send_signal(signal.SIGTERM)  # kubectl execs the plugin: this is its process
        _, stderr = proc.communicate(timeout=20)
    compare((sorted(p.name for p in tmp.rglob("*")), "Traceback" in stderr), expected=([], False))


def test_list_ends_at_a_trickling_clusters_deadline(aicr: Aicr, tmp_path: Path) -> None:
    """list reads each cluster's reports on a thread of its own: a cluster left behind holds up no exit."""
    dirs = [tmp_path / d for d in ("a", "b")]
    for d in dirs:
        d.mkdir()
    empty = {"kind": "List", "metadata": {"resourceVersion": "1"}, "items": []}
    with fake_apiserver(dirs[0], [Respond(200, empty)]) as good, \
            fake_apiserver(dirs[1], [Trickle(interval=0.5)]) as trickling:
        kc = fleet_kubeconfig(tmp_path / "kc", {"good": (good, {"token": "t"}),
                                                "trickling": (trickling, {"token": "t"})})
        proc = aicr("list", "--all-contexts", "--request-timeout", "2s", "-o", "json", kubeconfig=kc)
        ended = time.monotonic()
        compare(proc.returncode, expected=1, suffix=proc.stderr)
        compare(json.loads(proc.stdout)["errors"], expected=[{
            "context": "trickling", "code": "TIMEOUT",
            "message": "the API calls of this command did not finish within 2s"}])
        assert ended - trickling.accepted[0] < 2.5, ended - trickling.accepted[0]


def test_impersonation_and_the_request_timeout_apply_to_every_cluster(aicr: Aicr, tmp_path: Path) -> None:
    dirs = [tmp_path / d for d in ("a", "b")]
    for d in dirs:
        d.mkdir()
    script = [Respond(200, VERSION), Respond(200, DISCOVERY)]
    with fake_apiserver(dirs[0], script) as one, fake_apiserver(dirs[1], script) as two:
        kc = fleet_kubeconfig(tmp_path / "kc", {"one": (one, {"token": "t1"}), "two": (two, {"token": "t2"})})
        proc = aicr("version", "--all-contexts", "--as", "bob", "--as-group", "aicr:approvers", "--as-group", "x",
                    "--request-timeout", "7s", kubeconfig=kc)
        compare(proc.returncode, expected=0, suffix=proc.stderr)
        for server, token in ((one, "t1"), (two, "t2")):
            compare(len(server.requests), expected=2)
            for request in server.requests:
                headers = [(n.lower(), v) for n, v in request.headers]
                assert ("impersonate-user", "bob") in headers, headers
                compare([v for n, v in headers if n == "impersonate-group"], expected=["aicr:approvers", "x"])
                assert ("authorization", f"Bearer {token}") in headers  # each cluster's own credentials


@pytest.mark.parametrize("case", ["as-uid", "request-log-folder"])
def test_a_bad_flag_or_setting_is_the_commands_usage_error_not_each_clusters(aicr: Aicr, kubeconfig: Path,
                                                                             tmp_path: Path, case: str) -> None:
    """A USAGE a cluster's turn finds is the command's: one `error: [USAGE]` line, exit 2, no context named."""
    args = ["list", "--contexts", "gpu-lab-1,cpu-dev"]
    env: dict[str, str] = {}
    if case == "as-uid":
        args += ["--as-uid", "x"]
        message = "requesting uid, groups or user-extra without impersonating a user"
    else:
        env["AICR_REQUEST_LOG"] = str(tmp_path)
        message = "cannot be written to"
    proc = aicr(*args, kubeconfig=kubeconfig, **env)
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    compare(len(lines), expected=1, suffix=proc.stderr)
    assert lines[0].startswith("error: [USAGE] ") and message in lines[0] and "context " not in lines[0], lines
    compare(proc.stdout, expected="")


@pytest.mark.parametrize("ending", ["exit", "SIGTERM", "SIGINT"])
def test_no_credential_file_is_left_behind_by_a_cluster_whose_plugin_hangs(kubectl: str, tmp_path: Path,
                                                                          ending: str) -> None:
    """A cluster cut short by its deadline (its plugin hung) leaves no key file of any cluster in TMPDIR."""
    from support.harness import aicr_env

    marker = f"sleep {os.getpid() % 1000 + 987000}"
    plugin = tmp_path / "hang.sh"
    plugin.write_text(f"#!/bin/sh\n{marker}\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    dirs = [tmp_path / d for d in ("a", "b", "c")]
    for d in dirs:
        d.mkdir()
    with fake_apiserver(dirs[0], [Silent()]) as one, fake_apiserver(dirs[1], [Silent()]) as two, \
            fake_apiserver(dirs[2], [Silent()]) as behind_plugin:
        entries: dict[str, tuple[FakeApiServer, dict[str, Any]]] = {}
        for name, server in (("one", one), ("two", two)):
            pair = server.client_certificate(f"mallory-{name}")
            entries[name] = (server, {"client-certificate-data": envtest.b64(pair.cert_pem),
                                      "client-key-data": envtest.b64(pair.key_pem)})
        entries["hung"] = (behind_plugin, {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                    "command": str(plugin), "interactiveMode": "Never"}})
        kc = fleet_kubeconfig(tmp_path / "kc", entries)
        tmp = tmp_path / "tmp"
        tmp.mkdir()
        # One at a time: at a signal, clusters are still waiting for their turn, which must not begin then.
        proc = subprocess.Popen([kubectl, "aicr", "version", "--all-contexts", "--request-timeout", "2s",
                                 "--parallel", "1"],
                                env=aicr_env(tmp_path, kc, TMPDIR=str(tmp)), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        if ending != "exit":
            deadline = time.monotonic() + 20
            while not one.accepted and time.monotonic() < deadline:
                time.sleep(0.05)
            assert one.accepted, proc.stderr
            proc.send_signal(signal.SIGTERM if ending == "SIGTERM" else signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    time.sleep(0.5)  # a worker left behind would write after the exit's clean-up
    compare((sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*")), "Traceback" in stderr),
            expected=([], False), suffix=stderr)
    compare(subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout, expected="")


def test_a_list_where_every_cluster_failed_prints_nothing_on_stdout(aicr: Aicr, kubeconfig: Path) -> None:
    proc = aicr("list", "--contexts", "gpu-*", kubeconfig=kubeconfig)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    compare(proc.stdout, expected="")
    compare(len([line for line in proc.stderr.splitlines() if line.startswith("error: [UNAVAILABLE] context ")]),
            expected=3, suffix=proc.stderr)


def test_a_dry_run_of_waves_lists_an_unreachable_cluster_of_a_later_wave_in_errors(aicr: Aicr, kubeconfig: Path,
                                                                                   tmp_path: Path) -> None:
    text = "waves: [{name: canary, contexts: [gpu-lab-1]}, {name: rest, contexts: ['*']}]"
    proc = aicr("approve", "--plan", PLAN, "--waves", waves(tmp_path, text), "--reason", "x", "--dry-run=client",
                "-o", "json", kubeconfig=kubeconfig)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    document = json.loads(proc.stdout)
    compare([(i["context"], i["wave"], i["result"], i["code"]) for i in document["items"]],
            expected=[(c, "canary" if c == "gpu-lab-1" else "rest", "failed", "UNAVAILABLE") for c in CONTEXTS])
    compare([(e["context"], e["code"]) for e in document["errors"]], expected=[(c, "UNAVAILABLE") for c in CONTEXTS])
    assert all(not e["message"].startswith("[") for e in document["errors"]), document["errors"]
    compare(len([line for line in proc.stderr.splitlines() if line.startswith("error: [UNAVAILABLE] context ")]),
            expected=4, suffix=proc.stderr)
