"""What the real `kubectl aicr help` and `describe` import: the lazy imports that keep their start-up short.

Each run is the real command through kubectl; a `sitecustomize` module on PYTHONPATH writes the
names in `sys.modules` when the process exits. `help` loads every command module for its
summary, so what those modules import at their top is paid by every start: the Kubernetes
client, the domain (but the Action table, a list of names and words), the fleet's fan-out and
dataclasses stay out. `describe` reads and prints: no policy engine, no policy file schema, no
write. docs/performance.md has the figures these imports cost.
"""
from __future__ import annotations

import json
from pathlib import Path

from testfixtures import compare

from support.fake_apiserver import ByPath, Respond, fake_apiserver
from support.harness import Aicr
from support.samples import REPORT, ROLLOUT

R = ROLLOUT["metadata"]["name"]
PROBE = """import atexit, gc, os, sys

def _write_modules() -> None:
    with open(os.environ["AICR_TEST_MODULES"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
    with open(os.environ["AICR_TEST_MODULES"] + ".gc", "w") as out:
        out.write(f"{gc.isenabled()} {gc.get_freeze_count() > 0}")

atexit.register(_write_modules)
"""
# Third-party packages that `help` may not import: the Kubernetes client (~0.2 s), what it brings,
# h11 (the session's HTTP/1.1 parser), the policy hooks' pluggy and the policy file's pydantic.
CLIENT = ("kubernetes", "urllib3", "h11", "yaml", "pluggy", "pydantic")
# The dashboard's web stack (the extra `dashboard`): only `kubectl aicr dashboard` imports it.
WEB_STACK = ("starlette", "uvicorn", "jinja2", "markupsafe", "anyio", "aicr_dashboard")
# What `describe` needs of the domain: the rollout read, the operator API, the report's check.
POLICIES = ("aicr_core.domain.policy_engine", "aicr_core.domain.policy_file", "aicr_core.domain.hookspecs",
            "aicr_core.domain.write_decision", "aicr_core.domain.rollout_write", "aicr_core.domain.action_rules",
            "aicr_policies", "pluggy")


def imported(aicr: Aicr, tmp_path: Path, *args: str, kubeconfig: Path | None = None) -> tuple[list[str], str]:
    """The modules the real `kubectl aicr ARGS` had imported when it exited (which must be 0), and its output."""
    probe = tmp_path / "probe"
    probe.mkdir(exist_ok=True)
    (probe / "sitecustomize.py").write_text(PROBE)
    out = tmp_path / "modules"
    proc = aicr(*args, kubeconfig=kubeconfig, PYTHONPATH=str(probe), AICR_TEST_MODULES=str(out))
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    names = out.read_text().split()
    assert "aicr_core.framework.app" in names, names  # the probe saw the command's own process
    return names, proc.stdout


def test_help_imports_no_client_no_domain_but_the_action_table(aicr: Aicr, tmp_path: Path) -> None:
    names, _ = imported(aicr, tmp_path, "help")
    compare([n for n in names if n.split(".")[0] in CLIENT or n.startswith("aicr_core.session.kube")
             or n.startswith("aicr_core.domain.") and n != "aicr_core.domain.actions"
             or n in ("aicr_core.fleet.fan_out", "aicr_core.fleet.plan_write", "dataclasses")
             or n.split(".")[0] in WEB_STACK], expected=[])
    assert {"aicr_commands.approve", "aicr_commands.list", "aicr_commands.wait"} <= set(names)  # each summary


def test_the_collector_is_off_only_while_the_application_imports(aicr: Aicr, tmp_path: Path) -> None:
    """launch.py turns the cyclic collector off for the import, then back on for the command (a long `wait`
    or a fleet's waves make garbage), with the imported objects frozen out of its walks."""
    imported(aicr, tmp_path, "help")
    compare((tmp_path / "modules.gc").read_text(), expected="True True")  # on at exit; objects frozen


def test_describe_imports_no_policy_engine(aicr: Aicr, tmp_path: Path) -> None:
    report = {"metadata": {"name": "report"}, "data": {"report.json": REPORT}}
    routes = ByPath((("/api/v1/namespaces/aicr-system/configmaps/", Respond(200, report)),), Respond(200, ROLLOUT))
    with fake_apiserver(tmp_path, [routes]) as server:
        names, output = imported(aicr, tmp_path, "describe", R, "-o", "json",
                                 kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}))
    compare(json.loads(output)["assessment"]["status"], expected="verified")  # the report was read and checked
    compare([n for n in names if n.split(".")[0] in POLICIES or n in POLICIES or n.split(".")[0] in WEB_STACK],
            expected=[])


def test_list_imports_no_web_stack(aicr: Aicr, tmp_path: Path) -> None:
    """`list` shares its selection flags with `dashboard`, and never its web stack."""
    listing = {"kind": "RuntimeRolloutList", "metadata": {}, "items": [ROLLOUT]}
    reports = {"kind": "ConfigMapList", "metadata": {}, "items": []}
    routes = ByPath((("/api/v1/namespaces/aicr-system/configmaps", Respond(200, reports)),), Respond(200, listing))
    with fake_apiserver(tmp_path, [routes]) as server:
        names, output = imported(aicr, tmp_path, "list", "-o", "json",
                                 kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}))
    compare([i["name"] for i in json.loads(output)["items"]], expected=[R])
    compare([n for n in names if n.split(".")[0] in WEB_STACK], expected=[])
