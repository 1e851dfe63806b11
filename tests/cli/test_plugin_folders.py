"""`kubectl aicr plugins install|uninstall` and the plugin folders, with the pip installation (the frozen
program's are in tests/release): installed, listed with their origin, refused whole, removed cleanly."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from testfixtures import compare

from support.harness import ROOT, Aicr, error_line
from support.wheels import tree, wheel


def test_install_list_and_uninstall(aicr: Aicr, tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    made = tmp_path / "made"
    made.mkdir()
    first, second = wheel(made, "site-one"), wheel(made, "site-two", requires=("site-one>=1", "packaging"))
    proc = aicr("plugins", "install", str(second), str(first), AICR_PLUGIN_PATH=f"{folder}:{tmp_path / 'other'}")
    compare((proc.returncode, proc.stdout.splitlines()), expected=(0, [
        f"site-two 1.0 installed into {folder}", f"site-one 1.0 installed into {folder}"]), suffix=proc.stderr)
    compare(sorted(tree(folder)), expected=[
        "site_one-1.0.dist-info", "site_one-1.0.dist-info/INSTALLER", "site_one-1.0.dist-info/METADATA",
        "site_one-1.0.dist-info/RECORD", "site_one-1.0.dist-info/WHEEL", "site_one.py",
        "site_two-1.0.dist-info", "site_two-1.0.dist-info/INSTALLER", "site_two-1.0.dist-info/METADATA",
        "site_two-1.0.dist-info/RECORD", "site_two-1.0.dist-info/WHEEL", "site_two.py"])
    proc = aicr("plugins", "uninstall", "site_one", "-o", "json", AICR_PLUGIN_PATH=str(folder))
    compare(json.loads(proc.stdout), expected={"kind": "PluginChange", "action": "uninstall", "folder": str(folder),
                                               "distributions": [{"name": "site-one", "version": "1.0"}]})
    compare(sorted(n for n in tree(folder) if "/" not in n), expected=["site_two-1.0.dist-info", "site_two.py"])


def test_the_default_folder_is_under_xdg_data_home(aicr: Aicr, tmp_path: Path) -> None:
    made = tmp_path / "made"
    made.mkdir()
    proc = aicr("plugins", "install", str(wheel(made, "site-one")), XDG_DATA_HOME=str(tmp_path / "data"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    folders = list((tmp_path / "data" / "kubectl-aicr" / "plugins").iterdir())
    compare(([f.name.startswith("py3.") for f in folders], (folders[0] / "site_one.py").is_file()),
            expected=([True], True))


def test_a_site_package_in_a_folder_is_listed_with_the_folder_as_origin(aicr: Aicr, tmp_path: Path) -> None:
    """The example site package, unpacked from a wheel, as its plugins say."""
    out = tmp_path / "wheel"
    source = tmp_path / "source"  # a copy: a build writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT / "examples" / "aicr-site-example", source)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)], check=True,
                   capture_output=True)
    folder = tmp_path / "plugins"
    compare(aicr("plugins", "install", *map(str, out.glob("*.whl")), AICR_PLUGIN_PATH=str(folder)).returncode,
            expected=0)
    proc = aicr("plugins", "--policy-file", str(ROOT / "examples" / "approval-policy.yaml"), "-o", "json",
                AICR_PLUGIN_PATH=str(folder))
    rows = json.loads(proc.stdout)["plugins"]
    compare(sorted({(r["distribution"], r["origin"], r["status"]) for r in rows}),
            expected=[("aicr-site-example", str(folder), "ok"), ("kubectl-aicr", "built-in", "ok")])
    assert "identity     Show the username and groups" in aicr("help", AICR_PLUGIN_PATH=str(folder)).stdout


def test_refusals_name_the_wheel_and_change_nothing(aicr: Aicr, tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    made = tmp_path / "made"
    made.mkdir()
    env = {"AICR_PLUGIN_PATH": str(folder)}
    compare(aicr("plugins", "install", str(wheel(made, "site-one")), **env).returncode, expected=0)
    before = tree(folder)
    good = wheel(made, "good-one")
    not_a_wheel = made / "notes.whl"
    not_a_wheel.write_text("no zip")
    for path, reason in {
        wheel(made, "compiled", tag="cp27-cp27m-win32"): "this Python",
        wheel(made, "needs-missing", requires=("no-such-distribution>=1",)): "requires no-such-distribution>=1, which",
        wheel(made, "needs-newer", requires=("site-one>=2",)): "requires site-one>=2, but site-one 1.0 is installed",
        wheel(made, "needs-old-stevedore", requires=("stevedore<1",)): "requires stevedore<1, but stevedore ",
        wheel(made, "stevedore", version="99.0"): "it would shadow stevedore ",
        made / "missing-1.0-py3-none-any.whl": "no such file",
        not_a_wheel: "not a wheel",
    }.items():
        proc = aicr("plugins", "install", str(good), str(path), **env)
        compare((proc.returncode, error_line(proc).startswith(f"error: [USAGE] {path}: "), reason in proc.stderr),
                expected=(2, True, True), suffix=proc.stderr)
        compare(tree(folder), expected=before)
    for words in (["plugins", "uninstall", "kubectl-aicr"], ["plugins", "uninstall", "nothing-here"],
                  ["plugins", "uninstall"], ["plugins", "install"], ["plugins", "stray"]):
        proc = aicr(*words, **env)
        compare((proc.returncode, error_line(proc).startswith("error: [USAGE] ")), expected=(2, True),
                suffix=" ".join(words) + ": " + proc.stderr)
        compare(tree(folder), expected=before)
    compare([p.name for p in tmp_path.iterdir() if p.name.startswith(".")], expected=[])
