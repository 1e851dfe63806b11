"""`kubectl aicr version [--client]`."""
from __future__ import annotations

import argparse
from importlib import metadata
from typing import TYPE_CHECKING, Any

from aicr_commands import _fleet_forms as _fleet
from aicr_commands import _rollout_args as _rollouts
from aicr_core.errors import AicrError, Code
from aicr_core.fleet import selection as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession

DISTRIBUTION = "kubectl-aicr"


class Version(AicrCommand):
    """Print the versions of the plugin, Python and the Kubernetes client, and of the API server.

    Unless --client, asks the API server for its version (GET /version) and
    whether it serves operator.aicr.run/v1alpha1 RuntimeRollouts (one discovery
    request, GET /apis/operator.aicr.run/v1alpha1), with a warning on stderr
    when it does not: the AICR operator's CRDs are not installed there.

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

    def take_action(self, args: argparse.Namespace) -> Result:
        data = client_versions()
        client_name = f"clientversion/{data['client']['kubectlAicr'] or 'unknown'}"
        if args.client:
            fleet.refuse_fleet_flags(args, "version --client (it asks no cluster)")
            return Result("Version", data, names=(client_name,))
        if _fleet.read_form(args):
            return _fleet.gathered(self, _fleet.read(self, args), "VersionList", items_of=_fleet.whole_document)
        return self.take_action_on(args, _rollouts.session(args))

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

    return {"client": {
        "kubectlAicr": installed(DISTRIBUTION),
        "python": platform.python_version(),
        "kubernetesClient": installed("kubernetes"),
    }, "server": None}


def installed(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
