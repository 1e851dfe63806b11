"""Find plugins (entry points) through a table of our own; import only what is used.

Five groups (see setup.cfg): `aicr.commands`, `aicr.renderers`,
`aicr.policies`, `aicr.layouts` (the text layout of a result kind) and
`aicr.write_inputs` (a site's input of a write, aicr_core.write_inputs); cliff's
`CommandHook`s are in `aicr.commands.<command>`. Our own plugins are
registered there too, exactly as a site package registers its own.

Listing a group reads a table of every `aicr.*` entry point with the
distribution (name, version, location) that declares it, kept on disk
(entry_points_cache), so start-up does not grow with every plugin installed.
stevedore's own cache keys its file by file times packed into 32-bit floats,
which change only every 128 s: a plugin replaced within two minutes kept its
old entry points for good. The table's key is exact instead (see
entry_points_cache), and stevedore's look-ups of `aicr.*` groups (cliff's
hooks) are answered from it. A name that two entry points claim is a
conflict: it is reported and the name refuses to run, because silently
picking one is how an approver ends up running a command they did not
install; except that, while the program manages its plugins
(`prefer_built_in`), a name the program itself declares is its own.
"""
from __future__ import annotations

import importlib.metadata
import sys
import threading
from collections import defaultdict
from typing import Any, NamedTuple

from aicr_core import entry_points_cache
from aicr_core.entry_points_cache import Table
from aicr_core.errors import AicrError, Code

COMMANDS = "aicr.commands"
RENDERERS = "aicr.renderers"
POLICIES = "aicr.policies"
LAYOUTS = "aicr.layouts"
WRITE_INPUTS = "aicr.write_inputs"  # a site's inputs of a write (aicr_core.write_inputs)
GROUPS = (COMMANDS, RENDERERS, POLICIES, LAYOUTS, WRITE_INPUTS)
HOOKS_PREFIX = COMMANDS + "."  # cliff's CommandHooks of command NAME: aicr.commands.NAME


class PluginInfo(NamedTuple):
    """One entry point, described without importing it (a NamedTuple: a frozen dataclass costs every start ~1%)."""

    group: str
    name: str
    target: str  # "module:attribute"


class Distribution(NamedTuple):
    name: str
    version: str
    location: str  # the folder (sys.path entry) it lies in


UNKNOWN = Distribution("unknown", "", "")

# The table, read once per process and published whole under a lock (a fleet's workers ask at once);
# `refresh()` drops it, so that a long-lived program sees plugins installed since.
_table: tuple[tuple[str, ...], Table] | None = None
_table_lock = threading.Lock()
_prefer_built_in = False


def table() -> Table:
    """The table of sys.path as it is: read again when sys.path changed since (as stevedore's was keyed)."""
    global _table
    path = tuple(sys.path)
    found = _table
    if found is None or found[0] != path:
        with _table_lock:
            found = _table
            if found is None or found[0] != path:
                found = _table = (path, entry_points_cache.read())
    return found[1]


def refresh() -> None:
    """Forget the table: the next look-up reads the plugins as they are now (a long-lived program's call)."""
    global _table
    with _table_lock:
        _table = None


def prefer_built_in() -> None:
    """From now on a name claimed by the program and a plugin is the program's: `plugins` (which manages the
    plugins) is never blocked, nor runs their code, by a plugin claiming its name, renderer or layout."""
    global _prefer_built_in
    _prefer_built_in = True


def groups() -> list[str]:
    """Every `aicr.*` group some distribution declares entry points in."""
    return sorted(table().groups)


class PluginGroup:
    """The entry points of one group, by name; loads one on request."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._by_name: dict[str, list[PluginInfo]] = defaultdict(list)
        for name, target, _dist in table().groups.get(group, ()):
            self._by_name[name].append(PluginInfo(group, name, target))

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def infos(self, name: str) -> list[PluginInfo]:
        return list(self._by_name.get(name, []))

    def conflicts(self) -> dict[str, list[PluginInfo]]:
        return {name: infos for name, infos in self._by_name.items() if len(infos) > 1}

    def load(self, name: str) -> Any:
        """Import and return the object behind `name`; PLUGIN_ERROR if that fails."""
        infos = self._by_name.get(name)
        if not infos:
            raise KeyError(name)
        if len(infos) > 1:
            own = [i for i in infos if is_built_in(i)]
            if (_prefer_built_in or (self.group, name) == (COMMANDS, "plugins")) and len(own) == 1:
                return load_target(own[0])
            claims = ", ".join(f"{distribution_of(i)} ({i.target})" for i in infos)
            raise AicrError(Code.PLUGIN_ERROR, f"{self.group} {name!r} is claimed by more than one plugin: "
                            f"{claims}; uninstall one of them")
        return load_target(infos[0])


def load_target(info: PluginInfo) -> Any:
    """Import one entry point, turning any failure into PLUGIN_ERROR."""
    try:
        return importlib.metadata.EntryPoint(info.name, info.target, info.group).load()
    except Exception as err:  # noqa: BLE001 - a plugin that fails to import: named, one line
        raise AicrError(Code.PLUGIN_ERROR, f"{info.group} {info.name!r} from {distribution_of(info)} "
                        f"failed to load: {type(err).__name__}: {err}") from err


def distribution(info: PluginInfo) -> Distribution:
    """The distribution that declares this entry point (the first on sys.path, if two do)."""
    current = table()
    for name, target, dist in current.groups.get(info.group, ()):
        if name == info.name and target == info.target:
            return Distribution(*current.distributions[dist])
    return UNKNOWN


def distribution_of(info: PluginInfo) -> str:
    """`name version` of the distribution that declares this entry point (for reports)."""
    found = distribution(info)
    return f"{found.name} {found.version}".strip()


def distribution_and_version(info: PluginInfo) -> tuple[str, str]:
    found = distribution(info)
    return found.name, found.version


def origin(info: PluginInfo) -> str:
    """`built-in`, the plugin folder holding the entry point's distribution, or `environment`: by where it lies."""
    from aicr_core import plugin_folders

    found = distribution(info)
    return plugin_folders.origin(found.name, found.location or None)


def is_built_in(info: PluginInfo) -> bool:
    from aicr_core import plugin_folders

    return origin(info) == plugin_folders.BUILT_IN


entry_points_cache.answer_stevedore(table)
