"""Managing plugins runs none of their code, the listing shows every hook and every distribution, and a change
of the plugin folders is seen by the very next run (issue 37, items 2, 3 and 4), through the real
`kubectl aicr`."""
from __future__ import annotations

import json
import os
from pathlib import Path

from testfixtures import compare

from support.harness import Aicr, error_line
from support.wheels import tree, wheel

HOOK = '''\
from pathlib import Path
from aicr_core.plugin import CommandHook

Path({marker!r}).write_text("ran")  # what importing this module does: the test looks for it


class Refuse(CommandHook):
    def get_parser(self, parser):
        return parser

    def get_epilog(self):
        return ""

    def before(self, parsed_args):
        raise SystemExit("this plugin refuses its removal")

    def after(self, parsed_args, return_code):
        return return_code
'''


def test_a_plugin_cannot_refuse_its_own_removal(aicr: Aicr, tmp_path: Path) -> None:
    """A hook on `plugins`, and claims on the names `plugins`, `text` and `PluginChange`: none of its code runs."""
    made, folder, marker = tmp_path / "made", tmp_path / "plugins", tmp_path / "ran"
    made.mkdir()
    clinging = wheel(made, "clinging", module_text=HOOK.format(marker=str(marker)), entry_points=(
        "[aicr.commands.plugins]\nrefuse = clinging:Refuse\n"
        "[aicr.commands]\nplugins = clinging:Refuse\n"
        "[aicr.renderers]\ntext = clinging:Refuse\n"
        "[aicr.layouts]\nPluginChange = clinging:Refuse\n"))
    env = {"AICR_PLUGIN_PATH": str(folder)}
    compare(aicr("plugins", "install", str(clinging), **env).returncode, expected=0)
    proc = aicr("plugins", "install", str(wheel(made, "other")), **env)  # installing another runs none of it
    compare((proc.returncode, proc.stdout, marker.exists()),
            expected=(0, f"other 1.0 installed into {folder}\n", False), suffix=proc.stderr)
    proc = aicr("plugins", "uninstall", "clinging", **env)
    compare((proc.returncode, proc.stdout, proc.stderr, marker.exists()),
            expected=(0, f"clinging 1.0 uninstalled from {folder}\n", "", False))
    compare(sorted(n for n in tree(folder) if "/" not in n), expected=["other-1.0.dist-info", "other.py"])


def test_the_listing_shows_hooks_and_distributions_without_entry_points(aicr: Aicr, tmp_path: Path) -> None:
    made, folder, marker = tmp_path / "made", tmp_path / "plugins", tmp_path / "ran"
    made.mkdir()
    hooks = wheel(made, "hooky", module_text=HOOK.format(marker=str(marker)), entry_points=(
        "[aicr.commands.approve]\nticket = hooky:Refuse\nbroken = hooky_missing:Nothing\n"
        "[aicr.commands.plugins]\nrefuse = hooky:Refuse\n"))
    quiet = wheel(made, "quiet-one", module_text="VALUE = 2\n")
    env = {"AICR_PLUGIN_PATH": str(folder)}
    compare(aicr("plugins", "install", str(hooks), str(quiet), **env).returncode, expected=0)
    proc = aicr("plugins", "-o", "json", **env)
    doc = json.loads(proc.stdout)
    compare(sorted((r["group"], r["name"], r["distribution"], r["origin"], r["status"])
                   for r in doc["plugins"] if r["distribution"] != "kubectl-aicr"), expected=[
        ("aicr.commands.approve", "broken", "hooky", str(folder), "failed"),
        ("aicr.commands.approve", "ticket", "hooky", str(folder), "ok"),
        ("aicr.commands.plugins", "refuse", "hooky", str(folder), "ignored")])
    compare(doc["withoutEntryPoints"],
            expected=[{"distribution": "quiet-one", "version": "1.0", "origin": str(folder), "modules": ["quiet_one"]}])
    text = aicr("plugins", **env).stdout.splitlines()
    assert "Command hooks (aicr.commands.COMMAND):" in text, text
    assert any(line.split()[:3] == ["approve", "ticket", "hooky"] for line in text), text
    assert any(line.split() == ["quiet-one", "1.0", str(folder), "quiet_one"] for line in text), text


def test_a_change_by_hand_is_seen_by_the_next_run(aicr: Aicr, tmp_path: Path) -> None:
    """An entry point renamed in place, its file times put back: the next run lists the new name (stevedore's
    cache, keyed by file times, kept the old one for two minutes; a coarse clock for good)."""
    made, folder = tmp_path / "made", tmp_path / "plugins"
    made.mkdir()
    module = "from aicr_core.plugin import AicrCommand, Result\n\nclass One(AicrCommand):\n    \"\"\"One.\"\"\"\n"
    env = {"AICR_PLUGIN_PATH": str(folder)}
    compare(aicr("plugins", "install", str(wheel(made, "by-hand", module_text=module,
                                                 entry_points="[aicr.commands]\nsite-one = by_hand:One\n")),
                 **env).returncode, expected=0)
    assert "  site-one " in aicr("help", **env).stdout
    points = folder / "by_hand-1.0.dist-info" / "entry_points.txt"
    before = os.stat(points)
    points.write_text(points.read_text().replace("site-one", "site-two"))
    os.utime(points, ns=(before.st_atime_ns, before.st_mtime_ns))
    help_text = aicr("help", **env).stdout
    compare(("  site-one " in help_text, "  site-two " in help_text), expected=(False, True))
    compare(error_line(aicr("site-one", **env)),
            expected='error: [USAGE] unknown command "site-one" for "kubectl aicr"')
