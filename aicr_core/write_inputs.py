"""A site's write inputs: one declaration of a value a write takes (a change ticket), for every caller.

A plugin declares an input once, as a `WriteInput` under the entry-point group `aicr.write_inputs`.
The CLI offers it as a flag of the commands of its actions (`--ticket ID` on approve:
aicr_core.framework.write_input_flags), a page as a form field (aicr_core.framework.write_form),
and every write, whoever asks it, checks and applies it in one place
(aicr_core.domain.write_flags.write_request): so the policies see the same flags and the same
reason is recorded from the page as from the command line, and no caller skips a check.

A leaf of the core: it imports no room (no framework, domain or fleet), only the entry points and
the errors, so that the framework and the domain may both use it.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from aicr_core import entry_points
from aicr_core.errors import AicrError, Code, UsageError, shown

GROUP = entry_points.WRITE_INPUTS
WRITE_ACTIONS = ("approve", "revoke", "acknowledge")
# Names a declaration may not take: the page's own form field and the write's own inputs. A name that is
# any other flag a write command already has is refused where the flags are added (write_input_flags).
RESERVED = frozenset({"csrf", "reason", "expires", "override"})
NAME = re.compile(r"[a-z][a-z0-9-]*")
NAME_MAX = 40
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")  # incl. bidi overrides


@dataclass(frozen=True)
class WriteInput:
    """One input a site adds to writes: `--NAME METAVAR` on the CLI, the form field NAME on a page.

    name: the flag's name without dashes and the form field's name (`[a-z][a-z0-9-]*`); the policies
      read it from `context.flags` under its argparse name (dashes as underscores).
    actions: the writes it applies to (approve, revoke, acknowledge).
    required: a write of those actions without it is refused ([USAGE]).
    max_length: the most characters a value may have.
    Subclass and override `shape_reason` to put the value into the recorded reason.
    """

    name: str
    help: str
    metavar: str = "VALUE"
    actions: tuple[str, ...] = ("approve",)
    required: bool = False
    max_length: int = 256

    @property
    def dest(self) -> str:
        """The key of the flags mapping (argparse's dest): `change-ticket` -> `change_ticket`."""
        return self.name.replace("-", "_")

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    def shape_reason(self, reason: str | None, value: str) -> str | None:
        """The reason recorded when the write carries `value` (called only when it does): unchanged by default."""
        return reason

    def problem(self) -> str | None:
        """What is wrong with this declaration, or None."""
        if not isinstance(self.name, str) or len(self.name) > NAME_MAX or not NAME.fullmatch(self.name):
            return f"name {shown(self.name)} is not [a-z][a-z0-9-]* of at most {NAME_MAX} characters"
        if self.name in RESERVED or self.dest in RESERVED:
            return f"name {self.name!r} is reserved ({', '.join(sorted(RESERVED))} are the write's own)"
        if not isinstance(self.help, str) or not self.help.strip():
            return "help must be a non-empty text"
        if not isinstance(self.metavar, str) or not self.metavar or CONTROL.search(self.metavar):
            return "metavar must be a non-empty text"
        if (not isinstance(self.actions, tuple) or not self.actions
                or any(a not in WRITE_ACTIONS for a in self.actions)):
            return f"actions must be a non-empty tuple of {', '.join(WRITE_ACTIONS)}: {shown(self.actions)}"
        if type(self.required) is not bool:
            return "required must be True or False"
        if type(self.max_length) is not int or self.max_length < 1:
            return f"max_length must be a positive int: {shown(self.max_length)}"
        return None


class Declaration(NamedTuple):
    """A declared input and the plugin that declares it (`aicr.write_inputs 'ticket' from dist 1.0`), for messages."""

    input: WriteInput
    plugin: str


def problem_of(loaded: Any) -> str | None:
    """What is wrong with what an entry point of the group loads (`plugins` shows it), or None."""
    if not isinstance(loaded, WriteInput):
        return f"is a {type(loaded).__name__}, not a WriteInput (aicr_core.plugin.WriteInput)"
    return loaded.problem()


def declarations() -> list[Declaration]:
    """Every declared input, checked, by name; PLUGIN_ERROR naming the plugin when one does not load, is no
    WriteInput, is malformed, or takes a name another declares. A bad declaration stops every write: a
    required input that went missing would let a write skip a check."""
    group = entry_points.PluginGroup(GROUP)
    found: dict[str, Declaration] = {}
    for entry in group.names():
        loaded = group.load(entry)  # PLUGIN_ERROR: fails to import, or claimed twice
        info = group.infos(entry)[0]
        plugin = f"{GROUP} {entry!r} from {entry_points.distribution_of(info)}"
        problem = problem_of(loaded)
        if problem is not None or not isinstance(loaded, WriteInput):
            raise AicrError(Code.PLUGIN_ERROR, f"{plugin}: {problem}")
        if loaded.name in found:
            raise AicrError(Code.PLUGIN_ERROR, f"write input {loaded.name!r} is declared twice: by "
                            f"{found[loaded.name].plugin} and by {plugin}; uninstall one of them")
        found[loaded.name] = Declaration(loaded, plugin)
    return [found[name] for name in sorted(found)]


def declared_inputs(action_name: str) -> list[WriteInput]:
    """The inputs declared for the write `action_name` (approve, revoke, acknowledge), by name."""
    return [d.input for d in declarations() if action_name in d.input.actions]


def check_value(item: WriteInput, value: Any) -> str | None:
    """The value of `item` as given (None or "" when not given), within its bounds; [USAGE] when not."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise UsageError(f"{item.flag} takes one text value, not {type(value).__name__}")
    if len(value) > item.max_length:
        raise UsageError(f"{item.flag} is {len(value)} characters; at most {item.max_length} are allowed")
    if CONTROL.search(value):
        raise UsageError(f"{item.flag} {shown(value)} holds a control character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{item.flag} holds bytes that are not UTF-8 text; check the terminal's encoding") from None
    return value


def apply_inputs(action_name: str, flags: Mapping[str, Any], reason: str | None, *,
                 checking: bool = False) -> tuple[dict[str, Any], str | None]:
    """The flags the policies see and the reason recorded, once the declared inputs of `action_name` are applied.

    Every declared input's key is in the flags returned (None when not given). A value past its bounds is
    [USAGE]; so is a required one left out, unless `checking` (a decision without a write, where a
    missing input is the policies' to judge). The reason is shaped by each input given, in name order.
    """
    out = dict(flags)
    for item in declared_inputs(action_name):
        value = check_value(item, flags.get(item.dest))
        out[item.dest] = value
        if value is None:
            if item.required and not checking:
                raise UsageError(f"{action_name} needs {item.flag} {item.metavar}: {item.help}")
            continue
        shaped = item.shape_reason(reason, value)
        if shaped is not None and not isinstance(shaped, str):
            raise AicrError(Code.PLUGIN_ERROR, f"write input {item.name!r}: shape_reason returned "
                            f"{type(shaped).__name__}, not a text")
        reason = shaped
    return out, reason
