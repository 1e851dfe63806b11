"""No tracked file cites a path outside the repository: a clone alone holds every contract it names.

The contracts the code implements are written in docs/ (the operator API, the policy file and its
tests, the fleet, the upstream plugin's behaviour); a path into a sibling folder of the repository, or
into a folder of the machine the code was written on, would name a file a clone does not have.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from testfixtures import compare

ROOT = Path(__file__).resolve().parents[2]
# A sibling folder reached from the repository, or the folders of the machine it was written on. (`/work`
# alone is the folder `reproduce` mounts in its container: that path is the container's, not ours.)
OUTSIDE = re.compile(r"\.\./shared\b|/work/(?:shared|main|wt-[\w-]+|\.library|\.mirror)\b")


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name]


def test_no_tracked_file_cites_a_path_outside_the_repository() -> None:
    files = tracked_files()
    assert len(files) > 100, files  # the listing worked: this is the repository, not an empty folder
    cited = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):  # binary, or deleted but not yet committed
            continue
        cited += [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()}"
                  for m in OUTSIDE.finditer(text)]
    compare(cited, expected=[])


def test_the_pattern_finds_what_it_must_and_leaves_the_containers_path() -> None:
    found = [bool(OUTSIDE.search(text)) for text in (
        "The contract is ../" "shared/spec/fleet.md.", "see /work/" "shared/notes/layout.md", "in /work/" "wt-rooms/x",
        "docker run -v DIR:/work image --recipe /work/recipe.json", "docs/operator-api.md")]
    compare(found, expected=[True, True, True, False, False])
