"""Adding a fleet source is local: docs/architecture.md's "Adding a fleet source", followed step by step.

A third source, a folder of kubeconfig files (`--kubeconfig-dir DIR`: each file one member, named
after the file), is written here as the page says (1. its module, with exactly the names the page
lists; 2. its name in `SOURCES`, before the contexts; 3. a fleet read and a write through it
against the real control planes), and nothing else of the project is changed: its flag appears on
every fleet command, is completed, checked and refused where the page says, and the real commands
read and approve through it, in-process.
"""
from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.fleet import sources
from aicr_core.framework.app import AicrApp

from support.fleet_planes import CONTEXTS, Fleet, rollout_spec

# Step 1: its module, importable by its name, with the names the page lists.
MODULE = "kubeconfig_dir_source"
SOURCE = '''"""The fleet source of a folder of kubeconfig files (`--kubeconfig-dir DIR`): each file one member."""
from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

from aicr_core.errors import UsageError
from aicr_core.fleet.sources import Flag

SUFFIX = ".kubeconfig"


def complete_folders(prefix: str, values: Mapping[str, Any], seconds: float) -> list[str]:
    folder = os.path.dirname(prefix) or "."
    return [os.path.join(folder, n) + "/" for n in sorted(os.listdir(folder))
            if os.path.isdir(os.path.join(folder, n)) and os.path.join(folder, n).startswith(prefix.rstrip("/"))]


GROUP = "fleet: the clusters of a folder of kubeconfig files"
FLAGS = (Flag("kubeconfig_dir", "--kubeconfig-dir", None,
              "every NAME.kubeconfig file of DIR is a cluster, named NAME", "DIR", complete_folders),)
KIND = "kubeconfig file"
LABELLED = False
HUB_CONTEXT = False
DECIDES = "each cluster's own kubeconfig file decides"


def given(values: Mapping[str, Any]) -> bool:
    return values.get("kubeconfig_dir") is not None


def flag(values: Mapping[str, Any]) -> str:
    return "--kubeconfig-dir"


def check_flags(values: Mapping[str, Any]) -> None:
    folder = values.get("kubeconfig_dir")
    if folder is None:
        return
    if not os.path.isdir(folder):
        raise UsageError(f"--kubeconfig-dir {folder}: not a folder")
    if values.get("all_contexts"):
        raise UsageError("--all-contexts cannot be used with --kubeconfig-dir: every file is a member")


class Files:
    def __init__(self, folder: str) -> None:
        self.folder = os.path.abspath(folder)
        self.names = sorted(n[:-len(SUFFIX)] for n in os.listdir(folder) if n.endswith(SUFFIX))
        self.among = f"in {self.folder}"

    def path(self, member: str) -> str:
        return os.path.join(self.folder, member + SUFFIX)

    def labels(self, member: str) -> Mapping[str, str]:
        return {}

    def server(self, member: str) -> None:
        return None  # the user wrote the files

    def connect(self, member: str, overrides: Any, deadline: Any) -> Any:
        from aicr_core.session import kube

        return kube.connect(self.path(member), None, deadline, overrides=overrides._replace(context=None))

    def single_cluster_flags(self, member: str) -> str:
        return f"--kubeconfig {shlex.quote(self.path(member))}"


def members(values: Mapping[str, Any]) -> Files:
    return Files(values["kubeconfig_dir"])


def complete(values: Mapping[str, Any], seconds: float) -> list[str]:
    folder = values.get("kubeconfig_dir")
    return Files(folder).names if folder and os.path.isdir(folder) else []
'''


@pytest.fixture
def third_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fleet: Fleet) -> Iterator[Path]:
    """The module written and importable (step 1), its name in SOURCES before the contexts (step 2); a folder of
    one kubeconfig file a plane (alice's), named after its context."""
    code = tmp_path / "code"
    code.mkdir()
    (code / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.setattr(sources, "SOURCES", [*sources.SOURCES[:-1], MODULE, sources.SOURCES[-1]])
    folder = tmp_path / "clusters"
    folder.mkdir()
    for member in fleet.members:
        shutil.copy(member.plane.kubeconfig_for("alice"), folder / f"{member.context}.kubeconfig")
    yield folder


def run(*words: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = AicrApp(stdout=out, stderr=err).run(list(words))
    return code, out.getvalue(), err.getvalue()


def test_a_fleet_read_and_a_write_through_a_third_source(fleet: Fleet, third_source: Path) -> None:
    digest, names = fleet.seed_plan()
    code, out, err = run("list", "--kubeconfig-dir", str(third_source), "-o", "json")
    compare(code, expected=0, suffix=err)
    found = {(i["context"], i["name"]) for i in json.loads(out)["items"] if i["transition"]["to"] == digest}
    compare(found, expected=set(names.items()))

    code, out, err = run("approve", "--plan", digest, "--kubeconfig-dir", str(third_source), "--contexts",
                         "gpu-eu-*", "--reason", "CHG-4711 through a folder", "--yes", "-o", "json")
    compare(code, expected=0, suffix=err)
    compare([(i["context"], i["rollout"], i["result"]) for i in json.loads(out)["items"]],
            expected=[(c, names[c], "approved") for c in ("gpu-eu-1", "gpu-eu-2")])
    assert f"Approve plan {digest}: 2 rollouts in 2 clusters:" in err, err
    compare([bool(rollout_spec(fleet.member(c), names[c]).get("approval")) for c in CONTEXTS],
            expected=[False, True, True])

    # A write's message reaches a member alone by the source's own flags.
    code, out, err = run("approve", "--plan", digest, "--kubeconfig-dir", str(third_source), "--contexts", "gpu-eu-1",
                         "--reason", "again", "--yes", "-o", "json")
    compare((code, [i["result"] for i in json.loads(out)["items"]]), expected=(0, ["already-approved"]), suffix=err)


def test_its_flags_are_added_checked_and_completed_as_the_page_says(fleet: Fleet, third_source: Path) -> None:
    from aicr_core.framework import completion

    code, out, _ = run("help", "version")
    assert "--kubeconfig-dir DIR" in out and "every NAME.kubeconfig file of DIR is a cluster" in out, out
    for words, message in (
            (["list", "--kubeconfig-dir", str(third_source / "nope")], "--kubeconfig-dir"),
            (["list", "--kubeconfig-dir", str(third_source), "--all-contexts"], "--all-contexts cannot be used"),
            (["list", "--kubeconfig-dir", str(third_source), "--context", "gpu-lab-1"],
             "--context cannot be used with --kubeconfig-dir: it chooses one cluster"),
            (["list", "--kubeconfig-dir", str(third_source), "--server", "https://x"],
             "--server cannot be used with --kubeconfig-dir: each cluster's own kubeconfig file decides it"),
            (["list", "--kubeconfig-dir", str(third_source), "--contexts", "gpu-us-*"],
             f"--contexts: 'gpu-us-*' matches no kubeconfig file in {third_source}"),
            (["describe", "x", "--kubeconfig-dir", str(third_source)], "unknown flag: --kubeconfig-dir"),
            (["approve", "rollout-x", "--kubeconfig-dir", str(third_source)], "--kubeconfig-dir cannot be used with")):
        code, _, err = run(*words)
        compare(code, expected=2, suffix=err)
        assert message in err, (words, err)
    candidates = completion.complete(["list", "--kubeconfig-dir", str(third_source), "--contexts", "gpu-eu"])
    compare(sorted(candidates.words), expected=["gpu-eu-1", "gpu-eu-2"])
    folders = completion.complete(["list", "--kubeconfig-dir", str(third_source.parent / "cl")])
    compare(folders.words, expected=[f"{third_source}/"])


def test_the_page_lists_the_names_the_source_holds() -> None:
    """The test's module holds exactly what the page's step 1 lists, and so do the project's sources."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    section = page[page.index("## Adding a fleet source"):page.index("## Adding a command, a renderer, a policy")]
    names = ("FLAGS", "GROUP", "KIND", "LABELLED", "HUB_CONTEXT", "DECIDES", "given", "flag", "check_flags",
             "members", "complete")
    missing = [name for name in names if f"`{name}" not in section]
    compare(missing, expected=[])
    for module in ("aicr_core.fleet.context_source", "aicr_core.fleet.profile_source"):
        imported: Any = __import__(module, fromlist=["_"])
        compare([name for name in names if not hasattr(imported, name)], expected=[], suffix=module)
    for member_name in ("names", "among", "labels", "server", "connect", "single_cluster_flags"):
        assert f"`{member_name}" in section, member_name
