"""kubectl's connection flags mean what they mean to kubectl: proven against kubectl itself.

For each way of choosing a server, credentials and identity, the identity
the API server reports to `kubectl aicr` (the site example's `identity`, a
SelfSubjectReview) must be the one it reports to `kubectl auth whoami` with
the same flags, or both must fail. Then the flags at work where they matter:
impersonated approvals and --request-timeout.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from support.harness import Aicr, aicr_env, error_line
from support.plugin_env import EXAMPLES, PluginPath


@pytest.fixture(scope="module")
def files(plane: envtest.ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Kubeconfigs and PEM files to combine with flags."""
    folder = tmp_path_factory.mktemp("connection")
    full = json.loads(plane.kubeconfig.read_text())
    cluster_only = {**full, "users": [], "contexts": [{"name": "c", "context": {"cluster": "aicr-testbed"}}],
                    "current-context": "c"}
    wrong_ca = json.loads(json.dumps(full))
    ca, _, _ = envtest.make_ca("some other CA")
    wrong_ca["clusters"][0]["cluster"]["certificate-authority-data"] = envtest.b64(ca.cert_pem)
    as_field = json.loads(json.dumps(full))
    for user in as_field["users"]:
        if user["name"] == "admin":
            user["user"].update({"as": "victor", "as-groups": ["aicr:viewers", "extra-group"]})
    paths = {"full": full, "cluster-only": cluster_only, "wrong-ca": wrong_ca, "as-field": as_field}
    out = {name: folder / name for name in paths}
    for name, doc in paths.items():
        out[name].write_text(json.dumps(doc))
    pki = plane.workdir / "pki"
    for name in ("server-ca.crt", "bob.crt", "bob.key"):
        out[name] = pki / name
    out["empty"] = folder / "does-not-exist"
    return out


def cases(plane: envtest.ControlPlane, f: dict[str, Path]) -> dict[str, list[str]]:
    token = plane.exec_token
    return {
        "current context": ["--kubeconfig", str(f["full"])],
        "--context": ["--kubeconfig", str(f["full"]), "--context", "bob"],
        "--user": ["--kubeconfig", str(f["full"]), "--user", "victor"],
        "--user missing": ["--kubeconfig", str(f["full"]), "--user", "nobody"],
        "--context missing": ["--kubeconfig", str(f["full"]), "--context", "nowhere"],
        "--cluster missing": ["--kubeconfig", str(f["full"]), "--cluster", "nowhere"],
        "--token": ["--kubeconfig", str(f["cluster-only"]), "--token", token],
        "--token, bad": ["--kubeconfig", str(f["cluster-only"]), "--token", "not-a-token"],
        "no kubeconfig: --server and files": [
            "--kubeconfig", str(f["cluster-only"]), "--server", plane.url,
            "--certificate-authority", str(f["server-ca.crt"]),
            "--client-certificate", str(f["bob.crt"]), "--client-key", str(f["bob.key"])],
        "wrong CA": ["--kubeconfig", str(f["wrong-ca"])],
        "wrong CA, --insecure-skip-tls-verify": ["--kubeconfig", str(f["wrong-ca"]), "--insecure-skip-tls-verify"],
        "wrong CA, --insecure-skip-tls-verify=false": ["--kubeconfig", str(f["wrong-ca"]),
                                                       "--insecure-skip-tls-verify=false"],
        "wrong CA, --certificate-authority": ["--kubeconfig", str(f["wrong-ca"]),
                                              "--certificate-authority", str(f["server-ca.crt"])],
        "--tls-server-name localhost": ["--kubeconfig", str(f["full"]), "--tls-server-name", "localhost"],
        "--tls-server-name wrong": ["--kubeconfig", str(f["full"]), "--tls-server-name", "wrong.example"],
        "--as": ["--kubeconfig", str(f["full"]), "--context", "admin", "--as", "alice"],
        "--as, groups": ["--kubeconfig", str(f["full"]), "--context", "admin", "--as", "alice",
                         "--as-group", "aicr:approvers", "--as-group", "second group"],
        "--as, uid": ["--kubeconfig", str(f["full"]), "--context", "admin", "--as", "alice", "--as-uid", "1234"],
        "--as, non-ASCII": ["--kubeconfig", str(f["full"]), "--context", "admin", "--as", "Jos\u00e9",
                            "--as-group", "\u674e"],
        "--as-group alone": ["--kubeconfig", str(f["full"]), "--context", "admin", "--as-group", "g"],
        "--as without the right": ["--kubeconfig", str(f["full"]), "--context", "bob", "--as", "alice"],
        "kubeconfig as/as-groups": ["--kubeconfig", str(f["as-field"]), "--context", "admin"],
        "kubeconfig as, overridden": ["--kubeconfig", str(f["as-field"]), "--context", "admin", "--as", "pat"],
    }


def identity(words: list[str], proc: subprocess.CompletedProcess[str], ours: bool) -> object:
    if proc.returncode != 0:
        return "failed"
    doc = json.loads(proc.stdout)
    info = doc if ours else doc["status"]["userInfo"]
    return info["username"], sorted(info.get("groups", []))


def test_the_identity_is_the_one_kubectl_gets(aicr: Aicr, plane: envtest.ControlPlane, files: dict[str, Path],
                                              kubectl: str, tmp_path: Path) -> None:
    site = aicr.with_env(**PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example").env())
    env = aicr_env(aicr.home)
    results = {}
    for name, words in cases(plane, files).items():
        theirs = subprocess.run([kubectl, "auth", "whoami", "-o", "json", *words], capture_output=True, text=True,
                                env=env, timeout=60)
        ours = site("identity", "-o", "json", *words)
        results[name] = (identity(words, theirs, False), identity(words, ours, True))
        if ours.returncode != 0:
            assert error_line(ours).startswith("error: ["), (name, ours.stderr)
            assert "Traceback" not in ours.stderr, ours.stderr
    compare({name: theirs for name, (theirs, _) in results.items()},
            expected={name: ours for name, (_, ours) in results.items()})
    # The matrix means something: some cases succeed with different identities, some fail.
    assert results["--as, groups"][0] == ("alice", ["aicr:approvers", "second group", "system:authenticated"])
    assert results["kubeconfig as/as-groups"][0] == ("victor", ["aicr:viewers", "extra-group",
                                                                "system:authenticated"])
    assert results["wrong CA"][0] == "failed" and results["--token"][0][0] == envtest.EXEC_USER
    assert results["--as, non-ASCII"][0] == ("Jos\u00e9", ["system:authenticated", "\u674e"])


def test_an_admin_approving_as_alice_records_alice(aicr: Aicr, plane: envtest.ControlPlane,
                                                  seed: envtest.Seeder) -> None:
    name = seed.rollout()
    proc = aicr("approve", name, "--reason", "on alice's behalf", "--as", "alice", "--as-group", "aicr:approvers",
                kubeconfig=plane.kubeconfig_for("admin"))
    compare((proc.returncode, proc.stdout.split(" until ")[0]), expected=(0, f"rollout {name} approved by alice"),
            suffix=proc.stderr)
    stored = json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["spec"]["approval"]
    compare(stored["user"], expected="alice")


@pytest.mark.parametrize("user,groups,code", [("nora", [], "FORBIDDEN"),
                                              ("pat", ["--as-group", "aicr:patchers"], "ADMISSION_DENIED")])
def test_impersonating_someone_without_the_right_writes_nothing(aicr: Aicr, plane: envtest.ControlPlane,
                                                               seed: envtest.Seeder, user: str, groups: list[str],
                                                               code: str) -> None:
    """nora may not even read it; pat (as a patcher) may patch it, but the admission policy says no."""
    name = seed.rollout()
    proc = aicr("approve", name, "--reason", "x", "--as", user, *groups, kubeconfig=plane.kubeconfig_for("admin"))
    compare((proc.returncode, error_line(proc).split("]")[0]), expected=(1, f"error: [{code}"), suffix=proc.stderr)
    assert f'"{user}"' in proc.stderr or f"user {user} " in proc.stderr, proc.stderr
    stored = json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["spec"]
    assert "approval" not in stored


def test_the_flags_are_accepted_before_the_name(aicr: Aicr, plane: envtest.ControlPlane,
                                                seed: envtest.Seeder) -> None:
    name = seed.rollout()
    proc = aicr("--context", "admin", "--as", "victor", "--as-group", "aicr:viewers", "describe", name,
                kubeconfig=plane.kubeconfig)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    assert proc.stdout.startswith(f"Rollout:      {name}\n")

