"""TAB completion through the real `kubectl __complete aicr ...`, which runs our `kubectl_complete-aicr`."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from testfixtures import compare

import testbed
from conftest import BIN, Aicr, aicr_env
from plugin_env import EXAMPLES, PluginPath

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}


def complete(aicr: Aicr, *words: str, kubeconfig: Path | None = None, **env: str) -> tuple[list[str], str]:
    """What kubectl offers for `kubectl aicr WORDS<TAB>`: the candidates and the directive line."""
    proc = subprocess.run([aicr.kubectl, "__complete", "aicr", *words], capture_output=True, text=True, timeout=30,
                          env=aicr_env(aicr.home, kubeconfig, **{**aicr.extra_env, **env}), cwd=aicr.cwd)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    lines = proc.stdout.splitlines()
    return lines[:-1], lines[-1]


def words(candidates: list[str]) -> list[str]:
    return [c.split("\t")[0] for c in candidates]


def test_command_names_with_their_summaries(aicr: Aicr) -> None:
    candidates, directive = complete(aicr, "")
    assert {"approve", "describe", "list", "wait", "version", "help"} <= set(words(candidates)), candidates
    compare(directive, expected=":4")
    candidates, _ = complete(aicr, "ap")
    compare(candidates, expected=["approve\tApprove a rollout as yourself, until --expires or its deadline."])
    compare(complete(aicr, "appr", "")[0], expected=[])  # no prefix matching: appr is no command


def test_flags_of_a_command_and_flags_before_it(aicr: Aicr) -> None:
    compare(words(complete(aicr, "list", "--pe")[0]), expected=["--pending"])
    compare(words(complete(aicr, "list", "--p")[0]), expected=["--pending", "--policy-file"])  # own, then common
    compare(words(complete(aicr, "wait", "r", "--ti")[0]), expected=["--timeout"])
    compare(words(complete(aicr, "--cont")[0]), expected=["--context"])
    assert "--dry-run" in words(complete(aicr, "approve", "r", "--d")[0])
    assert "--dry-run" not in words(complete(aicr, "describe", "r", "--d")[0])


def test_flag_values(aicr: Aicr, tmp_path: Path) -> None:
    site = PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example")
    candidates, directive = complete(aicr.with_env(**site.env()), "list", "-o", "")
    compare((words(candidates), directive), expected=(["csv", "json", "name", "text", "wide", "yaml"], ":4"))
    compare(complete(aicr, "list", "--output=y")[0], expected=["--output=yaml"])
    compare(complete(aicr, "list", "-oj")[0], expected=["-ojson"])
    compare(words(complete(aicr, "wait", "r", "--for", "")[0]),
            expected=["approval", "acknowledgement", "approved", "ended", "phase=Pending", "phase=AwaitingApproval",
                      "phase=Progressing", "phase=AwaitingAcknowledgement", "phase=Validating", "phase=Ended"])
    compare(complete(aicr, "wait", "r", "--for=phase=Va")[0], expected=["--for=phase=Validating"])
    compare(complete(aicr, "approve", "r", "--dry-run", "s")[0], expected=["server"])
    compare(complete(aicr, "reproduce", "--dir", ""), expected=([], ":16"))  # directories
    compare(complete(aicr, "list", "--kubeconfig", ""), expected=([], ":0"))  # files


def test_kubeconfig_names(aicr: Aicr, tmp_path: Path) -> None:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "prod",
              "clusters": [{"name": "east", "cluster": {"server": "https://127.0.0.1:1"}},
                           {"name": "west", "cluster": {"server": "https://127.0.0.1:2"}}],
              "users": [{"name": "alice-oidc", "user": {"token": "t"}}],
              "contexts": [{"name": "prod", "context": {"cluster": "east", "user": "alice-oidc"}},
                           {"name": "staging", "context": {"cluster": "west", "user": "alice-oidc"}}]}
    (tmp_path / "kc").write_text(json.dumps(config))
    kc = tmp_path / "kc"
    compare(complete(aicr, "list", "--context", "", kubeconfig=kc)[0], expected=["prod", "staging"])
    compare(complete(aicr, "--cluster", "w", kubeconfig=kc)[0], expected=["west"])
    compare(complete(aicr, "describe", "--user", "", kubeconfig=kc)[0], expected=["alice-oidc"])
    # --kubeconfig typed earlier on the line wins over $KUBECONFIG
    compare(complete(aicr, "--kubeconfig", str(kc), "list", "--context", "st")[0], expected=["staging"])


def test_no_kubeconfig_prints_only_the_directive(aicr: Aicr) -> None:
    compare(complete(aicr, "describe", ""), expected=([], ":4"))
    proc = subprocess.run([str(BIN / "kubectl_complete-aicr"), "approve", ""], capture_output=True, text=True,
                          env=aicr_env(aicr.home), timeout=30)
    compare((proc.returncode, proc.stdout, proc.stderr), expected=(0, ":4\n", ""))


def test_a_server_that_never_answers_is_given_two_seconds(aicr: Aicr, tmp_path: Path, silent_server: int) -> None:
    kc = tmp_path / "kc"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{silent_server}",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "s3cr3t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    started = time.monotonic()
    proc = subprocess.run([str(BIN / "kubectl_complete-aicr"), "describe", ""], capture_output=True, text=True,
                          env=aicr_env(aicr.home, kc), timeout=30)
    elapsed = time.monotonic() - started
    compare((proc.returncode, proc.stdout, proc.stderr), expected=(0, ":4\n", ""))
    assert elapsed < 2.5, elapsed


@pytest.mark.cluster
def test_rollout_names_from_the_cluster(aicr: Aicr, plane: testbed.ControlPlane, seed: testbed.Seeder) -> None:
    busy = seed.rollout(phase="Progressing", approval=APPROVED)
    time.sleep(1.1)  # newer than `busy`, so only "waiting first" can put `waiting` before it
    waiting = seed.rollout()
    time.sleep(1.1)
    newest = seed.rollout(phase="Validating", approval=APPROVED)
    ended = seed.rollout(phase="Ended", outcome="Succeeded", approval=APPROVED)
    mine = (busy, waiting, newest, ended)
    victor = plane.kubeconfig_for("victor")

    candidates, directive = complete(aicr, "approve", "", kubeconfig=victor)
    order = [w for w in words(candidates) if w in mine]
    compare((order[0], directive), expected=(waiting, ":36"))  # waiting for a person first, order kept
    compare(order[-1], expected=ended)
    assert f"{waiting}\tAwaitingApproval: waits for an approval" in candidates
    compare([w for w in words(complete(aicr, "describe", "", kubeconfig=victor)[0]) if w in mine],
            expected=[newest, waiting, busy, ended])  # newest first, ended last
    compare(complete(aicr, "wait", waiting[:-2], kubeconfig=victor)[0],
            expected=[f"{waiting}\tAwaitingApproval: waits for an approval"])
    compare(complete(aicr, "describe", waiting, "", kubeconfig=victor), expected=([], ":4"))  # one ROLLOUT only


@pytest.mark.cluster
def test_plan_digests_and_configmap_names(aicr: Aicr, plane: testbed.ControlPlane, seed: testbed.Seeder) -> None:
    digest = seed.plan()
    candidates, _ = complete(aicr, "reproduce", "", kubeconfig=plane.kubeconfig_for("victor"))
    assert f"{digest}\tplan in ConfigMap aicr-plan-{digest[7:23]}" in candidates, candidates
    assert f"aicr-plan-{digest[7:23]}\tplan ConfigMap" in candidates, candidates
    compare(words(complete(aicr, "reproduce", f"aicr-plan-{digest[7:20]}",
                           kubeconfig=plane.kubeconfig_for("victor"))[0]), expected=[f"aicr-plan-{digest[7:23]}"])
    # A user who may not list ConfigMaps gets nothing, quietly.
    compare(complete(aicr, "reproduce", "", kubeconfig=plane.kubeconfig_for("pat")), expected=([], ":4"))
