"""YAML inputs that expand far past their size, and long arguments, through the real `kubectl aicr`
(issue 23, item 2).

An anchor bomb (nine levels of nine aliases, a few hundred bytes) under `soak:` of a waves file took
30 s and 2.5 GB before `[INTERNAL] MemoryError`: its error message formatted the value with repr. Every
YAML input now goes through one loader (aicr_core/session/bounded_yaml.py) that refuses such a document
before anything walks it, and messages quote at most a short escaped prefix of a value or an argument.
Each case is timed, and its peak RSS measured (under a 3 GiB address-space cap, so that a regression
ends in MemoryError rather than taking the machine's memory).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import envtest
import pytest
from testfixtures import compare

from support.fake_apiserver import Respond, fake_apiserver
from support.harness import Aicr, aicr_env, error_line
from support.peak_rss import run_measured
from support.samples import ROLLOUT

PLAN = "sha256:" + "ab" * 32
R = ROLLOUT["metadata"]["name"]
PEAK_MIB = 150  # kubectl-aicr reading a file peaks near 60 MiB
CPU_SECONDS = 5  # start-up and a refusal take about one second of CPU (the bomb took 30 and more)
EXPANDS = "aliases expand too far"


def bomb(indent: str = "  ") -> str:
    """Nine levels of nine aliases: 9**9 strings once expanded (387 million), 600 bytes written."""
    lines = [f'{indent}a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{indent}{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines) + "\n"


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "gpu-1",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{envtest.free_port()}"}}],
        "contexts": [{"name": "gpu-1", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    return path


def measured(kubectl: str, tmp_path: Path, kubeconfig: Path | None, *words: str,
             record_property: Any) -> tuple[int, str]:
    result = run_measured([kubectl, "aicr", *words], aicr_env(tmp_path, kubeconfig), timeout=60)
    record_property("peak_rss_mib", round(result.peak_mib))
    record_property("cpu_seconds", round(result.cpu_seconds, 2))
    assert result.peak_mib < PEAK_MIB, (result.peak_mib, result.stderr[:300])
    assert result.cpu_seconds < CPU_SECONDS, (result.cpu_seconds, result.stderr[:300])
    return result.returncode, result.stderr


@pytest.mark.parametrize("key", ["soak", "maxFailures", "apiVersion", "waves"])
def test_an_anchor_bomb_in_a_waves_file_is_refused_at_once(kubectl: str, tmp_path: Path, kubeconfig: Path,
                                                           key: str, record_property: Any) -> None:
    top = {"apiVersion": "apiVersion: aicr.run/v1alpha1\n", "kind": "kind: Waves\n",
           "waves": "waves: [{name: all, contexts: ['*']}]\n"}
    top[key] = f"{key}:\n{bomb()}"
    waves = tmp_path / "waves.yaml"
    waves.write_text("".join(top.values()))
    code, stderr = measured(kubectl, tmp_path, kubeconfig, "approve", "--plan", PLAN, "--waves", str(waves),
                            "--reason", "x", "--yes", record_property=record_property)
    compare(code, expected=2, suffix=stderr)
    assert stderr.startswith(f"error: [USAGE] --waves {waves}: not YAML: {EXPANDS}"), stderr


def test_an_anchor_bomb_in_a_policy_file_is_refused_at_once(kubectl: str, tmp_path: Path,
                                                            record_property: Any) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\npolicies:\n  four-eyes:\n"
                      "    mode: enforce\n    lol:\n" + bomb("      "))
    code, stderr = measured(kubectl, tmp_path, None, "policy", "validate", str(policy),
                            record_property=record_property)
    compare(code, expected=1, suffix=stderr)
    assert stderr.startswith("error: [POLICY_ERROR] ") and f"(YAML): {EXPANDS}" in stderr, stderr


@pytest.mark.parametrize("where", ["users", "an exec plugin's cluster config"])
def test_an_anchor_bomb_in_a_kubeconfig_is_refused_at_once(kubectl: str, tmp_path: Path, where: str,
                                                           record_property: Any) -> None:
    """Under an unused user, or where it would reach a credentials plugin (KUBERNETES_EXEC_INFO, as JSON)."""
    port = envtest.free_port()
    if where == "users":
        users = f"users:\n- name: u\n  user: {{token: t}}\n- name: other\n  user:\n{bomb('    ')}"
        clusters = f"clusters:\n- name: c\n  cluster: {{server: 'https://127.0.0.1:{port}'}}\n"
    else:
        users = ("users:\n- name: u\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, "
                 "command: /bin/true, provideClusterInfo: true, interactiveMode: Never}\n")
        clusters = (f"clusters:\n- name: c\n  cluster:\n    server: 'https://127.0.0.1:{port}'\n    extensions:\n"
                    "    - name: client.authentication.k8s.io/exec\n      extension:\n" + bomb("        "))
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\ncurrent-context: x\n"
                    "contexts: [{name: x, context: {cluster: c, user: u}}]\n" + clusters + users)
    code, stderr = measured(kubectl, tmp_path, path, "describe", R, record_property=record_property)
    compare(code, expected=1, suffix=stderr)
    assert stderr.startswith(f"error: [KUBECONFIG] cannot read kubeconfig {path}: {EXPANDS}"), stderr


def test_a_kubeconfig_with_a_few_anchors_still_loads(aicr: Aicr, tmp_path: Path) -> None:
    """What people write: one user and one cluster shared by many contexts through anchors."""
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        ca = envtest.b64(server.ca_pem)
        contexts = "".join(f"- name: c{i}\n  context: *shared\n" for i in range(1, 200))
        path = tmp_path / "kubeconfig"
        path.write_text(f"apiVersion: v1\nkind: Config\ncurrent-context: c0\n"
                        f"clusters:\n- name: fake\n  cluster: &cluster {{server: '{server.url}', "
                        f"certificate-authority-data: {ca}}}\n- name: copy\n  cluster: *cluster\n"
                        "users:\n- name: u\n  user: &user {token: t}\n- name: v\n  user: *user\n"
                        "contexts:\n- name: c0\n  context: &shared {cluster: copy, user: v}\n" + contexts)
        proc = aicr("describe", R, "-o", "name", kubeconfig=path)
    compare((proc.returncode, proc.stdout), expected=(0, f"runtimerollout.operator.aicr.run/{R}\n"),
            suffix=proc.stderr)


def test_a_policy_file_with_a_few_anchors_still_loads(aicr: Aicr, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\npolicies:\n"
                      "  change-window:\n    mode: enforce\n    timeZone: UTC\n    windows:\n"
                      "    - &weekday {days: [Mon, Tue, Wed, Thu], from: '09:00', to: '17:00'}\n"
                      "    - {<<: *weekday, days: [Fri], to: '15:00'}\n")
    proc = aicr("policy", "validate", str(policy))
    compare(proc.returncode, expected=0, suffix=proc.stderr)


# -- values and arguments are quoted short ---------------------------------------------------------------

LONG = "x" * 10_000


@pytest.mark.parametrize(("key", "value"), [("soak", f"'{LONG}'"), ("maxFailures", f"'{LONG}'"),
                                            ("apiVersion", f"'{LONG}'"), ("soak", "[" + ", ".join(["1"] * 5000) + "]")])
def test_a_long_value_of_a_waves_file_is_quoted_short(aicr: Aicr, tmp_path: Path, kubeconfig: Path, key: str,
                                                      value: str) -> None:
    top = {"apiVersion": "apiVersion: aicr.run/v1alpha1", "kind": "kind: Waves",
           "waves": "waves: [{name: all, contexts: ['*']}]"}
    top[key] = f"{key}: {value}"
    waves = tmp_path / "waves.yaml"
    waves.write_text("\n".join(top.values()) + "\n")
    proc = aicr("approve", "--plan", PLAN, "--waves", str(waves), "--reason", "x", "--yes", kubeconfig=kubeconfig)
    compare(proc.returncode, expected=2, suffix=proc.stderr[:300])
    assert error_line(proc).startswith(f"error: [USAGE] --waves {waves}: {key}"), proc.stderr[:300]
    assert len(proc.stderr) < 300, proc.stderr[:300]


@pytest.mark.parametrize("words", [
    ["list", "--contexts", LONG],
    ["list", "--contexts", f"gpu-1,,{LONG}"],
    ["list", "--all-contexts", "--parallel", LONG],
    ["list", "-l", LONG + "="],
    ["list", "--phase", LONG],
    ["list", "--sort-by", "{" + LONG],
    ["list", "--request-timeout", LONG],
    ["list", "-o", LONG],
    ["list", "-o", "json=" + LONG],
    ["list", "-o", "jsonpath={.items[" + LONG + "]}"],
    ["list", "-o", "custom-columns=" + LONG],
    ["list", "--kubeconfig", LONG],
    ["list", LONG],
    ["list", "--" + LONG],
    ["describe", LONG],
    ["wait", "r", "--for", LONG],
    ["approve", "r", "--reason", "x", "--expires", LONG],
    ["approve", "--plan", LONG, "--reason", "x", "--all-contexts"],
    ["help", LONG],
    [LONG],
], ids=lambda words: " ".join(w[:20] for w in words))
def test_a_long_argument_is_echoed_short(aicr: Aicr, kubeconfig: Path, words: list[str]) -> None:
    proc = aicr(*words, kubeconfig=kubeconfig)
    assert error_line(proc).startswith("error: [USAGE] ") or error_line(proc).startswith("error: [KUBECONFIG] "), \
        proc.stderr[:300]
    assert len(proc.stderr) < 600, proc.stderr[:600]


def test_a_440_kb_jsonpath_template_is_echoed_short(aicr: Aicr, tmp_path: Path, kubeconfig: Path) -> None:
    template = tmp_path / "template"
    template.write_text("{.items[" + "x" * 440_000)
    proc = aicr("list", "-o", f"jsonpath-file={template}", kubeconfig=kubeconfig)
    compare(error_line(proc), expected="error: [USAGE] error parsing jsonpath '{.items[" + "x" * 192 + "'...: "
                                       "unterminated array", suffix=proc.stderr[:300])
    compare(len(proc.stderr.splitlines()), expected=1, suffix=proc.stderr[:300])


def test_a_template_file_that_never_ends_is_refused(aicr: Aicr, kubeconfig: Path) -> None:
    proc = aicr("list", "-o", "jsonpath-file=/dev/zero", kubeconfig=kubeconfig, timeout=30)
    compare((proc.returncode, proc.stderr), expected=(
        2, "error: [USAGE] error reading jsonpath-file /dev/zero: not a regular file (a character device)\n"))
