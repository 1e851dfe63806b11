"""Plugin folders: where a site's plugins live when they are not in the program's own Python environment.

A frozen release cannot see a site's pip packages, so both it and a pip
installation also read plugins from folders (docs/plugins.md):
`AICR_PLUGIN_PATH` (folders separated by `:`), else
`$XDG_DATA_HOME/kubectl-aicr/plugins/py<major>.<minor>` (`~/.local/share/...`).
Each folder is a site-packages folder of its own (`plugins install` unpacks
wheels into the first one), appended to `sys.path` before anything imports
stevedore, so its entry points are found, and fail closed, exactly as a pip
installation's. Appended, not prepended: a folder cannot shadow a module the
program carries.

Standard library only, and only its smallest parts: this runs in every start.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping

ENV = "AICR_PLUGIN_PATH"
BUILT_IN = "built-in"
ENVIRONMENT = "environment"
OWN_DISTRIBUTION = "kubectl-aicr"


def folders(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The plugin folders, first the one `plugins install` writes to; absolute paths, as configured."""
    configured = environ.get(ENV)
    if configured:
        return [os.path.abspath(os.path.expanduser(p)) for p in configured.split(os.pathsep) if p]
    data_home = environ.get("XDG_DATA_HOME") or ""
    if not os.path.isabs(data_home):  # the XDG specification: a relative value is ignored
        data_home = os.path.join(os.path.expanduser("~"), ".local", "share")
    return [os.path.join(data_home, "kubectl-aicr", "plugins", f"py{sys.version_info[0]}.{sys.version_info[1]}")]


def add_to_sys_path(environ: Mapping[str, str] = os.environ) -> None:
    """Append every plugin folder to sys.path (a folder that does not exist yet is harmless there)."""
    for folder in folders(environ):
        if folder not in sys.path:
            sys.path.append(folder)


def origin(distribution: str, location: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """Where a plugin came from: `built-in`, the plugin folder holding its distribution, or `environment`."""
    if distribution.lower().replace("_", "-") == OWN_DISTRIBUTION:
        return BUILT_IN
    if location is not None:
        here = os.path.realpath(location)
        for folder in folders(environ):
            if here == os.path.realpath(folder):
                return folder
    return ENVIRONMENT
