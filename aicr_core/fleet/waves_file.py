"""The waves file of `approve --plan DIGEST --waves FILE`: which clusters go in which wave, soak, maxFailures.

```yaml
apiVersion: aicr.run/v1alpha1
kind: Waves
waves:
  - name: canary
    contexts: [gpu-lab-1]          # names and globs, as --contexts
    optional: false                # default; true: a wave whose clusters are all skipped does not stop the fleet
  - name: eu                       # with --cluster-profiles: a label selector on the profiles
    selector: {matchExpressions: [{key: region, operator: In, values: [eu-west]}]}
  - name: rest
    contexts: ["*"]                # a context belongs to the first wave that names it
soak: 30m                          # Go duration; default 0
maxFailures: 0                     # per wave; default 0
```

Everything wrong with the file is [USAGE] naming the key or the wave, before any call:
an unknown key, a bad duration, `optional` that is not true or false, no waves, a selector that
does not parse (or any selector without --cluster-profiles), a wave that selects no context or
only contexts claimed by earlier waves. Its schema is a pydantic model (`waves_schema`: what each
key holds, and the words of each problem); this module reads the file and assigns the members.
Pure: it knows member names and labels, not clusters.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from aicr_core.errors import UsageError, shown
from aicr_core.fleet import selection as fleet

MAX_BYTES = 1 << 20  # a waves file is a few lines; a larger one is a wrong file


class Requirement(NamedTuple):
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values  # NotIn


class Selector(NamedTuple):
    """A Kubernetes label selector (matchLabels and matchExpressions, all of them must hold); empty: every member."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


class Wave(NamedTuple):
    name: str
    patterns: tuple[str, ...]          # empty: every member (the selector chooses)
    selector: Selector | None = None   # with --cluster-profiles only
    optional: bool = False             # its clusters all skipped: the fleet goes on (else it proved nothing: it stops)


class Waves(NamedTuple):
    waves: tuple[Wave, ...]
    soak_seconds: float
    soak_text: str
    max_failures: int


def load(path: str) -> Waves:
    """The file at `path`, parsed; at most MAX_BYTES of a regular file are read (a FIFO is refused at once)."""
    from aicr_core.domain import local_files

    try:
        text = local_files.read_text(path, MAX_BYTES)
    except local_files.Refused as refused:
        raise UsageError(f"--waves {path}: {refused}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--waves {path}: not UTF-8 text") from None
    except OSError as err:
        raise UsageError(f"--waves {path}: cannot read it: {err.strerror or err}") from None
    return parse(text, path)


def parse(text: str, source: str = "the waves file") -> Waves:
    """The file's text, validated by its schema (`WavesDocument`); the first problem is [USAGE] naming the key
    or the wave (an unknown key first)."""
    import yaml
    from pydantic import ValidationError

    from aicr_core.session import bounded_yaml

    def bad(message: str) -> UsageError:
        return UsageError(f"--waves {source}: {message}")

    try:
        doc = bounded_yaml.load(text)  # an anchor bomb is refused, not expanded (issue 23)
    except yaml.YAMLError as err:
        raise bad(f"not YAML: {str(err).splitlines()[0] if str(err) else err}") from None
    if not isinstance(doc, Mapping):
        raise bad("not a Waves document (a YAML mapping with apiVersion, kind and waves)")
    from aicr_core.fleet.waves_schema import WavesDocument, problem

    try:
        parsed = WavesDocument.model_validate(dict(doc))
    except ValidationError as err:
        raise bad(problem(err, doc)) from None
    waves = tuple(Wave(w.name, tuple(c.strip() for c in w.contexts or ()), _selector(w.selector), w.optional)
                  for w in parsed.waves)
    return Waves(waves, parsed.soak.seconds, parsed.soak.text, parsed.max_failures)


def _selector(document: Any) -> Selector | None:
    """A validated label selector as its requirements (matchLabels first, then matchExpressions)."""
    if document is None:
        return None
    requirements = [Requirement(key, "In", (value,)) for key, value in (document.match_labels or {}).items()]
    requirements += [Requirement(e.key, e.operator, tuple(e.values or ())) for e in document.match_expressions or ()]
    return Selector(tuple(requirements))


def check_selectors(waves: Waves, profiles: bool, source: str) -> None:
    """A wave's selector chooses ClusterProfiles by their labels: without --cluster-profiles it is [USAGE]."""
    for wave in waves.waves:
        if wave.selector is not None and not profiles:
            raise UsageError(f"--waves {source}: wave {shown(wave.name)}: selector needs --cluster-profiles "
                             "(it chooses ClusterProfiles by their labels)")


def assign(waves: Waves, names: Sequence[str], labels: Callable[[str], Mapping[str, str]] | None = None, *,
           kind: str = "context", among: str = "of the kubeconfig") -> list[tuple[Wave, list[str]]]:
    """Each wave's members, in their order (the kubeconfig's): a member belongs to the first wave that selects it.

    A wave selects by its patterns (names and globs), by its selector on the members' `labels`
    (ClusterProfiles), or both: a member must match both.
    """
    claimed: set[str] = set()
    assigned: list[tuple[Wave, list[str]]] = []
    for wave in waves.waves:
        what = f"--waves: wave {shown(wave.name)}"
        try:
            selected = fleet.choose(names, wave.patterns, what=what, kind=kind, among=among) \
                if wave.patterns else list(names)
        except UsageError as err:
            raise UsageError(err.message) from None
        if wave.selector is not None:
            assert labels is not None, "a selector needs the members' labels"
            selected = [name for name in selected if wave.selector.matches(labels(name))]
            if not selected:
                raise UsageError(f"{what}: its selector matches no {kind} {among}"
                                 + (" that its contexts choose" if wave.patterns else ""))
        own = [name for name in selected if name not in claimed]
        if not own:
            raise UsageError(f"{what} selects only {kind}s claimed by earlier waves")
        claimed.update(own)
        assigned.append((wave, own))
    return assigned
