"""Broken local inputs of a session through the real `kubectl aicr`: a credentials plugin's answer of the
wrong shape, a kubeconfig proxy-url that is no URL, AICR_REQUEST_LOG that cannot be written, a full disk on
stdout. Each is one error line with a CODE naming what is wrong, never INTERNAL."""
from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from support.fake_apiserver import ByPath, Respond, fake_apiserver
from support.harness import Aicr, aicr_env
from support.samples import ROLLOUT

R = ROLLOUT["metadata"]["name"]
V1 = "client.authentication.k8s.io/v1"


def plugin_answering(tmp_path: Path, output: str) -> tuple[dict[str, Any], Path]:
    answer = tmp_path / "answer.json"
    answer.write_text(output)
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(f"#!/bin/sh\ncat {answer}\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    return {"exec": {"apiVersion": V1, "command": str(plugin), "interactiveMode": "Never"}}, plugin


def credential(status: Any) -> str:
    return json.dumps({"apiVersion": V1, "kind": "ExecCredential", "status": status})


PLUGIN_ANSWERS = {
    "certificate a number": (credential({"clientCertificateData": 1, "clientKeyData": "k"}),
                             "its status.clientCertificateData is a JSON number, not a string"),
    "key a list": (credential({"clientCertificateData": "c", "clientKeyData": ["k"]}),
                   "its status.clientKeyData is a JSON array, not a string"),
    "token an object": (credential({"token": {"t": 1}}), "its status.token is a JSON object, not a string"),
    "expiry a number": (credential({"token": "t", "expirationTimestamp": 5}),
                        "its status.expirationTimestamp is a JSON number, not a string"),
    "expiry no time": (credential({"token": "t", "expirationTimestamp": "soon"}),
                       "its status.expirationTimestamp is not an RFC 3339 time"),
    "nested too deep": ('{"apiVersion": "' + V1 + '", "status": {"token": "t", "x": ' + "[" * 200_000 + "}}",
                        "its output is refused: it nests deeper than 100 levels"),
}


@pytest.mark.parametrize("answer", list(PLUGIN_ANSWERS))
def test_a_credentials_plugin_answer_of_the_wrong_shape(aicr: Aicr, tmp_path: Path, answer: str) -> None:
    output, message = PLUGIN_ANSWERS[answer]
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        user, plugin = plugin_answering(tmp_path, output)
        proc = aicr("describe", R, kubeconfig=server.kubeconfig(tmp_path / "kc", user))
        compare((proc.returncode, proc.stderr), expected=(
            1, f'error: [KUBECONFIG] credentials plugin "{plugin}" failed: {message}\n'))
        compare(server.requests, expected=[])


def test_a_proxy_url_that_is_no_url(aicr: Aicr, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9", "proxy-url": "not a url"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    proc = aicr("describe", R, kubeconfig=kubeconfig)
    compare((proc.returncode, proc.stderr), expected=(
        1, "error: [KUBECONFIG] the kubeconfig's proxy-url 'not a url' is not a URL: Failed to parse: "
           "Host 'not a url' contains invalid character ' '\n"))


@pytest.mark.parametrize("where", ["a missing folder", "a directory"])
def test_a_request_log_that_cannot_be_written(aicr: Aicr, tmp_path: Path, where: str) -> None:
    log = str(tmp_path / "missing" / "requests.log") if where == "a missing folder" else str(tmp_path)
    reason = "No such file or directory" if where == "a missing folder" else "Is a directory"
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT)]) as server:
        proc = aicr("describe", R, kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}),
                    AICR_REQUEST_LOG=log)
    compare((proc.returncode, proc.stderr), expected=(
        2, f"error: [USAGE] AICR_REQUEST_LOG={log!r} cannot be written to: {reason} "
           "(name a file in a folder that exists)\n"))


def test_list_to_a_full_disk_is_one_line(kubectl: str, tmp_path: Path) -> None:
    lists = ByPath((("/api/v1/namespaces/aicr-system/configmaps", Respond(200, {"metadata": {}, "items": []})),),
                   Respond(200, {"metadata": {"resourceVersion": "1"}, "items": [ROLLOUT]}))
    with fake_apiserver(tmp_path, [lists]) as server, open("/dev/full", "w") as full:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = subprocess.run([kubectl, "aicr", "list", "--all"], env=aicr_env(tmp_path, kc), stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    compare((proc.returncode, proc.stderr), expected=(
        1, "error: [WRITE_FAILED] cannot write the output to stdout: No space left on device\n"))
