"""`kubectl aicr plugins`: every plugin, where it comes from, whether it loads, and what the policy file makes of it;
`plugins install WHEEL...` and `plugins uninstall NAME` of a plugin folder."""
from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_commands import _rollout_args as _rollouts
from aicr_core import entry_points, plugin_folders
from aicr_core.errors import AicrError, UsageError
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result

if TYPE_CHECKING:
    from aicr_core.domain.policy_engine import PolicyEngine


SUBCOMMANDS = ("install", "uninstall")
NOT_MODULES = ("bin", "include", "data", "__pycache__")  # the folders plugins install puts the other schemes in


class Plugins(AicrCommand):
    """List installed plugins with their distribution, version, origin and load status, and each policy's mode.

    Every entry point is listed (a write input, aicr.write_inputs, failed when it
    is no valid WriteInput), cliff's CommandHooks (aicr.commands.NAME) too,
    and after them the distributions of the plugin folders that declare none.
    ORIGIN says where a plugin came from, by where its distribution lies:
    built-in, the plugin folder that holds it, or the Python environment
    (pip). A policy's ACTIVE and MODE come
    from the cluster's policy file (one GET; --policy-file PATH reads a local
    one instead); when it cannot be read they show "-" and the last line says
    why.

    plugins install WHEEL...
      Installs a site's wheels into the first plugin folder (AICR_PLUGIN_PATH,
      folders separated by ":", else $XDG_DATA_HOME/kubectl-aicr/plugins/py3.N),
      which the frozen program and a pip installation both read: no pip, no
      network, and without running any plugin's code. Refused with [USAGE],
      installing nothing: a wheel this Python or platform cannot run, a
      requirement that the program and the folder do not meet, a distribution
      the program carries, a module that would shadow one the program can
      import, a wheel past the install bounds (docs/plugins.md). All or
      nothing.

    plugins uninstall NAME
      Removes the distribution NAME and every file it installed from the
      first plugin folder, and nothing else.

    Examples:
      # What is installed, and does it load?
      kubectl aicr plugins

      # The same for a script, with the modes a local policy file would set
      kubectl aicr plugins --policy-file policy.yaml -o json

      # A site's plugins, into the release's program
      kubectl aicr plugins install ./aicr_site_example-1.0.0-py3-none-any.whl

    Codes:
      API
    """

    uses_flags = ("operator_namespace", "policy_file")

    def _load_hooks(self) -> None:
        """No plugin's CommandHook runs in `plugins`, and a name the program declares (this command, its
        renderers and layouts) is the program's: managing the plugins runs none of their code, so that no
        plugin can refuse its own removal."""
        entry_points.prefer_built_in()
        self._hooks = []

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        subcommand = parser.add_argument("subcommand", metavar="install|uninstall", nargs="?", choices=SUBCOMMANDS,
                                         help="install wheels into the plugin folder, or uninstall one")
        subcommand.completer = lambda prefix, **_: [s for s in SUBCOMMANDS if s.startswith(prefix)]  # type: ignore[attr-defined]
        parser.add_argument("targets", metavar="WHEEL|NAME", nargs="*",
                            help="install: the wheel files; uninstall: the distribution's name")

    def result_kinds(self, parsed_args: argparse.Namespace) -> tuple[str, ...] | None:
        return ("PluginChange",) if parsed_args.subcommand else ("PluginList",)

    def take_action(self, args: argparse.Namespace) -> Result:
        if args.subcommand == "install":
            return install(args.targets)
        if args.subcommand == "uninstall":
            return uninstall(args.targets)
        if args.targets:
            raise UsageError(f"plugins takes no argument but install|uninstall: {args.targets[0]!r}")
        return self.listing(args)

    def listing(self, args: argparse.Namespace) -> Result:
        from aicr_core.domain.policy_engine import PolicyEngine, load_policies

        # The policy loader imports, registers and validates (check_pending) every policy: its
        # failures are the policies' status; importing them again here would only repeat that.
        loaded = load_policies()
        engine: PolicyEngine | None = None
        policy_file: dict[str, Any]
        try:
            from aicr_core.domain import rollouts

            text, source = (rollouts.read_local_policy_file(args.policy_file) if args.policy_file
                            else rollouts.read_policy_file(_rollouts.session(args)))
            engine = PolicyEngine.build(loaded, text, source)
            policy_file = {"source": source, "found": text is not None, "digest": engine.digest,
                           "error": f"does not validate ({len(engine.problems)} problem(s)): every approval, "
                                    "revocation and acknowledgement is refused; run kubectl aicr policy validate"
                           if engine.problems else None}
        except AicrError as err:
            policy_file = {"source": args.policy_file or "the cluster's policy file",
                           "found": None, "digest": None, "error": f"[{err.code}] {err.message}"}
        rows: list[dict[str, Any]] = []
        commands = entry_points.PluginGroup(entry_points.COMMANDS)
        for group_name in [*entry_points.GROUPS, *hook_groups()]:
            group = entry_points.PluginGroup(group_name)
            conflicts = group.conflicts()
            for name in group.names():
                for info in group.infos(name):
                    distribution, version = entry_points.distribution_and_version(info)
                    status, error = "ok", None
                    if group_name == entry_points.POLICIES:
                        if name in loaded.failures:
                            status, error = "failed", loaded.failures[name]
                    else:
                        try:
                            loaded_object = entry_points.load_target(info)
                        except AicrError as err:
                            status, error = "failed", err.message
                        else:
                            if group_name == entry_points.WRITE_INPUTS:
                                from aicr_core.write_inputs import problem_of  # a dataclass: not for `help`

                                error = problem_of(loaded_object)
                                status = "failed" if error else "ok"
                    hooked = group_name.removeprefix(entry_points.HOOKS_PREFIX)
                    if group_name.startswith(entry_points.HOOKS_PREFIX) and status == "ok":
                        if hooked == "plugins":
                            status, error = "ignored", "the plugins command runs no hook of a plugin"
                        elif hooked not in commands:
                            status, error = "ignored", f"no command {hooked!r} is installed"
                    if name in conflicts:
                        status, error = "conflict", "also claimed by " + ", ".join(
                            i.target for i in conflicts[name] if i is not info)
                    rows.append({"group": group_name, "name": name, "target": info.target,
                                 "distribution": distribution, "version": version,
                                 "origin": entry_points.origin(info), "status": status, "error": error,
                                 **policy_columns(engine, name if group_name == entry_points.POLICIES else None)})
        quiet = [{"distribution": d.name, "version": d.version, "origin": d.origin, "modules": list(d.modules)}
                 for d in distributions_without_entry_points()]
        return Result("PluginList", {"plugins": rows, "policyFile": policy_file, "withoutEntryPoints": quiet},
                      names=tuple(f"{row['group']}/{row['name']}" for row in rows))


def policy_columns(engine: PolicyEngine | None, policy: str | None) -> dict[str, Any]:
    """`active`, `mode`, `overridable`, `activation` of a policy; null for other plugins or when unknown."""
    setup = engine.setup(policy) if engine is not None and policy is not None and not engine.problems else None
    if setup is None:
        return {"active": None, "mode": None, "overridable": None, "activation": None}
    return {"active": setup.active, "mode": setup.mode if setup.active else None,
            "overridable": setup.overridable if setup.active else None, "activation": setup.why}


def hook_groups() -> list[str]:
    """cliff's CommandHook groups (`aicr.commands.NAME`) and any other `aicr.*` group a distribution declares."""
    return [g for g in entry_points.groups() if g not in entry_points.GROUPS]


def top_level_modules(files: Iterable[Any]) -> tuple[str, ...]:
    """What a distribution's files make importable at the top: its packages and its modules."""
    names: set[str] = set()
    for file in files:
        first, _, rest = str(file).partition("/")
        if rest and first not in NOT_MODULES and not first.endswith((".dist-info", ".data")):
            names.add(first)
        elif not rest and first.endswith((".py", ".so", ".pyd")):
            names.add(first.split(".", 1)[0])
    return tuple(sorted(names))


class QuietDistribution(NamedTuple):
    name: str
    version: str
    origin: str
    modules: tuple[str, ...]


def distributions_without_entry_points() -> list[QuietDistribution]:
    """The distributions of the plugin folders that declare no `aicr.*` entry point: code that is importable
    (a dependency, or a module that waits to be imported by name) though no plugin names it."""
    from aicr_core.entry_points_cache import name_and_version

    declaring = {(d[0], d[2]) for d in entry_points.table().distributions}
    found: list[QuietDistribution] = []
    for folder in plugin_folders.folders():
        if not Path(folder).is_dir():
            continue
        for dist in importlib.metadata.distributions(path=[folder]):
            name, version = name_and_version(dist)
            if (name, str(dist.locate_file(""))) in declaring:
                continue
            found.append(QuietDistribution(name, version, folder, top_level_modules(dist.files or ())))
    return sorted(found)


def install(targets: list[str]) -> Result:
    from aicr_core.framework import plugin_wheels

    if not targets:
        raise UsageError("plugins install needs one or more wheel files")
    folder, installed = plugin_wheels.install([Path(target) for target in targets])
    return Result("PluginChange", {"action": "install", "folder": folder,
                                   "distributions": [{"name": d.name, "version": d.version} for d in installed]},
                  names=tuple(f"distribution/{d.name}" for d in installed))


def uninstall(targets: list[str]) -> Result:
    from aicr_core.framework import plugin_wheels

    if len(targets) != 1:
        raise UsageError("plugins uninstall needs exactly one distribution name")
    folder, removed = plugin_wheels.uninstall(targets[0])
    return Result("PluginChange", {"action": "uninstall", "folder": folder,
                                   "distributions": [{"name": removed.name, "version": removed.version}]},
                  names=(f"distribution/{removed.name}",))
