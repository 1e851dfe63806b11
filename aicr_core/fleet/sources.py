"""The fleet's sources: where the members of one command across clusters come from, chosen once.

A source is one module of this package (named in `SOURCES`), with:

- `FLAGS` and `add_flags(parser)`: its own flags (dest, flag name, the value when not given), added to
  every command that may run across clusters;
- `KIND` and `LABELLED`: what a member is called in messages ("context", "ClusterProfile"), and
  whether members carry labels (a waves file's `selector` needs them);
- `given(args)`: whether the flags choose this source; `flag(args)`: the flag that did, for messages;
- `HUB_CONTEXT` and `DECIDES`: whether `--context` names the hub the members are read from (else it
  is refused, since it chooses one cluster), and what decides a member's connection, in words;
- `check_flags(args)`: its own [USAGE] rules, before any call (run for every source, so that a
  flag of a source not chosen is refused);
- `members(args)`: the `Members` (its names in order, their labels, `among` for messages,
  `server(member)`: the HOST:PORT a fleet write shows and compares, None where the user wrote the
  servers, and `connect(member, overrides, deadline)` for a member's session, in its turn); reading
  them may be a call;
- `complete(parsed_args)`: the member names for TAB, within completion's budget;
- `single_cluster_flags(member)`: the flags by which a single-cluster command (`describe`, `whoami`)
  reaches that member alone, quoted for a shell (`--context NAME`), or None where none does; the
  commands a fleet's messages suggest carry them.

The first source whose `given` holds is the fleet's; the kubeconfig's contexts are last, the
default. Adding a source (Cluster API secrets, Rancher) is a module like `profile_source` and its
name here; nothing else branches on a source.

Imported where a command's fleet flags are added or checked and where a fleet runs: light (the
Protocols are for type checkers only), and so are the source modules at their top.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from aicr_core.session.connection_flags import Overrides
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import KubeSession

SOURCES = ("aicr_core.fleet.profile_source", "aicr_core.fleet.context_source")  # the default last


if TYPE_CHECKING:
    class Members(Protocol):
        """The members a source found: their names in order, their labels, and a session with each."""

        @property
        def names(self) -> list[str]: ...

        @property
        def among(self) -> str: ...  # where they come from, for messages: "of the kubeconfig"

        def labels(self, member: str) -> Mapping[str, str]: ...

        # HOST:PORT of the member's server, shown and compared before a fleet write (an inventory's member:
        # its name says nothing of its server); None where the user chose the servers (contexts).
        def server(self, member: str) -> str | None: ...

        def connect(self, member: str, overrides: Overrides, deadline: Deadline) -> KubeSession: ...

    class Source(Protocol):
        """What a source module holds (the module's doc above)."""

        FLAGS: tuple[tuple[str, str, Any], ...]
        KIND: str
        LABELLED: bool
        HUB_CONTEXT: bool
        DECIDES: str

        def add_flags(self, parser: argparse.ArgumentParser) -> None: ...

        def given(self, args: argparse.Namespace) -> bool: ...

        def flag(self, args: argparse.Namespace) -> str: ...

        def check_flags(self, args: argparse.Namespace) -> None: ...

        def members(self, args: argparse.Namespace) -> Members: ...

        def complete(self, parsed_args: argparse.Namespace) -> list[str]: ...

        def single_cluster_flags(self, member: str) -> str | None: ...


def every() -> Sequence[Source]:
    """Every source, the default last."""
    return [cast("Source", import_module(name)) for name in SOURCES]


def chosen(args: argparse.Namespace) -> Source:
    """The one source the flags choose (the kubeconfig's contexts unless another's flag is given)."""
    sources = every()
    return next((source for source in sources if source.given(args)), sources[-1])
