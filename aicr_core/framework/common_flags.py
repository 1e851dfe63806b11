"""The flags every command accepts, and the parser rules they follow.

kubectl plugins behave like kubectl: flags before or after the name, exact
flag names (no `--reas` for `--reason`), a value flag takes the next word as
its value even when it starts with a dash (`--expires -1h` is a negative
duration, not a missing value).

Every command accepts every flag, as upstream. A value that does not parse
(`--expires 1d`) is a usage error (exit 2) whatever the command; a bound on a
value that parses (`--reason ""`, `--expires -1h`) is checked only by the
commands that use the flag: they name it in `AicrCommand.uses_flags`.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from aicr_core.errors import HelpRequested, UsageError, shown_argument
from aicr_core.framework.output_options import COLOR_CHOICES
from aicr_core.framework.suggestions import flag_suggestions, unknown_name
from aicr_core.go_duration import parse_duration
from aicr_core.session.connection_flags import add_connection_flags

# The domain's figures, in the help and the default of two common flags. The framework may not import
# the domain, so they are written here again; tests/unit/test_flags.py holds them equal to the
# domain's (write_limits.REASON_MAX, operator_api.DEFAULT_OPERATOR_NAMESPACE).
REASON_MAX = 1024  # --reason, in characters
DEFAULT_OPERATOR_NAMESPACE = "aicr-system"
DEFAULT_REPRODUCE_DIR = "aicr-reproduce"


# -- syntax: checked for every command (a value that does not parse is a usage error everywhere) --

# -- semantics: checked only by the commands that use the flag -----------------------------------

def check_nonempty(args: argparse.Namespace, dest: str) -> str:
    value = getattr(args, dest)
    if not value:
        raise UsageError(f"--{dest.replace('_', '-')} must not be empty")
    return str(value)


# What a command naming a flag in `uses_flags` gets checked. --reason and --expires have checks of their
# own that the commands call (required by approve and revoke; relative to now for approve).
SEMANTIC_CHECKS: dict[str, Callable[[argparse.Namespace], object]] = {
    "dir": lambda args: check_nonempty(args, "dir"),
    "operator_namespace": lambda args: check_nonempty(args, "operator_namespace"),
    "override": lambda args: check_overrides(args),
    "policy_file": lambda args: args.policy_file is None or check_nonempty(args, "policy_file"),
}


def check_overrides(args: argparse.Namespace) -> list[str]:
    """--override names policies: none of them empty."""
    if any(not name.strip() for name in args.override):
        raise UsageError("--override needs a policy name")
    return list(args.override)


def check_used_flags(args: argparse.Namespace, used: Sequence[str]) -> None:
    for dest in used:
        check = SEMANTIC_CHECKS.get(dest)
        if check is not None:
            check(args)


class HelpFlag(argparse.Action):
    """`-h/--help` anywhere: show the help of the command (or the usage) and exit 0."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        raise HelpRequested(getattr(parser, "command_name", None))


def parse_bool(text: str) -> bool:
    """A boolean flag's value as pflag reads it (Go's strconv.ParseBool)."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    text = shown_argument(text)
    raise argparse.ArgumentTypeError(f'invalid argument "{text}": strconv.ParseBool: parsing "{text}": invalid syntax')


class BoolFlag(argparse.Action):
    """A pflag boolean: `--flag` is true, `--flag=false` false; the next word is never its value."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("default", False)
        super().__init__(option_strings, dest, type=parse_bool, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)


MAX_MESSAGE = 1000  # characters of a usage error argparse words itself


class FlagParser(argparse.ArgumentParser):
    """argparse with kubectl's rules: exact names, errors as [USAGE], values may start with '-'."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("add_help", False)
        super().__init__(*args, **kwargs)
        self.command_name: str | None = None

    def error(self, message: str) -> NoReturn:
        missing = self.missing_mode(message)
        if missing:
            raise UsageError(missing)
        # argparse's own messages (`invalid choice: 'x'`) quote the whole value: a bound, whatever it was.
        raise UsageError(message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 3] + "...")

    def missing_mode(self, message: str) -> str | None:
        """A flag of modes given no value (a bare `--dry-run`): the message names the modes. A flag
        has modes when its action carries a `modes` tuple."""
        flag, colon, rest = message.removeprefix("argument ").partition(": ")
        if not colon or rest != "expected one argument":
            return None
        action = next((a for a in self._actions if flag in a.option_strings
                       or flag == "/".join(a.option_strings)), None)
        modes = getattr(action, "modes", None)
        if not modes:
            return None
        return f"flag needs an argument: {flag} takes a mode: {'|'.join(modes)}"

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or "invalid arguments")

    def value_flags(self) -> set[str]:
        """Option strings that take exactly one value."""
        return {opt for action in self._actions if action.option_strings and action.nargs is None
                and not isinstance(action, (argparse._StoreConstAction, HelpFlag, BoolFlag))
                for opt in action.option_strings}

    def bool_flags(self) -> set[str]:
        return {opt for action in self._actions if isinstance(action, BoolFlag) for opt in action.option_strings}

    def join_flag_values(self, argv: Sequence[str]) -> list[str]:
        """`--expires -1h` -> `--expires=-1h`: a value flag takes the next word, as pflag does."""
        takes_value, booleans, out, words = self.value_flags(), self.bool_flags(), [], list(argv)
        i = 0
        while i < len(words):
            word = words[i]
            if word == "--":
                out.extend(words[i:])
                break
            if word in takes_value and i + 1 < len(words):
                joiner = "=" if word.startswith("--") else ""  # -o json -> -ojson
                out.append(f"{word}{joiner}{words[i + 1]}")
                i += 2
                continue
            out.append(f"{word}=true" if word in booleans else word)  # argparse needs the value pflag implies
            i += 1
        return out

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(self.join_flag_values(args or []), namespace)
        flags = [word for word in extras if word.startswith("-") and word != "-"]
        if flags:  # kubectl's (pflag's) wording, as the app says it for a flag before any command
            word = flags[0]
            name = word.partition('=')[0] if word.startswith('--') else word[:2]
            known = [opt for action in self._actions for opt in action.option_strings]
            raise unknown_name(f"unknown flag: {shown_argument(name)}", flag_suggestions(name, known))
        if extras:
            listed = " ".join(shown_argument(word) for word in extras[:5]) + (" ..." if len(extras) > 5 else "")
            raise UsageError(f"unrecognized arguments: {listed}")
        return parsed


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of the upstream plugin, accepted by every command."""
    group = parser.add_argument_group("flags accepted by every command")
    group.add_argument("--kubeconfig", metavar="PATH",
                       help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    group.add_argument("--context", metavar="NAME",
                       help="kubeconfig context (default: the current context)")
    group.add_argument("--operator-namespace", metavar="NAME",
                       default=DEFAULT_OPERATOR_NAMESPACE,
                       help="where assessment reports and plans live (default: %(default)s)")
    group.add_argument("--reason", metavar="TEXT",
                       help=f"approve, revoke: why (required there; at most {REASON_MAX} characters)")
    group.add_argument("--expires", metavar="DURATION", type=parse_duration,
                       help="approve: how long the approval stays valid (default: the rollout's deadline)")
    group.add_argument("--dir", metavar="PATH", default=DEFAULT_REPRODUCE_DIR,
                       help="reproduce: where the recipe is written (default: %(default)s)")
    group.add_argument("--override", metavar="POLICY", action="append", default=[],
                       help="approve, revoke, acknowledge: go ahead despite the refusal of an overridable "
                            "policy (repeatable; recorded in the rollout)")
    group.add_argument("--policy-file", metavar="PATH",
                       help="policy check, plugins, and approve, revoke, acknowledge with --dry-run: try this "
                            "ApprovalPolicy file in place of the cluster's")
    group.add_argument("-o", "--output", metavar="NAME[=ARG]", default="text",
                       help="output format: any installed renderer, some with an argument: jsonpath=TEMPLATE, "
                            "jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE (default: %(default)s)")
    add_output_flags(group)
    group.add_argument("-h", "--help", action=HelpFlag, help="show this help and exit")
    add_connection_flags(parser.add_argument_group("kubectl's connection flags, accepted by every command"))


def add_output_flags(group: argparse._ArgumentGroup) -> None:
    """What every renderer may honour (aicr_core/framework/output_options.py);
    a renderer that has no use for one ignores it."""
    group.add_argument("--no-headers", action=BoolFlag,
                       help="tables (text, wide, custom-columns): leave out the header line")
    group.add_argument("--color", metavar="WHEN", choices=COLOR_CHOICES, default="auto",
                       help="colour phases, outcomes and verdicts: auto (on a terminal, unless NO_COLOR is set), "
                            "always (even with NO_COLOR) or never (default: %(default)s)")
    group.add_argument("--allow-missing-template-keys", action=BoolFlag, default=True,
                       help="-o jsonpath: a key missing from the document prints nothing "
                            "(=false: it is an error) (default: true)")


def help_text(action: argparse.Action) -> str:
    """A flag's help with `%(default)s` filled in, as argparse fills it; a plugin's stray `%` is shown as written."""
    if not action.help:
        return ""
    try:
        return action.help % {"default": action.default}
    except (KeyError, TypeError, ValueError):  # "50% of the nodes", "%(prog)s": argparse's own help would crash
        return action.help


def debug_enabled() -> bool:
    return os.environ.get("AICR_DEBUG") == "1"
