"""Plugin folders are checked as git checks a repository (issue 37, items 6 and 7): one owned by another user,
or writable by others, or holding such a file, is refused by every run, naming the path and how to allow it;
a relative AICR_PLUGIN_PATH entry is ignored with a warning. The tests run as root (as CI does), which can
give a folder to another uid."""
from __future__ import annotations

import os
from pathlib import Path

from testfixtures import compare

from support.harness import Aicr
from support.wheels import tree, wheel

OTHER_UID = 4242


def _installed(aicr: Aicr, tmp_path: Path) -> Path:
    made, folder = tmp_path / "made", tmp_path / "plugins"
    made.mkdir()
    module = "from aicr_core.plugin import AicrCommand\n\nclass Hello(AicrCommand):\n    \"\"\"Say hello.\"\"\"\n"
    proc = aicr("plugins", "install", str(wheel(made, "greeter", module_text=module,
                                                entry_points="[aicr.commands]\nhello = greeter:Hello\n")),
                AICR_PLUGIN_PATH=str(folder))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    return folder


def test_a_folder_of_another_user_or_writable_by_others_is_refused(aicr: Aicr, tmp_path: Path) -> None:
    folder = _installed(aicr, tmp_path)
    env = {"AICR_PLUGIN_PATH": str(folder)}
    allow = (f"Make it yours and writable by you alone (chmod go-w), or allow it deliberately with "
             f"AICR_SAFE_PLUGIN_FOLDERS={folder} (folders separated by ':', '*' for every folder)")
    module = folder / "greeter.py"
    for change, undo, fault in (
            (lambda: os.chown(folder, OTHER_UID, -1), lambda: os.chown(folder, 0, -1),
             f"{folder} is owned by uid {OTHER_UID}, neither you (uid 0) nor root"),
            (lambda: folder.chmod(0o777), lambda: folder.chmod(0o755), f"{folder} is writable by others (mode 0777)"),
            (lambda: module.chmod(0o664), lambda: module.chmod(0o644),
             f"{module} is writable by its group (mode 0664)"),
            (lambda: os.chown(module, OTHER_UID, -1), lambda: os.chown(module, 0, -1),
             f"{module} is owned by uid {OTHER_UID}, neither you (uid 0) nor root")):
        change()
        before = tree(folder)
        for words in (["help"], ["plugins", "uninstall", "greeter"]):
            proc = aicr(*words, **env)
            compare((proc.returncode, proc.stdout, proc.stderr), expected=(1, "", (
                f"error: [PLUGIN_ERROR] the plugin folder {folder} is not trusted: {fault}; nothing was loaded "
                f"from it. {allow}\n")))
        compare(tree(folder), expected=before)
        allowed = aicr("help", AICR_SAFE_PLUGIN_FOLDERS=str(folder), **env)
        compare((allowed.returncode, "  hello " in allowed.stdout), expected=(0, True), suffix=allowed.stderr)
        undo()
    assert "  hello " in aicr("help", **env).stdout


def test_a_folder_above_writable_by_others_is_refused_unless_sticky(aicr: Aicr, tmp_path: Path) -> None:
    """Whoever may write a folder above may rename the plugin folder and put another in its place: a folder
    above may be writable by its group or others only with the sticky bit, as /tmp is."""
    shared = tmp_path / "shared"
    shared.mkdir()
    folder = _installed(aicr, shared)
    env = {"AICR_PLUGIN_PATH": str(folder)}
    for mode, fault in ((0o777, f"{shared} (a folder above it) is writable by others without the sticky bit "
                                "(mode 0777)"),
                        (0o775, f"{shared} (a folder above it) is writable by its group without the sticky bit "
                                "(mode 0775)"),
                        (0o1777, None), (0o1775, None), (0o755, None)):
        shared.chmod(mode)
        proc = aicr("help", **env)
        if fault is None:
            compare((proc.returncode, "  hello " in proc.stdout, proc.stderr), expected=(0, True, ""),
                    prefix=f"mode {mode:04o}")
        else:
            compare((proc.returncode, proc.stdout, proc.stderr.split("; nothing was loaded")[0]), expected=(
                1, "", f"error: [PLUGIN_ERROR] the plugin folder {folder} is not trusted: {fault}"),
                prefix=f"mode {mode:04o}")


def test_a_relative_entry_is_ignored_with_a_warning(aicr: Aicr, tmp_path: Path) -> None:
    folder = _installed(aicr, tmp_path)
    relative = folder.relative_to(tmp_path)  # the tests run in tmp_path: it would have been found
    proc = aicr("help", AICR_PLUGIN_PATH=f"{relative}:")
    compare((proc.returncode, "  hello " in proc.stdout, proc.stderr), expected=(0, False, (
        f"warning: AICR_PLUGIN_PATH entry '{relative}' is relative (it would follow the current directory): "
        "ignored\n")))
