"""The kubeconfig files, found and merged as kubectl finds and merges them; no Kubernetes client.

The files: `--kubeconfig PATH` alone (it must exist), else every file of `$KUBECONFIG` that
exists, else `~/.kube/config`; merged as kubectl merges them (the first file to name a cluster,
context or user, or to set `current-context`, wins). Each file is read through the bounded
loaders (`bounded_json`, `bounded_yaml`: an anchor bomb or a nesting of 100,000 levels is
refused, not expanded). Shell completion reads them through this module too, so that it knows
the same names and the same bounds as a command.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from aicr_core.errors import AicrError, Code, shown_argument
from aicr_core.session import bounded_json, bounded_yaml
from aicr_core.session.quoting import first_line

ITEMS = ("clusters", "contexts", "users")
DEFAULT_LOCATION = "~/.kube/config"

# A file is known by (path, device, inode, size, mtime): changed in place, it is read again.
FileKey = tuple[str, int, int, int, int]


class Entry(NamedTuple):
    """A named cluster, context or user of a file: `name` says where it stands, `path` its file."""

    name: str
    value: dict[str, Any]
    path: str | None


class Merged(NamedTuple):
    """The merged kubeconfig: entries by name (in the files' order), and the current context."""

    current_context: str
    entries: Mapping[str, Mapping[str, Entry]]  # "clusters" | "contexts" | "users" -> name -> entry


def files(kubeconfig: str | None) -> tuple[list[tuple[FileKey, Path]], str]:
    """The kubeconfig files to merge, each with its key (a stat: cheap), and their names for messages."""
    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not _is_file(path):
            raise AicrError(Code.KUBECONFIG, f"kubeconfig {shown_argument(kubeconfig)} does not exist or is not a "
                            "file")
        return [(_key(path), path)], shown_argument(kubeconfig)
    listed = os.environ.get("KUBECONFIG") or DEFAULT_LOCATION
    paths = [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
    return [(_key(p), p) for p in paths if _is_file(p)], shown_argument(listed, 200)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long, say: no file, as kubectl sees it
        return False


def _key(path: Path) -> FileKey:
    try:
        info = path.stat()
    except OSError as err:
        raise AicrError(Code.KUBECONFIG, f"cannot read kubeconfig {path}: {first_line(str(err))}") from None
    return (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


# The merged kubeconfig of each list of files, with the files' keys it was read at: a command across
# 500 contexts of one file parses and merges it once, not 500 times (each merge also grew with the
# file: the fleet's CPU went as the square of its size). A file changed since is read again, and its
# old merge dropped; at most MAX_MERGED lists of files are kept, the least recently used dropped
# first, so a long-lived program does not grow with every kubeconfig it was ever given. Sessions only
# read a merge: every entry a session changes is copied first (kubeconfig.py copies the cluster and
# user deeply), so nothing one session loads, an exec plugin's certificate say, reaches another's.
# The lock is held while a file is parsed, so that the fleet's workers, starting together, do not
# all parse it at once.
MAX_MERGED = 16
_MERGED: OrderedDict[tuple[str, ...], tuple[tuple[FileKey, ...], Merged]] = OrderedDict()
_MERGED_LOCK = threading.Lock()


def merged(found: list[tuple[FileKey, Path]]) -> Merged:
    paths = tuple(file_key[0] for file_key, _ in found)
    keys = tuple(file_key for file_key, _ in found)
    with _MERGED_LOCK:
        kept = _MERGED.get(paths)
        if kept is not None and kept[0] == keys:
            _MERGED.move_to_end(paths)
            return kept[1]
        result = _merge([(path, parse(path)) for _, path in found])
        _MERGED[paths] = (keys, result)
        _MERGED.move_to_end(paths)
        while len(_MERGED) > MAX_MERGED:
            _MERGED.popitem(last=False)
    return result


def cached() -> int:
    """How many merged kubeconfigs the process holds (for tests)."""
    with _MERGED_LOCK:
        return len(_MERGED)


def parse(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        doc = _json(text)
        if doc is None:  # YAML, on libyaml where PyYAML has it; an anchor bomb is refused, not expanded
            doc = bounded_yaml.load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise AicrError(Code.KUBECONFIG, f"cannot read kubeconfig {path}: {first_line(str(err))}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise AicrError(Code.KUBECONFIG, f"kubeconfig {path} is not a kubeconfig (a YAML mapping)")
    return doc


def _json(text: str) -> Any:
    """A kubeconfig written as JSON (as tools write them), read as JSON, as kubectl reads it (a YAML
    parser builds the same document far slower: docs/performance.md); None if it is not JSON."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        return bounded_json.loads(text)  # nesting bounded: 100,000 `{` is refused, not a RecursionError
    except ValueError:
        return None  # YAML's flow style, or too deep, say: the bounded YAML loader says what it is


def _merge(docs: list[tuple[Path, dict[str, Any]]]) -> Merged:
    """kubectl's merge: the first file to name an entry, or to set current-context, wins."""
    current_context = ""
    entries: dict[str, dict[str, Entry]] = {item: {} for item in ITEMS}
    for path, doc in docs:
        for item in ITEMS:
            listed = doc.get(item) or []
            if not isinstance(listed, list):
                raise AicrError(Code.KUBECONFIG, f"kubeconfig {path}: {item} is not a list")
            named = entries[item]
            for entry in listed:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise AicrError(Code.KUBECONFIG, f"kubeconfig {path}: an entry of {item} has no name")
                if entry["name"] not in named:
                    named[entry["name"]] = Entry(f"{item}[name={entry['name']}]", entry, str(path))
        current = doc.get("current-context")
        if not current_context and isinstance(current, str):
            current_context = current
    return Merged(current_context, entries)


def merged_context_names(kubeconfig: str | None) -> list[str]:
    """The context names of the kubeconfig, merged as kubectl merges its files, in their order."""
    found, source = files(kubeconfig)
    if not found:
        raise AicrError(Code.KUBECONFIG, f"no kubeconfig found (looked at {source}); "
                        "pass --kubeconfig or set KUBECONFIG")
    return list(merged(found).entries["contexts"])


def names(kubeconfig: str | None, item: str) -> list[str]:
    """The names of one kind of entry (`clusters`, `contexts`, `users`), merged, in their order;
    none when no file is found (shell completion: a KUBECONFIG error there offers nothing)."""
    found, _ = files(kubeconfig)
    return list(merged(found).entries[item]) if found else []
