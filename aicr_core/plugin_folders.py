"""Plugin folders: where a site's plugins live when they are not in the program's own Python environment.

A frozen release cannot see a site's pip packages, so both it and a pip
installation also read plugins from folders (docs/plugins.md):
`AICR_PLUGIN_PATH` (folders separated by `:`), else
`$XDG_DATA_HOME/kubectl-aicr/plugins/py<major>.<minor>` (`~/.local/share/...`).
Each folder is a site-packages folder of its own (`plugins install` unpacks
wheels into the first one), appended to `sys.path` before anything reads an
entry point, so its entry points are found, and fail closed, exactly as a pip
installation's. Appended, not prepended: a folder cannot shadow a module the
program carries.

A folder is trusted as git trusts a repository (`safe.directory`): it, every
file and folder in it, and the folders above it must belong to the user
running the program or to root, and none may be writable by anyone but its
owner (a folder above may be, with the sticky bit, as /tmp is: without it, anyone who may write
there may rename the folder and put another in its place). A folder that
fails is refused, naming the path and the owner or mode at fault, unless
`AICR_SAFE_PLUGIN_FOLDERS` names it (`*`: every folder). A relative entry of
`AICR_PLUGIN_PATH` would follow the current directory: it is ignored with a
warning, as an empty one is silently.

Standard library only, and only its smallest parts: this runs in every start.
"""
from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping

ENV = "AICR_PLUGIN_PATH"
SAFE_ENV = "AICR_SAFE_PLUGIN_FOLDERS"
BUILT_IN = "built-in"
ENVIRONMENT = "environment"
OWN_DISTRIBUTION = "kubectl-aicr"


def folders(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The plugin folders, first the one `plugins install` writes to; absolute paths, as configured."""
    return _configured(environ)[0]


def ignored_entries(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The entries of AICR_PLUGIN_PATH that are relative (they would follow the current directory): ignored."""
    return _configured(environ)[1]


def _configured(environ: Mapping[str, str]) -> tuple[list[str], list[str]]:
    configured = environ.get(ENV)
    if configured:
        entries = [os.path.expanduser(p) for p in configured.split(os.pathsep) if p]
        return ([os.path.normpath(p) for p in entries if os.path.isabs(p)],
                [p for p in entries if not os.path.isabs(p)])
    data_home = environ.get("XDG_DATA_HOME") or ""
    if not os.path.isabs(data_home):  # the XDG specification: a relative value is ignored
        data_home = os.path.join(os.path.expanduser("~"), ".local", "share")
    return [os.path.join(data_home, "kubectl-aicr", "plugins", f"py{sys.version_info[0]}.{sys.version_info[1]}")], []


def add_to_sys_path(environ: Mapping[str, str] = os.environ) -> None:
    """Append every plugin folder to sys.path (a folder that does not exist yet is harmless there).

    A relative entry is ignored with a warning on stderr; a folder that is not trusted ends the run
    (`error: [PLUGIN_ERROR] ...`, exit 1) before any plugin is read, as git refuses a repository.
    """
    for entry in ignored_entries(environ):
        os.write(2, f"warning: {ENV} entry {entry!r} is relative (it would follow the current directory): "
                    "ignored\n".encode(errors="replace"))
    found = folders(environ)
    for folder in found:
        problem = trust_problem(folder, environ)
        if problem is not None:
            os.write(2, f"error: [PLUGIN_ERROR] {problem}\n".encode(errors="replace"))
            raise SystemExit(1)
    for folder in found:
        if folder not in sys.path:
            sys.path.append(folder)


def trust_problem(folder: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why plugins may not be loaded from (nor installed into) this folder, in one line; None if they may."""
    if os.name != "posix" or _allowed(folder, environ):
        return None
    real = os.path.realpath(folder)
    fault = _chain_fault(folder) or (_chain_fault(real) if real != folder else None) or _tree_fault(real)
    if fault is None:
        return None
    return (f"the plugin folder {folder} is not trusted: {fault}; nothing was loaded from it. Make it yours and "
            f"writable by you alone (chmod go-w), or allow it deliberately with {SAFE_ENV}={folder} "
            "(folders separated by ':', '*' for every folder)")


def _allowed(folder: str, environ: Mapping[str, str]) -> bool:
    allowed = [p for p in environ.get(SAFE_ENV, "").split(os.pathsep) if p]
    if "*" in allowed:
        return True
    real = os.path.realpath(folder)
    return any(os.path.isabs(p) and os.path.realpath(p) in (real, folder) for p in allowed)


def _owner_fault(path: str, st: os.stat_result) -> str | None:
    if st.st_uid not in (0, os.geteuid()):
        return f"{path} is owned by uid {st.st_uid}, neither you (uid {os.geteuid()}) nor root"
    return None


def _chain_fault(path: str) -> str | None:
    """The folders above `path` (and the link `path` itself is, if one): owned by you or root, and not
    writable by its group or others unless sticky (a parent they may write without it lets them rename the
    folder)."""
    parent = os.path.dirname(path)
    while True:
        try:
            st = os.stat(parent)
        except OSError:
            st = None
        if st is not None:
            fault = _owner_fault(parent, st)
            if fault is None and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
                who = "others" if st.st_mode & stat.S_IWOTH else "its group"
                fault = (f"{parent} (a folder above it) is writable by {who} without the sticky bit "
                         f"(mode {stat.S_IMODE(st.st_mode):04o})")
            if fault is not None:
                return fault
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return _owner_fault(path, st) if stat.S_ISLNK(st.st_mode) else None


def _tree_fault(folder: str) -> str | None:
    """The folder and everything in it: owned by you or root, writable by the owner alone (links: owner only)."""
    try:
        st = os.lstat(folder)
    except OSError:
        return None  # not there yet: nothing to load
    fault = _entry_fault(folder, st)
    if fault is not None or not stat.S_ISDIR(st.st_mode):
        return fault
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            entries = list(os.scandir(current))
        except OSError as err:
            return f"{current} cannot be read ({err.strerror})"
        for entry in entries:
            try:
                entry_stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            fault = _entry_fault(entry.path, entry_stat)
            if fault is not None:
                return fault
            if stat.S_ISDIR(entry_stat.st_mode):
                pending.append(entry.path)
    return None


def _entry_fault(path: str, st: os.stat_result) -> str | None:
    fault = _owner_fault(path, st)
    if fault is None and not stat.S_ISLNK(st.st_mode) and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "others" if st.st_mode & stat.S_IWOTH else "its group"
        fault = f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o})"
    return fault


def origin(distribution: str, location: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """Where a plugin came from, by where its distribution lies (never by its name alone): the plugin folder
    holding it, else `built-in` (the program's own distribution), else `environment`."""
    if location is not None:
        here = os.path.realpath(location)
        for folder in folders(environ):
            if here == os.path.realpath(folder):
                return folder
    if distribution.lower().replace("_", "-") == OWN_DISTRIBUTION:
        return BUILT_IN
    return ENVIRONMENT
