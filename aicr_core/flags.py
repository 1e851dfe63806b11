"""The flags every command accepts, and the parser rules they follow.

kubectl plugins behave like kubectl: flags before or after the name, exact
flag names (no `--reas` for `--reason`), a value flag takes the next word as
its value even when it starts with a dash (`--expires -1h` is a negative
duration, not a missing value). Bad values are usage errors (exit 2).
"""
from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NoReturn

from aicr_core.errors import HelpRequested, UsageError

REASON_MAX = 1024
DEFAULT_OPERATOR_NAMESPACE = "aicr-system"
DEFAULT_REPRODUCE_DIR = "aicr-reproduce"

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> timedelta:
    """Parse Go's duration syntax (`90m`, `2h`, `1h30m`, `45s`, `1.5h`), like kubectl does.

    Negative durations and anything unparsable are usage errors.
    """
    body = text.strip()
    if body.startswith("-"):
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: must not be negative")
    body = body.removeprefix("+")
    if body == "0":
        return timedelta(0)
    seconds, pos = 0.0, 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != pos:
            break
        seconds += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if not body or pos != len(body):
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: use Go duration syntax such as 90m, 2h, 1h30m or 45s")
    return timedelta(seconds=seconds)


def parse_reason(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("--reason must not be empty")
    if len(text) > REASON_MAX:
        raise argparse.ArgumentTypeError(
            f"--reason is {len(text)} characters; at most {REASON_MAX} are allowed")
    return text


def parse_nonempty(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


class HelpFlag(argparse.Action):
    """`-h/--help` anywhere: show the help of the command (or the usage) and exit 0."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        raise HelpRequested(getattr(parser, "command_name", None))


class FlagParser(argparse.ArgumentParser):
    """argparse with kubectl's rules: exact names, errors as [USAGE], values may start with '-'."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("add_help", False)
        super().__init__(*args, **kwargs)
        self.command_name: str | None = None

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or "invalid arguments")

    def value_flags(self) -> set[str]:
        """Option strings that take exactly one value."""
        return {opt for action in self._actions if action.option_strings and action.nargs is None
                and not isinstance(action, (argparse._StoreConstAction, HelpFlag))
                for opt in action.option_strings}

    def join_flag_values(self, argv: Sequence[str]) -> list[str]:
        """`--expires -1h` -> `--expires=-1h`: a value flag takes the next word, as pflag does."""
        takes_value, out, words = self.value_flags(), [], list(argv)
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
            out.append(word)
            i += 1
        return out

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        return super().parse_args(self.join_flag_values(args or []), namespace)


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of the upstream plugin, accepted by every command."""
    group = parser.add_argument_group("flags accepted by every command")
    group.add_argument("--kubeconfig", metavar="PATH", type=parse_nonempty,
                       help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    group.add_argument("--context", metavar="NAME", type=parse_nonempty,
                       help="kubeconfig context (default: the current context)")
    group.add_argument("--operator-namespace", metavar="NAME", type=parse_nonempty,
                       default=DEFAULT_OPERATOR_NAMESPACE,
                       help="where assessment reports and plans live (default: %(default)s)")
    group.add_argument("--reason", metavar="TEXT", type=parse_reason,
                       help=f"approve, revoke: why (required there; at most {REASON_MAX} characters)")
    group.add_argument("--expires", metavar="DURATION", type=parse_duration,
                       help="approve: how long the approval stays valid (default: the rollout's deadline)")
    group.add_argument("--dir", metavar="PATH", type=parse_nonempty, default=DEFAULT_REPRODUCE_DIR,
                       help="reproduce: where the recipe is written (default: %(default)s)")
    group.add_argument("--override", metavar="POLICY", action="append", default=[], type=parse_nonempty,
                       help="approve, revoke, acknowledge: go ahead despite the refusal of an overridable "
                            "policy (repeatable; recorded in the rollout)")
    group.add_argument("--policy-file", metavar="PATH", type=parse_nonempty,
                       help="policy check, plugins: use this ApprovalPolicy file instead of the cluster's")
    group.add_argument("-o", "--output", metavar="NAME", default="text",
                       help="output format: any installed renderer (default: %(default)s)")
    group.add_argument("-h", "--help", action=HelpFlag, help="show this help and exit")
    from aicr_core.connection_flags import add_connection_flags  # it imports this module's parse_duration

    add_connection_flags(parser.add_argument_group("kubectl's connection flags, accepted by every command"))


def debug_enabled() -> bool:
    return os.environ.get("AICR_DEBUG") == "1"
