"""What a site author gets: one module to import from, light policies, a pytest kit, text layouts, documented CODEs."""
from __future__ import annotations

import json
from pathlib import Path

import envtest
from testfixtures import compare

from support.harness import Aicr
from support.plugin_env import EXAMPLES, PluginPath

# -- text layouts ----------------------------------------------------------------------------------

def test_a_site_command_gets_its_own_text_layout(aicr: Aicr, tmp_path: Path, plane: envtest.ControlPlane) -> None:
    site = aicr.with_env(**PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example").env())
    proc = site("identity", kubeconfig=plane.kubeconfig_for("alice"))
    compare((proc.returncode, proc.stdout), expected=(
        0, "Username:  alice\nGroups:    aicr:approvers, system:authenticated\n"), suffix=proc.stderr)
    doc = json.loads(site("identity", "-o", "json", kubeconfig=plane.kubeconfig_for("alice")).stdout)
    compare(doc, expected={"kind": "Identity", "username": "alice",
                           "groups": ["aicr:approvers", "system:authenticated"]})

