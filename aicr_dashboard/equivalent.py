"""The `kubectl aicr ...` command that does what a form does, for the change record: quoted as a shell reads it.

Made of the form's argv (`aicr_core.framework.write_form`: the values last submitted or checked; REASON in their place
before), the flags that reach the cluster (`--context C`; for a ClusterProfile member, which no
single-cluster command reaches, the fleet form: `--plan DIGEST`, the selection's own flags and
`--contexts MEMBER`) and the connection flags the dashboard was started with. Quoted with
`shlex.join`, as the CLI quotes the commands it suggests (aicr_core.fleet.context_source). A
`--token` the dashboard was given is shown as the placeholder TOKEN: no answer holds a credential.
"""
from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence

PLACEHOLDER_REASON = "REASON"
# The connection flags (argparse dest, flag); a switch is given alone, a list once per value.
CONNECTION = (("kubeconfig", "--kubeconfig"), ("operator_namespace", "--operator-namespace"),
              ("cluster", "--cluster"), ("user", "--user"), ("server", "--server"),
              ("tls_server_name", "--tls-server-name"), ("certificate_authority", "--certificate-authority"),
              ("insecure_skip_tls_verify", "--insecure-skip-tls-verify"), ("token", "--token"),
              ("client_certificate", "--client-certificate"), ("client_key", "--client-key"),
              ("as_user", "--as"), ("as_group", "--as-group"), ("as_uid", "--as-uid"),
              ("request_timeout", "--request-timeout"))
SECRET = frozenset({"token"})
NOT_SHOWN_DEFAULTS = {"operator_namespace": "aicr-system"}
SELECTION_LEFT_OUT = frozenset({"contexts", "all_contexts", "parallel", "plan", "waves", "yes"})


def connection_flags(args: argparse.Namespace) -> list[str]:
    """The connection flags given to the dashboard, as argv (the token as a placeholder)."""
    argv: list[str] = []
    for dest, flag in CONNECTION:
        value = getattr(args, dest, None)
        if value in (None, False, "", [], ()) or NOT_SHOWN_DEFAULTS.get(dest) == value:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            for one in value:
                argv += [flag, str(one)]
        elif dest == "request_timeout":  # parsed to seconds: given back as kubectl reads it
            argv += [flag, f"{value:g}s"]
        else:
            argv += [flag, "TOKEN" if dest in SECRET else str(value)]
    return argv


def selection_flags(args: argparse.Namespace) -> list[str]:
    """The fleet source's own flags the dashboard was given (`--cluster-profiles` and its friends)."""
    from aicr_core.fleet import flags as fleet

    argv: list[str] = []
    for dest, flag, off in fleet.fleet_flags():
        value = getattr(args, dest, off)
        if dest in SELECTION_LEFT_OUT or value in (None, False, off):
            continue
        argv += [flag] if value is True else [flag, str(value)]
    return argv


def reach_argv(context: str, single: bool, plan: str | None, args: argparse.Namespace,
               write: bool = True) -> tuple[list[str], bool]:
    """The argv that reaches the cluster and whether it is the fleet form (ROLLOUT replaced by --plan)."""
    if single:
        return ["--context", context], False
    return ["--plan", plan or "DIGEST", *selection_flags(args), "--contexts", context,
            *(["--yes"] if write else [])], True


def command(form_argv: Sequence[str], context: str, *, single: bool, plan: str | None,
            args: argparse.Namespace, check: bool = False) -> str:
    """`kubectl aicr ACTION ROLLOUT FLAGS... --context C CONNECTION...` for `form_argv` (ACTION ROLLOUT FLAGS...);
    `check`: the `policy check ROLLOUT --action ACTION ...` of the same inputs."""
    action, rollout, *rest = form_argv
    reach, fleet_form = reach_argv(context, single, plan, args, write=not check)
    head, tail = (["policy", "check"], ["--action", action]) if check else ([action], [])
    argv = [*head, *([] if fleet_form else [rollout]), *tail, *rest, *reach, *connection_flags(args)]
    return "kubectl aicr " + shlex.join(argv)


def placeholder_argv(action: str, rollout: str, takes_reason: bool) -> list[str]:
    """The form's argv before anything was submitted: REASON in place of the reason."""
    return [action, rollout, *(["--reason", PLACEHOLDER_REASON] if takes_reason else [])]

