"""Find plugins (entry points) through stevedore's entry-point cache; import only what is used.

Four groups (see setup.cfg): `aicr.commands`, `aicr.renderers`,
`aicr.policies`, and `aicr.layouts` (the text layout of a result kind). Our
own plugins are registered there too, exactly as a site package registers its
own.

Listing a group reads entry-point metadata only (stevedore caches it per
sys.path), so start-up does not grow with every plugin installed. A name that
two entry points claim is a conflict: it is reported and the name refuses to
run, because silently picking one is how an approver ends up running a
command they did not install.
"""
from __future__ import annotations

import importlib.metadata
import threading
from collections import defaultdict
from typing import Any, NamedTuple

from stevedore.named import NamedExtensionManager

from aicr_core.errors import AicrError, Code

COMMANDS = "aicr.commands"
RENDERERS = "aicr.renderers"
POLICIES = "aicr.policies"
LAYOUTS = "aicr.layouts"
GROUPS = (COMMANDS, RENDERERS, POLICIES, LAYOUTS)


class PluginInfo(NamedTuple):
    """One entry point, described without importing it (a NamedTuple: a frozen dataclass costs every start ~1%)."""

    group: str
    name: str
    target: str  # "module:attribute"


class PluginGroup:
    """The entry points of one group, by name; loads one on request."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._by_name: dict[str, list[PluginInfo]] = defaultdict(list)
        seen: set[tuple[str, str]] = set()
        # names=[]: stevedore reads the (cached) entry points and imports none of them.
        listing: NamedExtensionManager[Any] = NamedExtensionManager(
            group, names=[], on_missing_entrypoints_callback=None)
        for ep in listing.list_entry_points():
            if (ep.name, ep.value) in seen:  # one distribution found twice on sys.path
                continue
            seen.add((ep.name, ep.value))
            self._by_name[ep.name].append(PluginInfo(group, ep.name, ep.value))

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
            claims = ", ".join(f"{distribution_of(i)} ({i.target})" for i in infos)
            raise AicrError(Code.PLUGIN_ERROR, f"{self.group} {name!r} is claimed by more than one plugin: "
                            f"{claims}; uninstall one of them")
        return load_target(infos[0])


def load_target(info: PluginInfo) -> Any:
    """Import one entry point through stevedore, turning any failure into PLUGIN_ERROR."""
    failures: list[BaseException] = []

    def record(_manager: object, ep: importlib.metadata.EntryPoint, err: BaseException) -> None:
        if ep.value == info.target:
            failures.append(err)

    manager: NamedExtensionManager[Any] = NamedExtensionManager(
        info.group, names=[info.name], on_missing_entrypoints_callback=None,
        on_load_failure_callback=record)
    loaded = [ext.plugin for ext in manager if ext.entry_point.value == info.target]
    if failures or not loaded:
        err = failures[0] if failures else LookupError("entry point vanished")
        raise AicrError(Code.PLUGIN_ERROR, f"{info.group} {info.name!r} from {distribution_of(info)} "
                        f"failed to load: {type(err).__name__}: {err}") from err
    return loaded[0]


# Which distribution declares each entry point: built whole, then published, under a lock. A fleet's
# workers ask at once (a policy file's `required: [{name, distribution}]`); a table published empty
# and then filled would answer "unknown" to a worker that read it half-made.
_dist_by_entry_point: dict[str, tuple[str, str]] | None = None
_dist_lock = threading.Lock()


def distribution_of(info: PluginInfo) -> str:
    """`name version` of the distribution that declares this entry point (slow; for reports only)."""
    name, version = distribution_and_version(info)
    return f"{name} {version}".strip()


def distribution_and_version(info: PluginInfo) -> tuple[str, str]:
    global _dist_by_entry_point
    table = _dist_by_entry_point
    if table is None:
        with _dist_lock:
            table = _dist_by_entry_point
            if table is None:
                table = {}
                for dist in importlib.metadata.distributions():
                    for ep in dist.entry_points:
                        if ep.group in GROUPS:
                            table[f"{ep.group}\0{ep.name}\0{ep.value}"] = (dist.metadata["Name"], dist.version)
                _dist_by_entry_point = table
    return table.get(f"{info.group}\0{info.name}\0{info.target}", ("unknown", ""))
