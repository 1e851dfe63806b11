"""Text layouts of `help` (Help) and `help COMMAND` (CommandHelp).

Apart from the other kinds' layouts (layouts.py): `help` imports this module (the face and
textwrap), not the layouts of rollouts and policies and their colours and durations.
"""
from __future__ import annotations

import textwrap
from typing import Any

from aicr_core.plugin import safe, table, value

HELP_WIDTH = 100  # columns of `help COMMAND`; flag descriptions wrap there


def help_overview(d: dict[str, Any]) -> list[str]:
    lines = [value(d.get("description")), "", "Usage:"]
    lines += [f"  {value(u)}" for u in d.get("usage") or []]
    lines += ["", "Commands:"]
    commands = d.get("commands") or []
    if commands:
        lines += table(["NAME", "SUMMARY"], [[value(c.get("name")), value(c.get("summary"))] for c in commands])[1:]
    lines += ["", "Flags (accepted by every command, before or after the name):"]
    lines += [f"  {value(f)}" for f in d.get("flags") or []]
    lines += ["", value(d.get("footer"))]
    return lines


def command_help(d: dict[str, Any]) -> list[str]:
    """Usage, what it does, arguments, flags, global flags, examples, codes: the same for every command."""
    lines = ["Usage:", f"  {value(d.get('usage'))}", "", value(d.get("summary"), "")]
    if d.get("description"):
        lines += ["", *(safe(line) for line in str(d["description"]).splitlines())]
    if d.get("arguments"):
        lines += ["", "Arguments:"]
        lines += table(["", ""], [[value(a.get("name")), value(a.get("help"), "")] for a in d["arguments"]])[1:]
    flags = [f for key in ("flags", "globalFlags") for f in d.get(key) or []]
    width = max((len(str(f.get("flag", ""))) for f in flags), default=0) + 2
    for title, key in (("Flags", "flags"), ("Global flags", "globalFlags")):
        if d.get(key):
            lines += ["", f"{title}:"]
            for f in d[key]:
                lines += textwrap.wrap(value(f.get("help"), ""), HELP_WIDTH, break_on_hyphens=False,
                                       initial_indent=f"  {value(f.get('flag')):<{width}}",
                                       subsequent_indent=" " * (width + 2)) or [f"  {value(f.get('flag'))}"]
    if d.get("examples"):
        lines += ["", "Examples:"]
        for i, example in enumerate(d["examples"]):
            lines += [""] if i else []
            if example.get("description"):
                lines.append(f"  # {value(example['description'])}")
            lines += [f"  {safe(line)}" for line in str(example.get("command", "")).splitlines()]
    lines += ["", "Codes (on failure: error: [CODE] message on stderr, exit 1 unless noted):"]
    if d.get("codes"):
        lines += table(["", ""], [[value(c.get("code")), value(c.get("meaning"), "")] for c in d["codes"]])[1:]
    if d.get("everyCommandCodes"):
        lines.append(f"  and, as every command: {', '.join(value(c) for c in d['everyCommandCodes'])}")
    for note in d.get("notes") or []:
        lines += ["", *(safe(line) for line in str(note).strip("\n").splitlines())]
    if d.get("providedBy"):
        lines += ["", f"This command is provided by the {value(d['providedBy'])} plugin."]
    return lines
