"""examples/k9s/aicr.yaml: valid for k9s v0.51.0, and each command line it defines works on the real plane.

The rules are k9s v0.51.0's own, copied here (a fresh clone has no k9s source):
its plugins schema (internal/config/json/schemas/plugins.json), Plugin.Validate
(internal/config/plugin.go), the key names asKey accepts (internal/ui/key.go),
the keys a resource view binds itself (internal/view/browser.go, table.go), and
the variables a plugin's args may use (defaultEnv and k8sEnv in
internal/view/helpers.go, INPUT_<NAME> in executePlugin, internal/view/actions.go),
substituted as Env.Substitute does (internal/view/env.go). Plugin inputs exist
from v0.51.0 on: the file needs that version.
"""
from __future__ import annotations

import re
import string
import subprocess
from pathlib import Path
from typing import Any

import envtest
import yaml
from testfixtures import compare

from support.harness import Aicr, aicr_env

PLUGIN_FILE = Path(__file__).resolve().parents[2] / "examples" / "k9s" / "aicr.yaml"
K9S_VERSION = "v0.51.0"

# plugins.json: the properties of one plugin and their JSON types; these four are required.
PROPERTIES = {"shortCut": str, "override": bool, "description": str, "confirm": bool, "dangerous": bool,
              "scopes": list, "command": str, "background": bool, "overwriteOutput": bool, "args": list,
              "inputs": list}
REQUIRED = {"shortCut", "description", "scopes", "command"}
INPUT_PROPERTIES = {"name": str, "label": str, "type": str, "required": bool, "default": (str, int, float, bool),
                    "options": list}
INPUT_TYPES = {"string", "number", "bool", "dropdown"}
MAX_INPUTS = 5
# ui/key.go's names (tcell's own, Ctrl-A and so on, are accepted too; this file uses none of them).
KEY_NAMES = ({*string.ascii_lowercase, *string.digits, "?", "/", "space"}
             | {f"Shift-{c}" for c in string.ascii_uppercase} | {f"Shift-{d}" for d in string.digits})
# What browser.go and table.go bind in every resource view: a plugin there needs override: true.
VIEW_KEYS = {"c", "d", "e", "n", "q", "w", "y", "0", "?", "/", "space", "Shift-A", "Shift-N", "Shift-O", "Shift-S"}
# env.go: $XXX, $!XXX, ${XXX}, ${!XXX}.
ENV_RX = re.compile(r"(\$(!?)([\w\-]+))|(\$\{(!?)([\w\-%/: ]+)})")
# A RuntimeRollout's columns in k9s: NAME, then the CRD's additionalPrinterColumns, upper case.
COLUMNS = ("NAME", "PHASE", "OUTCOME", "APPROVED-BY", "DEADLINE", "AGE")
K8S_ENV = ("CONTEXT", "CLUSTER", "USER", "GROUPS", "KUBECONFIG", "NAMESPACE", "NAME")


def plugins() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load(PLUGIN_FILE.read_text(encoding="utf-8"))
    compare(set(doc), expected={"plugins"})  # additionalProperties: false
    return dict(doc["plugins"])


def problems(name: str, plugin: dict[str, Any]) -> list[str]:
    found = [f"{name}: unknown key {key}" for key in plugin if key not in PROPERTIES]
    found += [f"{name}: missing {key}" for key in REQUIRED - set(plugin)]
    found += [f"{name}: {key} is not {kind.__name__}" for key, kind in PROPERTIES.items()
              if key in plugin and not isinstance(plugin[key], kind) or (kind is not bool and key in plugin
                                                                          and isinstance(plugin[key], bool))]
    found += [f"{name}: a scope is not a string" for s in plugin.get("scopes", []) if not isinstance(s, str)]
    found += [f"{name}: an arg is not a string or number" for a in plugin.get("args", [])
              if isinstance(a, bool) or not isinstance(a, (str, int, float))]
    inputs = plugin.get("inputs", [])
    if len(inputs) > MAX_INPUTS:
        found.append(f"{name}: more than {MAX_INPUTS} inputs")
    names = [i.get("name") for i in inputs]
    found += [f"{name}: duplicate input name {n}" for n in set(names) if names.count(n) > 1]
    for i in inputs:
        found += [f"{name}: input key {k}" for k in i if k not in INPUT_PROPERTIES]
        found += [f"{name}: input lacks {k}" for k in ("name", "type") if k not in i]
        found += [f"{name}: input {k} is not {t}" for k, t in INPUT_PROPERTIES.items()
                  if k in i and not isinstance(i[k], t)]  # type: ignore[arg-type]
        if i.get("type") not in INPUT_TYPES:
            found.append(f"{name}: input type {i.get('type')}")
        if "default" in i and i.get("required") is not True:
            found.append(f"{name}: an input with a default must be required: true")
    if plugin.get("shortCut") not in KEY_NAMES:
        found.append(f"{name}: invalid key specified: {plugin.get('shortCut')!r}")
    elif plugin["shortCut"] in VIEW_KEYS and not plugin.get("override"):
        found.append(f"{name}: {plugin['shortCut']} is bound by k9s in a resource view")
    return found


def known_variables(plugin: dict[str, Any]) -> set[str]:
    inputs = {"INPUT_" + str(i["name"]).upper() for i in plugin.get("inputs", [])}
    return {*K8S_ENV, *(f"COL-{c}" for c in COLUMNS), *inputs}


def substitute(arg: str, env: dict[str, str]) -> str:
    """Env.Substitute: longest match first, keys upper-cased, bool-looking values normalised; unknown kept."""
    matches = sorted(ENV_RX.finditer(arg), key=lambda m: len(m.group(0)), reverse=True)
    for m in matches:
        key, inverse = (m.group(3), m.group(2) == "!") if m.group(1) else (m.group(6), m.group(5) == "!")
        value = env.get(key.upper())
        if value is None:
            continue
        if value in ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"):
            truth = value in ("1", "t", "T", "TRUE", "true", "True")
            value = "true" if truth != inverse else "false"
        arg = arg.replace(m.group(0), value)
    return arg


def test_the_file_follows_k9s_plugin_rules() -> None:
    found = plugins()
    compare(sorted(found), expected=["aicr-acknowledge", "aicr-approve", "aicr-describe", "aicr-revoke"])
    compare([p for name, plugin in found.items() for p in problems(name, plugin)], expected=[])
    keys = [p["shortCut"] for p in found.values()]
    compare(len(set(keys)), expected=len(keys))  # a duplicate key is refused
    for name, plugin in found.items():
        compare(plugin["scopes"], expected=["runtimerollouts"], prefix=name)
        for arg in plugin.get("args", []):
            for m in ENV_RX.finditer(str(arg)):
                key = (m.group(3) if m.group(1) else m.group(6)).upper()
                assert key in known_variables(plugin) or key.isdigit(), f"{name}: ${key} is no k9s variable"
    for name in ("aicr-approve", "aicr-revoke", "aicr-acknowledge"):
        compare((found[name].get("confirm"), found[name].get("dangerous")), expected=(True, True), prefix=name)
    for name in ("aicr-approve", "aicr-revoke"):
        compare([(i["name"], i["required"]) for i in found[name]["inputs"]], expected=[("reason", True)])


def test_a_bad_file_breaks_the_rules() -> None:
    """The checks can fail: what k9s v0.51.0 refuses, they refuse."""
    compare(problems("x", {"shortCut": "Shift-Q", "description": "d", "scopes": ["a"], "command": "c",
                           "inputs": [{"name": "a", "type": "text", "default": "x"}, {"name": "a", "type": "bool"}]}),
            expected=["x: duplicate input name a", "x: input type text",
                      "x: an input with a default must be required: true"])
    compare(problems("x", {"shortCut": "ctrl-q", "description": "d", "scopes": "a", "cmd": "c"}), expected=[
        "x: unknown key cmd", "x: missing command", "x: scopes is not list", "x: invalid key specified: 'ctrl-q'"])
    compare(problems("x", {"shortCut": "d", "description": "d", "scopes": [], "command": "c"}),
            expected=["x: d is bound by k9s in a resource view"])
    # k9s' own quirks: `$NAME-` is the variable NAME- (unknown: kept), `$!FLAG` negates a boolean.
    compare(substitute("$NAME-${name} $!FLAG $NOPE", {"NAME": "r", "FLAG": "true"}), expected="$NAME-r false $NOPE")


def run_plugin(aicr: Aicr, plane: envtest.ControlPlane, plugin: dict[str, Any],
               env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """As k9s runs it: the command itself with the substituted args, in k9s' environment (its KUBECONFIG)."""
    args = [substitute(str(a), env) for a in plugin["args"]]
    return subprocess.run([plugin["command"], *args], capture_output=True, text=True, timeout=90,
                          env=aicr_env(aicr.home, plane.kubeconfig), cwd=aicr.cwd, stdin=subprocess.DEVNULL)


def test_each_command_line_runs_against_the_plane(aicr: Aicr, plane: envtest.ControlPlane,
                                                  seed: envtest.Seeder) -> None:
    found = plugins()
    name = seed.rollout()
    acknowledging = seed.rollout(phase="AwaitingAcknowledgement", awaiting_release="nvsentinel",
                                 approval={"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "r"})
    env = {"CONTEXT": "alice", "NAME": name, "NAMESPACE": "", "INPUT_REASON": "CHG-7 from k9s; it's $NAME 'quoted'",
           "COL-PHASE": "AwaitingApproval"}
    described = run_plugin(aicr, plane, found["aicr-describe"], env)
    compare((described.returncode, described.stderr), expected=(0, ""))
    assert f"Rollout:      {name}" in re.sub("\x1b\\[[0-9;]*m", "", described.stdout), described.stdout
    approved = run_plugin(aicr, plane, found["aicr-approve"], env)
    compare((approved.returncode, approved.stderr), expected=(0, ""))
    assert approved.stdout.startswith(f"rollout {name} approved by alice until "), approved.stdout
    doc = aicr("describe", name, "-o", "jsonpath={.approval.reason}", kubeconfig=plane.kubeconfig_for("alice"))
    compare(doc.stdout, expected="CHG-7 from k9s; it's $NAME 'quoted'")  # one argument, never a shell word
    revoked = run_plugin(aicr, plane, found["aicr-revoke"], {**env, "INPUT_REASON": "wrong window"})
    compare((revoked.returncode, revoked.stdout, revoked.stderr),
            expected=(0, f"rollout {name} revoked by alice\n", ""))
    acked = run_plugin(aicr, plane, found["aicr-acknowledge"], {**env, "NAME": acknowledging})
    compare((acked.returncode, acked.stdout, acked.stderr), expected=(
        0, f"rollout {acknowledging}: nvsentinel acknowledged by alice\n", ""))
