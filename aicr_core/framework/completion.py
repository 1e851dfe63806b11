"""`kubectl_complete-aicr`: TAB completion for `kubectl aicr`, through kubectl's plugin completion.

kubectl (1.26+) runs this executable, found on PATH, with the words typed
after `kubectl aicr`, the last one being the word under completion (empty
after a space). It prints one candidate a line (`word` or
`word<TAB>description`) and a last line `:<directive>`, cobra's bitmask:
1 error, 2 no space, 4 no file completion, 8 filter file extensions,
16 directories only, 32 keep this order.

What it completes, knowing no command by name:
- command names (with their summaries), from the `aicr.commands` entry points;
- flag names, from the command's parser (common flags before the command);
- flag values: `-o` installed renderers; `--context`, `--cluster`, `--user`
  the kubeconfig's names; `--kubeconfig` files, `--dir` directories; and any
  flag or argument whose argparse action has a `completer` attribute (the
  commands set them: rollout names from the cluster, `--for` conditions, ...).

A completer is `completer(prefix=..., parsed_args=..., action=...)`
(`parsed_args`: the common flags and the positional arguments typed so far); it
returns strings (`word` or `word\\tdescription`) or a `Candidates`. The whole
run is bounded at `BUDGET_SECONDS`: without a kubeconfig or a reachable
cluster, or on any failure, only the directive is printed. Nothing ever goes
to stderr, and the exit code is always 0: a shell prints whatever a
completion helper writes, in the middle of the user's command line.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_core.framework.process_exit import exit_without_teardown

NO_SPACE, NO_FILES, DIRECTORIES, KEEP_ORDER = 2, 4, 16, 32
DEFAULT = 0  # the shell completes file names


def _budget(default: float = 2.0) -> float:
    """A TAB must answer at once: 2 s; AICR_COMPLETION_SECONDS gives more (a far cluster, a loaded machine).

    Read once, at import: this is a process of its own per TAB. A value that is no positive number
    (or more than a minute) is ignored: a completion helper never fails."""
    try:
        seconds = float(os.environ.get("AICR_COMPLETION_SECONDS", default))
    except ValueError:
        return default
    return seconds if 0.5 <= seconds <= 60 else default


BUDGET_SECONDS = _budget()
API_SECONDS = BUDGET_SECONDS - 0.5  # what completers that ask the API server may spend of the budget
DESCRIPTION_MAX = 80


@dataclass
class Candidates:
    words: list[str] = field(default_factory=list)  # `word` or `word\tdescription`
    directive: int = NO_FILES


Completer = Callable[..., "Sequence[str] | Candidates"]


def main(argv: Sequence[str] | None = None, out: Any = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["__complete"]:  # cobra's own spelling, for callers that pass it
        words = words[1:]
    out = out or sys.stdout
    answer: list[Candidates] = []

    def work() -> None:
        try:
            answer.append(complete(words or [""]))
        except BaseException:  # noqa: BLE001 - a completion helper fails silently, never mid-prompt
            answer.append(Candidates())

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(BUDGET_SECONDS)
    result = answer[0] if answer else Candidates()  # out of time: offer nothing
    for word in result.words:
        out.write(word + "\n")
    out.write(f":{result.directive}\n")
    out.flush()
    return 0


def console_script() -> None:
    from aicr_core import plugin_folders, process_owner

    process_owner.install(process_owner.ProcessOwner.command_line())  # the command line's, as kubectl-aicr's
    _silence_stderr()
    plugin_folders.add_to_sys_path()  # a site's commands and flags complete too
    main()
    # Not Python's exit: it would wait for nothing (the worker is a daemon) but free every object
    # first. The atexit functions still run: they remove the private folder of the client's key files
    # and end a credential plugin the worker still waits on, so a completer holds no prompt.
    exit_without_teardown(0)


def _silence_stderr() -> None:
    """Whatever the client libraries, exec credential plugins or warnings print would land in the prompt."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process


# -- what to complete ----------------------------------------------------------------------------

def complete(words: list[str]) -> Candidates:
    from aicr_core import entry_points
    from aicr_core.framework.common_flags import FlagParser, add_common_flags

    *done, current = words
    common = FlagParser(prog="kubectl aicr")
    add_common_flags(common)
    commands = entry_points.PluginGroup(entry_points.COMMANDS)
    index = _command_index(done, common.value_flags(), commands)
    if index == UNKNOWN:
        return Candidates()  # `appr <TAB>`: no such command, so nothing to offer after it
    parsed = _parsed_common_flags(common, [w for i, w in enumerate(done) if i != index])
    parser: Any = common
    before: list[str] = done
    if index is not None:
        parser = _command_parser(commands, done[index])
        before = done[index + 1:]
        _add_command_flags(parsed, parser, before)
    flag_being_valued, positionals = _scan(before, parser)
    arguments = [a for a in parser._actions if not a.option_strings]
    _add_positionals(parsed, arguments, positionals)
    if flag_being_valued is not None:
        return _values(parser, flag_being_valued, current, "", parsed)
    if current.startswith("-") and current != "-":
        return _flag_or_value(parser, current, parsed)
    if index is None:
        return _commands(commands, current)
    if len(positionals) >= len(arguments):
        last = arguments[-1] if arguments else None
        if last is None or last.nargs not in ("*", "+"):
            return Candidates()
        return _run_completer(last, current, parsed)  # a repeatable last argument (PATH ...)
    return _run_completer(arguments[len(positionals)], current, parsed)


def _add_positionals(parsed: argparse.Namespace, arguments: list[argparse.Action], typed: list[str]) -> None:
    """The positional arguments typed so far, under their names, for completers that depend on them
    (`policy test DIR --case <TAB>` completes the cases of the test files under DIR)."""
    for i, action in enumerate(arguments):
        if action.nargs in ("*", "+"):
            setattr(parsed, action.dest, typed[i:])
            return
        if i < len(typed):
            setattr(parsed, action.dest, typed[i])


UNKNOWN = -1  # a word stands where the command name should: not a command


def _command_index(done: list[str], value_flags: set[str], commands: Any) -> int | None:
    """Where the command name stands among the words (flags may come before it), as the app finds it.

    None: not typed yet; UNKNOWN: a word that is no command (unless it may be the
    value of a flag we do not know, one a plugin adds to a command).
    """
    i, after_unknown_flag = 0, False
    while i < len(done):
        word = done[i]
        if word.startswith("-") and word != "-":
            i += 2 if word in value_flags else 1
            after_unknown_flag = word not in value_flags and "=" not in word
            continue
        if word in commands:
            return i
        if not after_unknown_flag:
            return UNKNOWN
        after_unknown_flag = False
        i += 1
    return None


def _parsed_common_flags(common: Any, words: list[str]) -> argparse.Namespace:
    """The common flags typed so far (--kubeconfig, --context, ...): completers connect with them.

    A half-typed line (`--context` still waiting for its value) parses without its last words.
    """
    for end in range(len(words), -1, -1):
        try:
            parsed, _ = common.parse_known_args(common.join_flag_values(words[:end]))
            return parsed
        except Exception:  # noqa: BLE001 - FlagParser raises UsageError for a flag without its value
            continue
    return argparse.Namespace()


def _add_command_flags(parsed: argparse.Namespace, parser: Any, words: list[str]) -> None:
    """The command's own flags typed so far, as typed (no value checked), for completers that depend on them
    (`--contexts <TAB>` after `--cluster-profiles` completes profiles, not contexts). The common flags
    parsed already keep their values."""
    actions = {option: action for action in parser._actions for option in action.option_strings}
    takes_value = parser.value_flags()
    i = 0
    while i < len(words):
        word = words[i]
        flag, equals, value = word.partition("=")
        action = actions.get(flag) if word.startswith("-") else None
        i += 1
        if action is None or hasattr(parsed, action.dest):
            continue
        if flag in takes_value:
            if not equals:
                if i >= len(words):
                    break
                value, i = words[i], i + 1
            setattr(parsed, action.dest, value)
        elif action.nargs == 0:  # store_true
            setattr(parsed, action.dest, value.lower() not in ("false", "0", "f") if equals else True)


def _command_parser(commands: Any, name: str) -> argparse.ArgumentParser:
    from aicr_core.framework.app import PROG, AicrApp

    command = commands.load(name)(AicrApp(), None, cmd_name=name)
    return command.get_parser(f"{PROG} {name}")


def _scan(words: list[str], parser: Any) -> tuple[str | None, list[str]]:
    """The flag whose value comes next (if any) and the positional arguments typed so far."""
    takes_value = parser.value_flags()
    positionals: list[str] = []
    pending: str | None = None
    for i, word in enumerate(words):
        if pending is not None:
            pending = None
            continue
        if word == "--":
            positionals += words[i + 1:]
            break
        if word.startswith("-") and word != "-":
            pending = word if word in takes_value else None
            continue
        positionals.append(word)
    return pending, positionals


def _flag_or_value(parser: Any, current: str, parsed: argparse.Namespace) -> Candidates:
    from aicr_core.framework.common_flags import help_text

    takes_value = parser.value_flags()
    if current.startswith("--") and "=" in current:  # --output=j
        flag, _, typed = current.partition("=")
        return _values(parser, flag, typed, f"{flag}=", parsed) if flag in takes_value else Candidates()
    short = current[:2]
    if not current.startswith("--") and len(current) > 2 and short in takes_value:  # -oj
        return _values(parser, short, current[2:], short, parsed)
    words = []
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith(current):
                words.append(_with_description(option, help_text(action)))
    return Candidates(words)


def _values(parser: Any, flag: str, typed: str, prefix: str, parsed: argparse.Namespace) -> Candidates:
    action = next((a for a in parser._actions if flag in a.option_strings), None)
    if action is None:
        return Candidates()
    result = _run_completer(action, typed, parsed)
    result.words = [prefix + w for w in result.words]
    return result


def _run_completer(action: argparse.Action, typed: str, parsed: argparse.Namespace) -> Candidates:
    completer: Completer | None = getattr(action, "completer", None) or COMMON.get(action.dest)
    if completer is None:
        return Candidates(directive=DEFAULT if action.metavar in ("PATH", "FILE") else NO_FILES)
    answer = completer(prefix=typed, parsed_args=parsed, action=action)
    result = answer if isinstance(answer, Candidates) else Candidates(list(answer))
    result.words = [w for w in (_clean(w) for w in result.words) if w and w.split("\t")[0].startswith(typed)]
    return result


def _commands(commands: Any, typed: str) -> Candidates:
    from aicr_core.framework.app import AicrApp

    app, words = AicrApp(), []
    for name in commands.names():
        if not name.startswith(typed):
            continue
        try:
            summary = commands.load(name)(app, None, cmd_name=name).summary()
        except Exception:  # noqa: BLE001 - a broken plugin is still a name
            summary = ""
        words.append(_with_description(name, summary))
    return Candidates(words)


def _with_description(word: str, description: str) -> str:
    text = " ".join(description.split())
    if len(text) > DESCRIPTION_MAX:
        text = text[:DESCRIPTION_MAX - 3].rstrip() + "..."
    return f"{word}\t{text}" if text else word


def _clean(candidate: str) -> str:
    """One line: a word without whitespace or control characters, and a description made safe."""
    from aicr_core.framework.terminal import safe

    word, _, description = candidate.partition("\t")
    if not word or any(c.isspace() or not c.isprintable() for c in word):
        return ""
    description = safe(" ".join(description.split()), allow_newlines=False)
    return f"{word}\t{description}" if description else word


# -- completers of the common flags ----------------------------------------------------------------

def renderers(**_: Any) -> list[str]:
    from aicr_core import entry_points

    return entry_points.PluginGroup(entry_points.RENDERERS).names()


def kubeconfig_names(section: str) -> Completer:
    """`--context`, `--cluster`, `--user`: the names in the kubeconfig, read and merged as a command reads
    them (aicr_core.session.kubeconfig_files: the same files and bounds); nothing when it cannot be read."""
    def names(parsed_args: argparse.Namespace, **_: Any) -> list[str]:
        from aicr_core.errors import AicrError
        from aicr_core.session import kubeconfig_files

        try:
            return kubeconfig_files.names(getattr(parsed_args, "kubeconfig", None), section)
        except AicrError:  # no such --kubeconfig, or a file that is no kubeconfig: no candidates
            return []
    return names


def directories(**_: Any) -> Candidates:
    return Candidates(directive=DIRECTORIES)


COMMON: dict[str, Completer] = {
    "output": renderers,
    "context": kubeconfig_names("contexts"),
    "cluster": kubeconfig_names("clusters"),
    "user": kubeconfig_names("users"),
    "dir": directories,
}
