"""TAB completion through the real `kubectl __complete aicr ...`, which runs our `kubectl_complete-aicr`."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from testfixtures import compare

from support.harness import BIN, Aicr, aicr_env, complete, words
from support.plugin_env import EXAMPLES, PluginPath


def test_command_names_with_their_summaries(aicr: Aicr) -> None:
    candidates, directive = complete(aicr, "")
    assert {"approve", "describe", "list", "wait", "version", "help"} <= set(words(candidates)), candidates
    compare(directive, expected=":4")
    candidates, _ = complete(aicr, "ap")
    compare(candidates, expected=["approve\tApprove a rollout as yourself, until --expires or its deadline."])
    compare(complete(aicr, "appr", "")[0], expected=[])  # no prefix matching: appr is no command


def test_flags_of_a_command_and_flags_before_it(aicr: Aicr) -> None:
    compare(words(complete(aicr, "list", "--pe")[0]), expected=["--pending"])
    compare(words(complete(aicr, "list", "--p")[0]),  # own, then common
            expected=["--pending", "--phase", "--parallel", "--profile-namespace", "--profile-selector",
                      "--policy-file"])
    compare(words(complete(aicr, "wait", "r", "--ti")[0]), expected=["--timeout"])
    compare(words(complete(aicr, "--cont")[0]), expected=["--context"])
    assert "--dry-run" in words(complete(aicr, "approve", "r", "--d")[0])
    assert "--dry-run" not in words(complete(aicr, "describe", "r", "--d")[0])


def test_flag_values(aicr: Aicr, tmp_path: Path) -> None:
    site = PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example")
    candidates, directive = complete(aicr.with_env(**site.env()), "list", "-o", "")
    compare((words(candidates), directive), expected=([
        "csv", "custom-columns", "custom-columns-file", "json", "jsonpath", "jsonpath-file", "junit", "name", "text",
        "wide", "yaml"], ":4"))
    compare(complete(aicr, "list", "--output=y")[0], expected=["--output=yaml"])
    compare(complete(aicr, "list", "-oj")[0], expected=["-ojson", "-ojsonpath", "-ojsonpath-file", "-ojunit"])
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
    def timed(*words: str) -> tuple[float, subprocess.CompletedProcess[str]]:
        started = time.monotonic()
        proc = subprocess.run([str(BIN / "kubectl_complete-aicr"), *words], capture_output=True, text=True,
                              env=aicr_env(aicr.home, kc), timeout=30)
        return time.monotonic() - started, proc

    # The program's own start, on this machine now (seconds on a loaded CI machine): the budget is what
    # comes after it, so a completion that asks no server is the baseline.
    baseline, _ = timed("--")
    elapsed, proc = timed("describe", "")
    compare((proc.returncode, proc.stdout, proc.stderr), expected=(0, ":4\n", ""))
    assert elapsed - baseline < 2.5, (elapsed, baseline)



def test_kubeconfig_names_are_read_as_a_command_reads_them(aicr: Aicr, tmp_path: Path) -> None:
    """Completion merges the files of KUBECONFIG as kubectl does (the first file to name a context wins, each
    name once) and reads them through the same bounded reader: a FIFO is no file (it was read until a writer
    came: for ever), an anchor bomb offers nothing, at once."""
    first, second, bomb, fifo = tmp_path / "first", tmp_path / "second", tmp_path / "bomb", tmp_path / "fifo"
    os.mkfifo(fifo)
    first.write_text(json.dumps({"contexts": [{"name": "b", "context": {}}, {"name": "a", "context": {}}]}))
    second.write_text(json.dumps({"contexts": [{"name": "a", "context": {}}, {"name": "c", "context": {}}]}))
    compare(complete(aicr, "list", "--context", "", KUBECONFIG=f"{fifo}:{first}:{tmp_path / 'none'}:{second}")[0],
            expected=["b", "a", "c"])
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb.write_text("\n".join(levels) + "\ncontexts: [{name: boom, context: {x: *a8}}]\n")
    started = time.monotonic()
    compare(complete(aicr, "list", "--context", "", kubeconfig=bomb)[0], expected=[])
    assert time.monotonic() - started < 10
