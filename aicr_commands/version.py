"""`kubectl aicr version [--client]`."""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator
from importlib import metadata
from typing import TYPE_CHECKING, Any

from aicr_commands import _fleet_forms as _fleet
from aicr_commands import _rollout_args as _rollouts
from aicr_core.errors import AicrError, Code
from aicr_core.fleet import flags as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result, Stream

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession

DISTRIBUTION = "kubectl-aicr"
# Written by tools/release.py into the release it builds: the commit and its time. A checkout has none.
BUILD_STAMP = "aicr_core._build_stamp"


class Version(AicrCommand):
    """Print the versions of the plugin, Python and the Kubernetes client, and of the API server.

    The client's part says how this kubectl-aicr is installed (frozen: the
    release's program; pip: a Python environment), and the commit and build
    time of a release (unknown for a pip install from a checkout).

    Unless --client, asks the API server for its version (GET /version) and
    whether it serves operator.aicr.run/v1alpha1 RuntimeRollouts (one discovery
    request, GET /apis/operator.aicr.run/v1alpha1), with a warning on stderr
    when it does not: the AICR operator's CRDs are not installed there. When no
    cluster can be reached (no kubeconfig, say), the client's part is printed
    all the same, then the error.

    Examples:
      # Everything, including the cluster's side
      kubectl aicr version

      # Only what is installed here; no API request
      kubectl aicr version --client

      # Every cluster of the kubeconfig, each under a == CONTEXT == heading
      kubectl aicr version --all-contexts

    Codes:
      API
    """

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--client", action="store_true", help="only the local versions: no API request")
        fleet.add_selection_flags(parser)

    def take_action(self, args: argparse.Namespace) -> Result | Stream:
        data = client_versions()
        client_name = f"clientversion/{data['client']['kubectlAicr'] or 'unknown'}"
        if args.client:
            fleet.refuse_fleet_flags(args, "version --client (it asks no cluster)")
            return Result("Version", data, names=(client_name,))
        if _fleet.read_form(args):
            return fleet.read_across(self, args, "VersionList", items_of=fleet.whole_document)
        return Stream(self.client_even_without_a_cluster(args, Result("Version", data, names=(client_name,))))

    def client_even_without_a_cluster(self, args: argparse.Namespace, client_only: Result) -> Iterator[Result]:
        """The whole result; or, when the cluster cannot be asked, the client's part and then the error
        (as `kubectl version` does: what is known here is printed whatever the cluster's state)."""
        try:
            whole = self.take_action_on(args, _rollouts.session(args))
        except AicrError:
            yield client_only
            raise
        yield whole

    def take_action_on(self, args: argparse.Namespace, cluster: KubeSession) -> Result:
        """The versions of the client and of one cluster, on its session (the fleet passes each cluster's)."""
        from aicr_core.domain import operator_api as api

        data = client_versions()
        client_name = f"clientversion/{data['client']['kubectlAicr'] or 'unknown'}"
        info = cluster.get("/version")
        group_version = f"{api.GROUP}/{api.VERSION}"
        warnings: tuple[str, ...] = ()
        try:
            served: bool | None = api.serves_rollouts(cluster.get(api.group_version_path()))
        except AicrError as err:
            if err.code == Code.NOT_FOUND:
                served = False
            elif err.code == Code.FORBIDDEN:
                served = None
                warnings = (f"cannot tell whether {group_version} RuntimeRollouts are served: {err.message}",)
            else:
                raise
        if served is False:
            warnings = (f"the API server does not serve {group_version} RuntimeRollouts: "
                        "the AICR operator's CRDs are not installed on this cluster",)
        data["server"] = {
            "version": info.get("gitVersion") if isinstance(info.get("gitVersion"), str) else None,
            "operatorAPI": {"groupVersion": group_version, "runtimeRolloutsServed": served},
        }
        server_name = f"serverversion/{data['server']['version'] or 'unknown'}"
        return Result("Version", data, names=(client_name, server_name), warnings=warnings)


def client_versions() -> dict[str, Any]:
    """The version document without the server's side (`server` None)."""
    import platform  # here, not at the top: `help` imports every command module

    commit, build_time = build_stamp()
    return {"client": {
        "kubectlAicr": installed(DISTRIBUTION),
        "installed": "frozen" if getattr(sys, "frozen", False) else "pip",
        "commit": commit,
        "buildTime": build_time,
        "python": platform.python_version(),
        "kubernetesClient": installed("kubernetes"),
    }, "server": None}


def build_stamp() -> tuple[str | None, str | None]:
    """The commit a release was built from and its time (RFC 3339); (None, None) when not built by a release."""
    try:
        stamp = importlib.import_module(BUILD_STAMP)
    except ImportError:
        return None, None
    commit, build_time = getattr(stamp, "COMMIT", None), getattr(stamp, "BUILD_TIME", None)
    return (commit if isinstance(commit, str) else None), (build_time if isinstance(build_time, str) else None)


def installed(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
