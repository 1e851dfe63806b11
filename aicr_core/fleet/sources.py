"""The fleet's sources: where the members of one command across clusters come from, chosen once.

A source is one module of this package (named in `SOURCES`) holding these names (`Source` below):

- `FLAGS`: its own flags, as data (`Flag`: the key of its value, the flag, its value when not given,
  its help, and optionally a metavar and a completer), and `GROUP`, the title they are listed under;
  every command that may run across clusters takes them. It never touches argparse: only
  `aicr_core.fleet.flags` turns flags into argparse flags and parsed flags back into a mapping.
- `KIND` and `LABELLED`: what a member is called in messages ("context", "ClusterProfile"), and
  whether members carry labels (a waves file's `selector` needs them);
- `HUB_CONTEXT` and `DECIDES`: whether `--context` names the hub the members are read from (else it
  is refused, since it chooses one cluster), and what decides a member's connection, in words;
- `given(values)`: whether the values choose this source; `flag(values)`: the flag that did, for
  messages; `check_flags(values)`: its own [USAGE] rules, before any call (run for every source,
  so that a flag of a source not chosen is refused);
- `members(values)`: the `Members` (its names in order, their labels, `among` for messages,
  `server(member)`: the HOST:PORT a fleet write shows and compares, None where the user wrote the
  servers, `connect(member, overrides, deadline)` for a member's session, in its turn, and
  `single_cluster_flags(member)`: the flags by which a single-cluster command (`describe`,
  `whoami`) reaches that member alone, quoted for a shell (`--context NAME`), or None where none
  does, which the commands a fleet's messages suggest carry); reading them may be a call;
- `complete(values, seconds)`: the member names for TAB, within `seconds` of API time.

`values` is a plain mapping: every source's flags by their `name` (each at its default when not
given), and the fleet's common values: `kubeconfig` (the --kubeconfig path or None), `context` (the
hub of a HUB_CONTEXT source, or None), `overrides` (the command's connection overrides, an
`Overrides`: the hub is reached with them), `contexts` and `all_contexts` (the selection's flags),
`waves` (the waves file's path or None). A program that is no command line builds it itself.

The first source whose `given` holds is the fleet's; the kubeconfig's contexts are last, the
default. Adding a source (Cluster API secrets, Rancher) is a module like `profile_source` and its
name here; nothing else branches on a source (docs/architecture.md, "Adding a fleet source").

Imported where a command's fleet flags are added or checked and where a fleet runs: light (the
Protocols are for type checkers only), and so are the source modules at their top.
"""
# Annotations evaluated (no `from __future__ import annotations`): a NamedTuple's string annotations are
# each compiled when it is defined (typing.ForwardRef), which every command parser would pay.
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any, NamedTuple, cast

if TYPE_CHECKING:
    from typing import Protocol

    from aicr_core.session.connection_flags import Overrides
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import KubeSession

SOURCES = ["aicr_core.fleet.profile_source", "aicr_core.fleet.context_source"]  # the default last


class Flag(NamedTuple):
    """One flag of a source, as data. `default` is its value when not given; False makes it a switch
    (it takes no value). `complete(prefix, values, seconds)` gives its TAB candidates ("word" or
    "word<TAB>description"), within `seconds` of API time."""

    name: str
    flag: str
    default: Any
    help: str
    metavar: str | None = None
    complete: Callable[[str, Mapping[str, Any], float], list[str]] | None = None


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

        def single_cluster_flags(self, member: str) -> str | None: ...

    class Source(Protocol):
        """What a source module holds (the module's doc above)."""

        FLAGS: tuple[Flag, ...]
        GROUP: str
        KIND: str
        LABELLED: bool
        HUB_CONTEXT: bool
        DECIDES: str

        def given(self, values: Mapping[str, Any]) -> bool: ...

        def flag(self, values: Mapping[str, Any]) -> str: ...

        def check_flags(self, values: Mapping[str, Any]) -> None: ...

        def members(self, values: Mapping[str, Any]) -> Members: ...

        def complete(self, values: Mapping[str, Any], seconds: float) -> list[str]: ...


def every() -> "Sequence[Source]":
    """Every source, the default last."""
    return [cast("Source", import_module(name)) for name in SOURCES]


def chosen(values: Mapping[str, Any]) -> "Source":
    """The one source the values choose (the kubeconfig's contexts unless another's flag is given)."""
    sources = every()
    return next((source for source in sources if source.given(values)), sources[-1])
