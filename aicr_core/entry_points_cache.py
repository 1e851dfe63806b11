"""The table of every `aicr.*` entry point and its distribution, kept on disk under an exact key.

Reading every distribution's metadata costs a start tens of milliseconds, so
the table is kept in `$XDG_CACHE_HOME/kubectl-aicr/` (one file per
interpreter and sys.path) with the key it was built under, and rebuilt when
the key changes. The key is what a change of the plugins changes:

- for each entry of sys.path that is a plugin folder (plugin_folders), the
  names of its `*.dist-info`/`*.egg-info` and the contents of their
  `entry_points.txt` and `METADATA`: any install, uninstall or change made
  by hand is seen by the very next run, whatever the file times say;
- for every other entry (the program's own environment, changed by pip), as
  stevedore does but exactly: the entry's and each metadata folder's and
  `entry_points.txt`'s inode, size, and modification and change times in
  nanoseconds.

stevedore's cache packs file times into 32-bit floats (they change every
128 s): its look-ups of `aicr.*` groups (cliff's CommandHooks) are answered
from this table instead (`answer_stevedore`).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

FORMAT = 1
PREFIX = "aicr."
HASHED_LIMIT = 1 << 20  # a metadata file of a plugin folder larger than this is keyed by its stat, not read
HEADER_LIMIT = 64 << 10  # Name and Version are read from the first 64 KiB of METADATA
METADATA_DIRS = (".dist-info", ".egg-info")


class Table(NamedTuple):
    groups: dict[str, list[tuple[str, str, int]]]  # group -> (name, target, index into distributions)
    distributions: list[tuple[str, str, str]]  # (name, version, location)


def read() -> Table:
    """The table for this interpreter and sys.path: from the cache file when its key matches, else built."""
    from aicr_core import plugin_folders

    path = list(sys.path)
    folders = {os.path.realpath(f) for f in plugin_folders.folders()}
    key = state_key(path, folders)
    cache_file = os.path.join(cache_dir(), "entry-points-" + _digest([sys.executable, sys.prefix, *path])[:32]
                              + ".json")
    cached = _load(cache_file, key)
    if cached is not None:
        return cached
    built = build()
    _store(cache_file, key, built)
    return built


def cache_dir() -> str:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or ""
        if not os.path.isabs(base):
            base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kubectl-aicr")


def state_key(path: Iterable[str], plugin_folders: set[str]) -> str:
    parts: list[str] = [str(FORMAT), sys.executable, sys.prefix, sys.version]
    for entry in path:
        parts.append("P" + entry)
        real = os.path.realpath(entry or ".")
        hashed = real in plugin_folders
        try:
            st = os.stat(entry or ".")
        except OSError:
            parts.append("-")
            continue
        if not stat.S_ISDIR(st.st_mode):
            parts.append(_stat_text(st))
            continue
        if not hashed:
            parts.append(_stat_text(st))
        try:
            names = sorted(n for n in os.listdir(entry or ".") if n.endswith(METADATA_DIRS))
        except OSError:
            parts.append("unreadable")
            continue
        for name in names:
            folder = os.path.join(entry or ".", name)
            parts.append("D" + name)
            files = ("entry_points.txt", "METADATA", "PKG-INFO") if hashed else ("entry_points.txt",)
            if not hashed:
                parts.append(_stat_of(folder))
            for file in files:
                parts.append(_content_of(os.path.join(folder, file)) if hashed
                             else _stat_of(os.path.join(folder, file)))
            if hashed and not os.path.isdir(folder):  # an egg-info file: its own text is the metadata
                parts.append(_content_of(folder))
    return _digest(parts)


def _digest(parts: Iterable[str]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


def _stat_text(st: os.stat_result) -> str:
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _stat_of(path: str) -> str:
    try:
        return _stat_text(os.stat(path))
    except OSError:
        return "-"


def _content_of(path: str) -> str:
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > HASHED_LIMIT:
                return "S" + _stat_text(st)
            return "H" + hashlib.sha256(f.read(HASHED_LIMIT + 1)).hexdigest()
    except OSError:
        return "-"


def build() -> Table:
    """Every `aicr.*` entry point on sys.path with its distribution; the first of a (group, name, target)
    found twice (one distribution on sys.path twice) is kept."""
    groups: dict[str, list[tuple[str, str, int]]] = {}
    distributions: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str, str]] = set()
    for dist in importlib.metadata.distributions():
        ours = [ep for ep in dist.entry_points if ep.group.startswith(PREFIX)]
        if not ours:
            continue
        name, version = name_and_version(dist)
        index = len(distributions)
        distributions.append((name, version, str(dist.locate_file(""))))
        for ep in ours:
            if (ep.group, ep.name, ep.value) in seen:
                continue
            seen.add((ep.group, ep.name, ep.value))
            groups.setdefault(ep.group, []).append((ep.name, ep.value, index))
    return Table(groups, distributions)


def name_and_version(dist: importlib.metadata.Distribution) -> tuple[str, str]:
    """Name and Version from the head of the metadata only: a METADATA of a gigabyte costs no more."""
    from email.parser import HeaderParser  # only when the table is built: not at every start

    folder = getattr(dist, "_path", None)  # a PathDistribution's metadata folder (or an egg-info file)
    if folder is not None:
        for candidate in ("METADATA", "PKG-INFO", ""):
            file = os.path.join(str(folder), candidate) if candidate else str(folder)
            try:
                with open(file, "rb") as f:
                    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                        continue
                    head = f.read(HEADER_LIMIT).decode("utf-8", "replace").split("\n\n", 1)[0]
            except OSError:
                continue
            headers = HeaderParser().parsestr(head)
            return str(headers.get("Name") or ""), str(headers.get("Version") or "")
    return str(dist.metadata["Name"] or ""), str(dist.version or "")


def _load(cache_file: str, key: str) -> Table | None:
    """The cached table, if the file is ours (yours, writable by you alone) and holds this key."""
    try:
        with open(cache_file, "rb") as f:
            st = os.fstat(f.fileno())
            if os.name == "posix" and (st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
                return None
            data: Any = json.loads(f.read(16 << 20))
        if data.get("format") != FORMAT or data.get("key") != key:
            return None
        return Table({g: [(str(n), str(t), int(i)) for n, t, i in eps] for g, eps in data["groups"].items()},
                     [(str(n), str(v), str(loc)) for n, v, loc in data["distributions"]])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _store(cache_file: str, key: str, table: Table) -> None:
    """Written whole (a temporary file renamed), private; a cache that cannot be written is only slower."""
    import tempfile  # only when the table is built: not at every start

    folder = os.path.dirname(cache_file)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".entry-points-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"format": FORMAT, "key": key, "groups": table.groups,
                           "distributions": table.distributions}, f)
            os.replace(temporary, cache_file)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass


def answer_stevedore(current: Callable[[], Table]) -> None:
    """stevedore's look-ups of `aicr.*` groups (cliff loads CommandHooks through them) answered from the table;
    any other group as stevedore answers it."""
    from stevedore import _cache

    original = getattr(_cache, "get_group_all", None)
    if original is None or getattr(original, "answers_from_aicr_table", False):
        return

    def get_group_all(group: str, path: tuple[str, ...] | None = None) -> list[importlib.metadata.EntryPoint]:
        if not group.startswith(PREFIX) or path is not None:
            return original(group, path)
        return [importlib.metadata.EntryPoint(name, target, group) for name, target, _ in
                current().groups.get(group, ())]

    get_group_all.answers_from_aicr_table = True  # type: ignore[attr-defined]
    _cache.get_group_all = get_group_all
