"""Choosing the clusters of one command: the fleet flags, the contexts they pick, their completion.

`--contexts LIST` (names and shell-style globs, `!` excludes) or `--all-contexts` chooses
members of the fleet's source (aicr_core.fleet.sources): kubeconfig contexts, taken in the merged
kubeconfig's order, or with `--cluster-profiles` the ClusterProfiles of a hub; `--parallel N`
bounds how many clusters are worked on at once. Running the command on them is `fan_out`'s.

Imported by command modules at module level (`help` imports them for their summaries), so this
module imports only the standard library and the errors: no dataclass, thread or session.
"""
from __future__ import annotations

import argparse
import fnmatch
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from aicr_core.errors import UsageError, shown

if TYPE_CHECKING:
    from aicr_core.fleet.sources import Members

DEFAULT_PARALLEL = 16
PLAN_DIGEST = r"^sha256:[0-9a-f]{64}$"  # compiled on first use, not by `help`
# The connection flags each cluster's own kubeconfig entry decides (argparse dest, flag name).
PER_CLUSTER_FLAGS = (("server", "--server"), ("token", "--token"), ("user", "--user"), ("cluster", "--cluster"),
                     ("certificate_authority", "--certificate-authority"),
                     ("client_certificate", "--client-certificate"), ("client_key", "--client-key"),
                     ("tls_server_name", "--tls-server-name"),
                     ("insecure_skip_tls_verify", "--insecure-skip-tls-verify"))
# The fleet's own flags (argparse dest, flag name, its value when not given); each source adds its own
# (aicr_core.fleet.sources: `FLAGS`).
FLEET_FLAGS: tuple[tuple[str, str, Any], ...] = (
    ("contexts", "--contexts", None), ("all_contexts", "--all-contexts", False), ("parallel", "--parallel", None),
    ("plan", "--plan", None), ("waves", "--waves", None), ("yes", "--yes", False))


# -- the flags ----------------------------------------------------------------------------------

def parallel_count(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"invalid --parallel {shown(text)}: a whole number of clusters, at least 1")
    return int(text)


def plan_digest(text: str) -> str:
    if not re.fullmatch(PLAN_DIGEST, text):
        raise argparse.ArgumentTypeError(f"invalid --plan {shown(text)}: a full plan digest, sha256: and 64 "
                                         "lowercase hex digits")
    return text


def add_selection_flags(parser: argparse.ArgumentParser) -> None:
    """--contexts, --all-contexts, --parallel, and each source's flags (--cluster-profiles and its friends):
    for the commands that may run across clusters."""
    group = parser.add_argument_group("fleet: one command across the kubeconfig's clusters")
    action = group.add_argument("--contexts", metavar="LIST",
                                help="comma-separated context names and globs (gpu-prod-*); !PATTERN excludes; "
                                     "with --cluster-profiles, NAMESPACE/NAME of profiles")
    action.completer = complete_contexts  # type: ignore[attr-defined]
    group.add_argument("--all-contexts", action="store_true", help="every context of the kubeconfig")
    group.add_argument("--parallel", metavar="N", type=parallel_count,
                       help=f"at most N clusters at once (default {DEFAULT_PARALLEL})")
    from aicr_core.fleet import sources

    for source in sources.every():  # each source's own flags (a hub's ClusterProfiles: --cluster-profiles ...)
        source.add_flags(parser)


def add_plan_flags(parser: argparse.ArgumentParser, plans: Callable[..., Any] | None = None, *,
                   waves: bool = False, yes: bool = True) -> None:
    """--plan DIGEST (completed by `plans`), --yes for writes, --waves FILE for approve: the fleet form of a command."""
    group = parser.add_argument_group("fleet writes")
    action = group.add_argument("--plan", metavar="DIGEST", type=plan_digest,
                                help="in place of ROLLOUT: the open rollout to this plan in each selected cluster")
    action.completer = plans  # type: ignore[attr-defined]
    if waves:
        group.add_argument("--waves", metavar="FILE",
                           help="approve wave by wave as FILE says (a Waves document), stopping at failures")
    if yes:
        group.add_argument("--yes", action="store_true",
                           help="write without asking (needed when stdin or stderr is no terminal)")


def fleet_flags() -> tuple[tuple[str, str, Any], ...]:
    """Every fleet flag (dest, flag name, its value when not given): the fleet's own, then each source's."""
    from aicr_core.fleet import sources

    return FLEET_FLAGS + tuple(flag for source in sources.every() for flag in source.FLAGS)


def selected(args: argparse.Namespace) -> bool:
    """Whether the command runs across clusters (--contexts, --all-contexts, --waves, or a source's flag)."""
    from aicr_core.fleet import sources

    return bool(getattr(args, "contexts", None) is not None or getattr(args, "all_contexts", False)
                or getattr(args, "waves", None) is not None
                or any(getattr(args, dest, None) not in (None, False)
                       for source in sources.every() for dest, _flag, _off in source.FLAGS))


def given_flags(args: argparse.Namespace) -> list[str]:
    """The fleet flags given, by name."""
    given = []
    for dest, flag, _off in fleet_flags():
        value = getattr(args, dest, None)
        if value not in (None, False):
            given.append(flag)
    return given


def refuse_fleet_flags(args: argparse.Namespace, form: str) -> None:
    """A fleet flag on a form that does not take it: [USAGE], never ignored."""
    given = given_flags(args)
    if given:
        raise UsageError(f"{given[0]} cannot be used with {form}")


def check_selection(args: argparse.Namespace) -> None:
    """The [USAGE] rules of choosing clusters, before any call (the contexts themselves: `choose`)."""
    from aicr_core.fleet import sources

    for each in sources.every():  # each source refuses its own flags when it is not the one chosen
        each.check_flags(args)
    source = sources.chosen(args)
    fleet_flag = source.flag(args)
    if getattr(args, "waves", None) is not None:
        for other in ("contexts", "all_contexts"):
            if getattr(args, other, None) not in (None, False):
                raise UsageError(f"--{other.replace('_', '-')} cannot be used with --waves: the waves choose the "
                                 "clusters")
    if getattr(args, "contexts", None) is not None and getattr(args, "all_contexts", False):
        raise UsageError("--contexts and --all-contexts cannot be used together")
    if getattr(args, "context", None) and not source.HUB_CONTEXT:  # else it names the hub
        raise UsageError(f"--context cannot be used with {fleet_flag}: it chooses one cluster")
    for dest, flag in PER_CLUSTER_FLAGS:
        if getattr(args, dest, None):
            raise UsageError(f"{flag} cannot be used with {fleet_flag}: {source.DECIDES} it (only --as, --as-group, "
                             "--as-uid and --request-timeout apply to all)")
    if getattr(args, "contexts", None) is not None:
        patterns(args.contexts)


def patterns(text: str) -> list[str]:
    """`a,gpu-*,!gpu-lab-*` -> its entries; an empty list or entry is [USAGE]."""
    entries = [entry.strip() for entry in text.split(",")]
    if not text.strip() or all(not entry for entry in entries):
        raise UsageError("--contexts needs at least one context name or pattern")
    if any(not entry or entry == "!" for entry in entries):
        raise UsageError(f"--contexts {shown(text)} has an empty entry")
    return entries


def matches(name: str, pattern: str) -> bool:
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def choose(names: Sequence[str], entries: Sequence[str], what: str = "--contexts", kind: str = "context",
           among: str = "of the kubeconfig") -> list[str]:
    """The members `entries` select, in their order (the kubeconfig's): names and globs, `!` excluding.

    Only exclusions: every member but those. Any entry that matches no member is [USAGE]
    (a typo must not shrink the fleet silently), and so is a selection left empty. `kind` and
    `among` say what the names are, for messages ("context" "of the kubeconfig").
    """
    include = [e for e in entries if not e.startswith("!")]
    exclude = [e[1:] for e in entries if e.startswith("!")]
    for entry in [*include, *exclude]:
        if not any(matches(name, entry) for name in names):
            raise UsageError(f"{what}: {shown(entry)} matches no {kind} {among}")
    chosen = [name for name in names if (not include or any(matches(name, e) for e in include))
              and not any(matches(name, e) for e in exclude)]
    if not chosen:
        raise UsageError(f"{what} selects no {kind}")
    return chosen


def chosen_members(args: argparse.Namespace, members: Members, kind: str) -> list[str]:
    """The members --contexts/--all-contexts choose of the source's (every one without --contexts)."""
    if getattr(args, "contexts", None) is not None:
        return choose(members.names, patterns(args.contexts), kind=kind, among=members.among)
    if not members.names:
        raise UsageError(f"--all-contexts: no {kind} {members.among}")
    return list(members.names)


def parallel_of(args: argparse.Namespace) -> int:
    return int(getattr(args, "parallel", None) or DEFAULT_PARALLEL)


# -- completion ------------------------------------------------------------------------------------

def complete_contexts(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
    """`--contexts a,b<TAB>`: the context names not yet in the list, after what is typed (with
    --cluster-profiles: the NAMESPACE/NAME of the hub's profiles, as --profile-namespace and
    --profile-selector keep them)."""
    from aicr_core.fleet import sources
    from aicr_core.framework.completion import NO_FILES, NO_SPACE, Candidates

    done, _comma, current = prefix.rpartition(",")
    lead = f"{done}," if done else ""
    typed = {entry.lstrip("!") for entry in done.split(",") if entry}
    negate = "!" if current.startswith("!") else ""
    names = sources.chosen(parsed_args).complete(parsed_args)
    words = [f"{lead}{negate}{name}" for name in names
             if name not in typed and f"{negate}{name}".startswith(current)]
    return Candidates(words, NO_SPACE | NO_FILES)
