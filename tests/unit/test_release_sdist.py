"""tools/release.py's rewrite of the sdist: its bytes depend only on its files (pure logic, a tarball made here)."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import release
from testfixtures import compare


def made(path: Path, links_first: bool) -> None:
    """A tar.gz as setuptools might write it: owners, times, and a hard link (before or after its target)."""
    with tarfile.open(path, "w:gz") as tar:
        data = b"hello\n"
        target = tarfile.TarInfo("pkg-1/b.txt")
        target.size, target.uid, target.uname, target.mtime, target.mode = len(data), 1000, "me", 1_700_000_000, 0o644
        link = tarfile.TarInfo("pkg-1/a.txt")
        link.type, link.linkname = tarfile.LNKTYPE, "pkg-1/b.txt"
        script = tarfile.TarInfo("pkg-1/run.sh")
        script.size, script.mode, script.mtime = 3, 0o755, 1_700_000_001
        members = [(link, None), (target, data), (script, b"ls\n")] if links_first else \
            [(target, data), (script, b"ls\n"), (link, None)]
        for info, body in members:
            tar.addfile(info, io.BytesIO(body) if body is not None else None)


def test_two_sdists_of_the_same_files_come_out_byte_identical(tmp_path: Path) -> None:
    one, two = tmp_path / "one.tar.gz", tmp_path / "two.tar.gz"
    made(one, links_first=False)
    made(two, links_first=True)
    assert one.read_bytes() != two.read_bytes()
    for sdist in (one, two):
        release.rewrite_sdist(sdist, 1_234_567_890)
    compare(one.read_bytes(), expected=two.read_bytes())
    compare(one.read_bytes()[3:8], expected=b"\x00\x00\x00\x00\x00")  # no name, no time in the gzip header
    with tarfile.open(one) as tar:
        members = tar.getmembers()
        compare([(m.name, m.type, m.mode, m.uid, m.uname, m.mtime) for m in members], expected=[
            ("pkg-1/a.txt", tarfile.REGTYPE, 0o644, 0, "", 1_234_567_890),  # the hard link: a file of its own
            ("pkg-1/b.txt", tarfile.REGTYPE, 0o644, 0, "", 1_234_567_890),
            ("pkg-1/run.sh", tarfile.REGTYPE, 0o755, 0, "", 1_234_567_890)])
        compare(tar.extractfile("pkg-1/a.txt").read(), expected=b"hello\n")  # type: ignore[union-attr]
