"""The fleet's command-line side: its flags, the selection and the write request made of them, and the terminal.

The rest of the fleet speaks values (a `Fleet`, a `WriteRequest`, callbacks, items); this module
is the one that speaks argparse and the terminal, for the commands that run across clusters:

- the flags: `--contexts`, `--all-contexts`, `--parallel` and each source's own (declared as data,
  `sources.Flag`: turned into argparse flags here, with their completion, and back into the plain
  mapping a source reads, `values`), `--plan`, `--waves`, `--yes`; the [USAGE] rules of choosing
  clusters (`check_selection`) and of a write's inputs (`check_inputs`, `check_confirmation`);
- the selection (`selection`: the `Fleet` the flags choose) and the one write request
  (`request_of`: built once for every cluster, --policy-file read once);
- a fleet read in one call (`read_across`: the command's single-cluster body per cluster,
  gathered into one document), a fleet write (`fleet_write`) and the waves (`approve_in_waves`):
  confirmation at the terminal (stdin, stderr), the listing, the progress line
  (aicr_core.fleet.progress_line), the signals taken over (aicr_core.framework.interruption), and
  the fleet's `Result` or `Stream`.

Command modules import it at their top (`help` imports them for their summaries), so its top is
as light as the choosing of clusters: the standard library's argparse and the errors; the running
is imported inside the functions that run.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from aicr_core.errors import UsageError, shown
from aicr_core.fleet.selection import DEFAULT_PARALLEL

if TYPE_CHECKING:
    from aicr_core.domain.actions import Action
    from aicr_core.domain.rollout_write import WriteRequest
    from aicr_core.fleet.fan_out import Fleet, Outcome, Turn
    from aicr_core.fleet.progress_line import ProgressLine
    from aicr_core.fleet.sources import Members
    from aicr_core.fleet.write_items import Confirmation, FleetWritten
    from aicr_core.framework.command import AicrCommand
    from aicr_core.framework.interruption import Interruption
    from aicr_core.framework.result import Progress, Result, Stream

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
PROGRESS_FROM = 5  # clusters: a fleet this large shows the progress line on a terminal


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

    for source in sources.every():  # each source's own flags, from its data (a hub's: --cluster-profiles ...)
        if not source.FLAGS:
            continue
        own = parser.add_argument_group(source.GROUP)
        for flag in source.FLAGS:
            if flag.default is False:  # a switch
                own.add_argument(flag.flag, dest=flag.name, action="store_true", help=flag.help)
                continue
            action = own.add_argument(flag.flag, dest=flag.name, metavar=flag.metavar, default=flag.default,
                                      help=flag.help)
            if flag.complete is not None:
                action.completer = source_completer(flag.complete)  # type: ignore[attr-defined]


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

    return FLEET_FLAGS + tuple((f.name, f.flag, f.default) for source in sources.every() for f in source.FLAGS)


def values(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed flags as the plain mapping a source reads (aicr_core.fleet.sources): every fleet flag by its
    name, `kubeconfig`, `context` and the command's connection `overrides`."""
    from aicr_core.session.connection_flags import Overrides

    return {**{dest: getattr(args, dest, off) for dest, _flag, off in fleet_flags()},
            "kubeconfig": getattr(args, "kubeconfig", None), "context": getattr(args, "context", None),
            "overrides": Overrides.from_args(args)}


def selected(args: argparse.Namespace) -> bool:
    """Whether the command runs across clusters (--contexts, --all-contexts, --waves, or a source's flag)."""
    from aicr_core.fleet import sources

    return bool(getattr(args, "contexts", None) is not None or getattr(args, "all_contexts", False)
                or getattr(args, "waves", None) is not None
                or any(getattr(args, flag.name, None) not in (None, False)
                       for source in sources.every() for flag in source.FLAGS))


def given_flags(args: argparse.Namespace) -> list[str]:
    """The fleet flags given, by name."""
    return [flag for dest, flag, _off in fleet_flags() if getattr(args, dest, None) not in (None, False)]


def refuse_fleet_flags(args: argparse.Namespace, form: str) -> None:
    """A fleet flag on a form that does not take it: [USAGE], never ignored."""
    given = given_flags(args)
    if given:
        raise UsageError(f"{given[0]} cannot be used with {form}")


def check_selection(args: argparse.Namespace) -> None:
    """The [USAGE] rules of choosing clusters, before any call (the contexts themselves: `selection`)."""
    from aicr_core.fleet import sources
    from aicr_core.fleet.selection import patterns

    given = values(args)
    for each in sources.every():  # each source refuses its own flags when it is not the one chosen
        each.check_flags(given)
    source = sources.chosen(given)
    fleet_flag = source.flag(given)
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


def parallel_of(args: argparse.Namespace) -> int:
    return int(getattr(args, "parallel", None) or DEFAULT_PARALLEL)


# -- completion ------------------------------------------------------------------------------------

def complete_contexts(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
    """`--contexts a,b<TAB>`: the context names not yet in the list, after what is typed (with
    --cluster-profiles: the NAMESPACE/NAME of the hub's profiles, as --profile-namespace and
    --profile-selector keep them)."""
    from aicr_core.fleet import sources
    from aicr_core.framework.completion import API_SECONDS, NO_FILES, NO_SPACE, Candidates

    done, _comma, current = prefix.rpartition(",")
    lead = f"{done}," if done else ""
    typed = {entry.lstrip("!") for entry in done.split(",") if entry}
    negate = "!" if current.startswith("!") else ""
    given = values(parsed_args)
    names = sources.chosen(given).complete(given, API_SECONDS)
    words = [f"{lead}{negate}{name}" for name in names
             if name not in typed and f"{negate}{name}".startswith(current)]
    return Candidates(words, NO_SPACE | NO_FILES)


def source_completer(complete: Callable[[str, Mapping[str, Any], float], list[str]]) -> Callable[..., Any]:
    """A source flag's completer (prefix, values, seconds) as the completion framework calls one."""
    def completer(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
        from aicr_core.framework.completion import API_SECONDS, NO_FILES, Candidates

        return Candidates(complete(prefix, values(parsed_args), API_SECONDS), NO_FILES)
    return completer


# -- the selection ------------------------------------------------------------------------------------

def selection(args: argparse.Namespace, contexts: list[str] | None = None, members: Members | None = None) -> Fleet:
    """The `Fleet` the flags choose: the members the flags choose of the source they choose (reading them may
    be a call: a hub's ClusterProfiles), unless `members` is given; or `contexts` of them."""
    from aicr_core.fleet import sources
    from aicr_core.fleet.fan_out import Fleet
    from aicr_core.session.connection_flags import Overrides

    given = values(args)
    source = sources.chosen(given)
    if members is None:
        members = source.members(given)
    overrides = Overrides.from_args(args)._replace(context=None)
    if contexts is not None:
        return Fleet(source, members, overrides, list(contexts), parallel_of(args))
    return Fleet.chosen(source, members, overrides, contexts=getattr(args, "contexts", None),
                        parallel=parallel_of(args))


def progress_line(command: AicrCommand, args: argparse.Namespace, clusters: int) -> ProgressLine | None:
    """The progress line of a fleet of `clusters`: only on a terminal (stderr), for PROGRESS_FROM clusters or
    more, and only under the text table (any other -o is for a program, or a person reading it whole)."""
    if clusters < PROGRESS_FROM or getattr(args, "output", "text") != "text" or not command.app.stderr.isatty():
        return None
    from aicr_core.fleet.progress_line import ProgressLine

    return ProgressLine(command.app.stderr)


# -- a fleet read --------------------------------------------------------------------------------------

class _ClusterApp:
    """What a command may use of the app, for one cluster's run: its warnings are kept for that cluster."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def cluster_args(args: argparse.Namespace, context: str | None, **changes: Any) -> argparse.Namespace:
    """The arguments of one cluster's command: no fleet flags (each as when not given), its context."""
    single = {dest: off for dest, _flag, off in fleet_flags()}
    return argparse.Namespace(**{**vars(args), **single, "context": context, **changes})


def run_single(command: AicrCommand, args: argparse.Namespace, turn: Turn, **changes: Any) -> Result:
    """The command's single-cluster body on this cluster's session; its warnings prefixed with the context."""
    from aicr_core.errors import AicrError, Code
    from aicr_core.framework.result import Result

    app = _ClusterApp()
    one = type(command)(app, None)  # type: ignore[arg-type]  # no cmd_name: the fleet's hooks ran once already
    result = one.take_action_on(cluster_args(args, turn.context, **changes), turn.session)
    if not isinstance(result, Result):
        raise AicrError(Code.INTERNAL, f"{type(command).__name__} returned no Result across clusters")
    return prefixed(result, turn.context, app.warnings)


def prefixed(result: Result, context: str, more: list[str] | tuple[str, ...] = ()) -> Result:
    """A cluster's result with its warnings (and `more` of them) prefixed with its context."""
    from aicr_core.framework.result import Result

    warnings = tuple(f"context {context}: {w}" for w in (*more, *result.warnings))
    return Result(result.kind, result.data, result.exit_code, result.names, warnings)


def report_errors(command: AicrCommand, outcomes: list[Outcome[Any]]) -> None:
    """`error: [CODE] context NAME: message` on stderr for each cluster that failed (the app's error line)."""
    from aicr_core.errors import AicrError
    from aicr_core.fleet.gathering import one_line

    for outcome in outcomes:
        if outcome.error is not None:  # one line a cluster: detail lines joined into it
            command.app.print_error(AicrError(outcome.error.code, f"context {outcome.context}: "
                                              f"{one_line(outcome.error, outcome.context)}"))


def read_across(command: AicrCommand, args: argparse.Namespace, kind: str, *,
                items_of: Callable[[str, Result], list[dict[str, Any]]],
                single: Callable[[Turn], Result] | None = None) -> Result:
    """A fleet read in one call: the command run per selected cluster (`single`, else its take_action_on as is),
    gathered into one `kind` document: every cluster's items (each with `context`), `errors`, and the
    clusters `read` (each that answered, in order: with no item, "none there" is then an answer); exit 1
    when any failed. SIGTERM stops it as Ctrl-C does, `error: [INTERRUPTED]` (exit 143)."""
    from aicr_core.fleet import gathering
    from aicr_core.framework.interruption import terminated_as_interrupted
    from aicr_core.framework.result import Result

    with terminated_as_interrupted():
        fleet = selection(args)
        line = progress_line(command, args, len(fleet.contexts))
        try:
            outcomes = gathering.read(fleet, single or (lambda turn: run_single(command, args, turn)),
                                      progress=line.show if line else None)
        finally:
            if line:
                line.end()
    report_errors(command, outcomes)
    items: list[dict[str, Any]] = []
    names: list[str] = []
    warnings: list[str] = []
    failed = False
    for outcome in outcomes:
        if outcome.value is None:
            failed = True
            continue
        items += items_of(outcome.context, outcome.value)
        names += [f"{outcome.context}/{name}" for name in outcome.value.names]
        warnings += outcome.value.warnings
        failed = failed or outcome.value.exit_code != 0
    errors = [gathering.error_entry(o) for o in outcomes if o.error is not None]
    read_ones = [o.context for o in outcomes if o.value is not None]
    return Result(kind, {"items": items, "errors": errors, "read": read_ones}, 1 if failed else 0, tuple(names),
                  tuple(warnings))


def each_item(context: str, result: Result) -> list[dict[str, Any]]:
    """list: the cluster's items, each with its context first."""
    return [{"context": context, **item} for item in result.data.get("items") or []]


def whole_document(context: str, result: Result) -> list[dict[str, Any]]:
    """version, policy check: the cluster's usual document (kind included), with its context."""
    return [{"kind": result.kind, "context": context, **result.data}]


# -- a fleet write ----------------------------------------------------------------------------------

def check_inputs(args: argparse.Namespace, action: Action) -> None:
    """What the single-cluster command checks before its first call, checked once for the fleet."""
    from aicr_core import clock
    from aicr_core.domain.write_flags import dry_run
    from aicr_core.domain.write_limits import check_expires, check_reason

    if action.takes_reason:
        check_reason(args.reason, action.name)
    if action.takes_expires:
        check_expires(args.expires, clock.now())
    if getattr(args, "policy_file", None) and dry_run(vars(args)) == "none":
        raise UsageError(f"--policy-file only tries a policy file: use it with --dry-run=client|server; "
                         f"a real {action.name} always follows each cluster's policy file")


def interactive() -> bool:
    """Whether a fleet write may ask at the terminal: the process owner allows prompts (the command line's owner
    does when stdin is a terminal; a server's never does) and stderr, where the question is written, is one."""
    from aicr_core import process_owner

    return process_owner.current().prompts_allowed() and sys.stderr.isatty()


def check_confirmation(args: argparse.Namespace, action: Action) -> None:
    """Without a terminal to ask at, a real write needs --yes: [USAGE] before any call, nothing written."""
    from aicr_core.domain.write_flags import dry_run

    if dry_run(vars(args)) == "none" and not args.yes and not interactive():
        raise UsageError(f"{action.name} --plan writes in several clusters: pass --yes to confirm "
                         "(stdin or stderr is no terminal to ask at); nothing was written")


def request_of(args: argparse.Namespace, action: Action) -> WriteRequest:
    """The one request of a fleet's write, built once from the flags (--policy-file read once): the flags the
    policies see are a single cluster's (no fleet flag); each cluster replaces its rollout and context."""
    from aicr_core.domain.write_flags import write_request

    return write_request(vars(cluster_args(args, None)), action)


def tell(command: AicrCommand, text: str) -> None:
    """`text` on stderr, made safe for a terminal (the listing before a fleet's write)."""
    from aicr_core.framework.terminal import safe

    command.app.stderr.write(safe(text))
    command.app.stderr.flush()


def ask(command: AicrCommand, question: str, stop: Interruption) -> bool:
    """Ask at the terminal (stderr, stdin): y or yes goes ahead; a signal there (`stop` records it) does not."""
    from aicr_core.framework.interruption import Interrupted

    command.app.stderr.write(f"{question} [y/N] ")
    command.app.stderr.flush()
    try:
        with stop.prompting():
            answer = sys.stdin.readline()
    except Interrupted:
        command.app.stderr.write("\n")
        return False
    return answer.strip().lower() in ("y", "yes")


def at_the_terminal(command: AicrCommand, stop: Interruption, line: ProgressLine | None
                    ) -> Callable[[Confirmation], bool]:
    """The confirm callback of the command line: the listing and the warnings on stderr, then the question."""
    def confirm(shown: Confirmation) -> bool:
        if line:
            line.end()
        if shown.listing:
            tell(command, "\n".join(shown.listing) + "\n")
        for warning in shown.warnings:
            command.app.warn(warning)
        return ask(command, shown.question, stop) if shown.question else True
    return confirm


def fleet_write(command: AicrCommand, args: argparse.Namespace, action: Action) -> Result:
    """`approve|revoke|acknowledge --plan DIGEST --contexts ...`: one result a cluster (FleetWrite).

    A signal on the way (SIGINT, SIGTERM) is recorded, not raised: the result is printed all the same.
    """
    from aicr_core.fleet import plan_write
    from aicr_core.framework.interruption import deferred

    check_inputs(args, action)
    check_confirmation(args, action)
    request = request_of(args, action)
    with deferred() as stop:
        fleet = selection(args)
        line = progress_line(command, args, len(fleet.contexts))
        try:
            written = plan_write.fleet_write(fleet, request, args.plan, confirm=at_the_terminal(command, stop, line),
                                             ask=not args.yes, interruption=stop,
                                             progress=line.show if line else None)
        finally:
            if line:
                line.end()
        result = written_result(command, written)
        if written.interrupted:  # after the clusters' error lines: one line saying so
            from aicr_core.fleet.write_items import interrupted_line

            tell(command, interrupted_line(written) + "\n")
        return result


def written_result(command: AicrCommand, written: FleetWritten) -> Result:
    """The FleetWrite document; `error:` lines for the clusters that failed; its exit code."""
    from aicr_core.domain import operator_api as api
    from aicr_core.errors import AicrError
    from aicr_core.framework.result import Result

    errors = written.errors
    for entry in errors:
        command.app.print_error(AicrError(entry["code"], f"context {entry['context']}: {entry['message']}"))
    names = tuple(f"{i['context']}/{api.rollout_reference(i['rollout'])}" for i in written.items if i["rollout"])
    return Result("FleetWrite", {"items": written.items, "errors": errors}, written.exit_code, names,
                  tuple(written.warnings))


def approve_in_waves(command: AicrCommand, args: argparse.Namespace) -> Stream:
    """Everything that can be refused is refused here, before any call; the waves run as the stream is read."""
    from aicr_core.domain.actions import APPROVE
    from aicr_core.fleet import sources, waves_file
    from aicr_core.framework.result import Stream

    plan = waves_file.load(args.waves)
    given = values(args)
    source = sources.chosen(given)
    waves_file.check_selectors(plan, source.LABELLED, args.waves)
    check_inputs(args, APPROVE)
    check_confirmation(args, APPROVE)
    request = request_of(args, APPROVE)
    members = source.members(given)  # a hub is read here (a call): after every check that needs none
    assignment = waves_file.assign(plan, members.names, members.labels, kind=source.KIND, among=members.among)
    contexts = [context for _, members_of_wave in assignment for context in members_of_wave]
    fleet = selection(args, contexts, members)
    return Stream(waves_stream(command, args, fleet, plan, assignment, request))


def waves_stream(command: AicrCommand, args: argparse.Namespace, fleet: Fleet, plan: Any,
                 assignment: Any, request: WriteRequest) -> Iterator[Result | Progress]:
    """The waves' events as the stream's Progress lines (the progress line cleared before each and redrawn
    after), their items as its last Result; the signals taken over while it is read."""
    from aicr_core.fleet import wave_runner
    from aicr_core.fleet.write_items import FleetWritten
    from aicr_core.framework.interruption import deferred
    from aicr_core.framework.result import Progress

    with deferred() as stop:  # a signal is recorded; the waves stop at their next step
        line = progress_line(command, args, len(fleet.contexts))
        events = wave_runner.approve_in_waves(fleet, plan, assignment, request, args.plan,
                                              confirm=at_the_terminal(command, stop, line), ask=not args.yes,
                                              interruption=stop, progress=line.show if line else None)
        try:
            for event in events:
                if isinstance(event, FleetWritten):
                    if line:
                        line.end()
                    yield written_result(command, event)
                    continue
                if line:
                    line.clear()
                yield Progress(f"warning: {event.text}" if event.warning else event.text)
                if line:
                    line.redraw()
        finally:
            if line:
                line.end()
