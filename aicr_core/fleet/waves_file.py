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
only contexts claimed by earlier waves. Pure: it knows member names and labels, not clusters.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from aicr_core import go_duration as duration
from aicr_core.errors import UsageError, shown
from aicr_core.fleet import selection as fleet

API_VERSION = "aicr.run/v1alpha1"
KIND = "Waves"
MAX_BYTES = 1 << 20  # a waves file is a few lines; a larger one is a wrong file
TOP_KEYS = ("apiVersion", "kind", "waves", "soak", "maxFailures")
WAVE_KEYS = ("name", "contexts", "selector", "optional")
SELECTOR_KEYS = ("matchLabels", "matchExpressions")
EXPRESSION_KEYS = ("key", "operator", "values")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


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
    import yaml

    from aicr_core.session import bounded_yaml

    def bad(message: str) -> UsageError:
        return UsageError(f"--waves {source}: {message}")

    try:
        doc = bounded_yaml.load(text)  # an anchor bomb is refused, not expanded (issue 23)
    except yaml.YAMLError as err:
        raise bad(f"not YAML: {str(err).splitlines()[0] if str(err) else err}") from None
    if not isinstance(doc, Mapping):
        raise bad("not a Waves document (a YAML mapping with apiVersion, kind and waves)")
    _known_keys(doc, TOP_KEYS, "", bad)
    if doc.get("apiVersion") != API_VERSION:
        raise bad(f"apiVersion must be {API_VERSION} (got {shown(doc.get('apiVersion'))})")
    if doc.get("kind") != KIND:
        raise bad(f"kind must be {KIND} (got {shown(doc.get('kind'))})")
    listed = doc.get("waves")
    if not isinstance(listed, list) or not listed:
        raise bad("waves: at least one wave is needed")
    waves: list[Wave] = []
    for i, entry in enumerate(listed):
        where = f"waves[{i}]"
        if not isinstance(entry, Mapping):
            raise bad(f"{where}: a wave is a mapping with name and contexts (or selector)")
        _known_keys(entry, WAVE_KEYS, f"{where}.", bad)
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise bad(f"{where}.name: every wave needs a name")
        if any(w.name == name for w in waves):
            raise bad(f"wave {shown(name)}: two waves have that name")
        selector = _selector(entry["selector"], f"wave {shown(name)}: selector: ", bad) if "selector" in entry else None
        contexts = entry.get("contexts")
        if contexts is None and selector is not None:
            contexts = []
        elif (not isinstance(contexts, list) or not contexts
                or any(not isinstance(c, str) or not c.strip() or c.strip() == "!" for c in contexts)):
            raise bad(f"wave {shown(name)}: contexts must be a list of context names and globs")
        optional = entry.get("optional", False)
        if type(optional) is not bool:
            raise bad(f"wave {shown(name)}: optional must be true or false (got {type(optional).__name__})")
        waves.append(Wave(name, tuple(c.strip() for c in contexts), selector, optional))
    soak_text, soak_seconds = _soak(doc.get("soak", "0s"), bad)
    max_failures = doc.get("maxFailures", 0)
    if type(max_failures) is not int or max_failures < 0:
        raise bad(f"maxFailures: a whole number of clusters, 0 or more (got {shown(max_failures)})")
    return Waves(tuple(waves), soak_seconds, soak_text, max_failures)


def _known_keys(doc: Mapping[Any, Any], keys: Sequence[str], where: str, bad: Any) -> None:
    for key in doc:
        if key not in keys:
            raise bad(f"unknown key {where}{key if isinstance(key, str) and len(key) <= 60 else shown(key)} "
                      f"(known: {', '.join(keys)})")


def _selector(value: Any, where: str, bad_file: Callable[[str], UsageError]) -> Selector:
    """A metav1.LabelSelector, checked as apimachinery checks one (keys, values, operators)."""
    from aicr_core.session.label_selector import SelectorError, check_key, check_value

    def bad(message: str) -> UsageError:
        return bad_file(f"{where}{message}")

    if not isinstance(value, Mapping):
        raise bad("a label selector is a mapping with matchLabels and/or matchExpressions")
    _known_keys(value, SELECTOR_KEYS, "", bad)
    requirements: list[Requirement] = []
    labels = value.get("matchLabels") or {}
    expressions = value.get("matchExpressions") or []
    if not isinstance(labels, Mapping):
        raise bad("matchLabels: a mapping of label keys to values")
    if not isinstance(expressions, list):
        raise bad("matchExpressions: a list of {key, operator, values}")
    try:
        for key, label in labels.items():
            if not isinstance(key, str) or not isinstance(label, str):
                raise bad(f"matchLabels: {shown(key)}: keys and values are strings (quote a value such as \"true\")")
            check_key(key)
            check_value(label)
            requirements.append(Requirement(key, "In", (label,)))
        for i, expression in enumerate(expressions):
            at = f"matchExpressions[{i}]"
            if not isinstance(expression, Mapping):
                raise bad(f"{at}: a mapping with key, operator and values")
            _known_keys(expression, EXPRESSION_KEYS, f"{at}.", bad)
            key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
            if not isinstance(key, str):
                raise bad(f"{at}.key: a label key")
            check_key(key)
            if operator not in OPERATORS:
                raise bad(f"{at}.operator must be {', '.join(OPERATORS)} (got {shown(operator)})")
            if not isinstance(values, list) or any(not isinstance(v, str) for v in values):
                raise bad(f"{at}.values: a list of strings")
            if operator in ("In", "NotIn") and not values:
                raise bad(f"{at}: operator {operator} needs values")
            if operator in ("Exists", "DoesNotExist") and values:
                raise bad(f"{at}: operator {operator} takes no values")
            for v in values:
                check_value(v)
            requirements.append(Requirement(key, operator, tuple(values)))
    except SelectorError as err:
        raise bad(str(err)) from None
    return Selector(tuple(requirements))


def check_selectors(waves: Waves, profiles: bool, source: str) -> None:
    """A wave's selector chooses ClusterProfiles by their labels: without --cluster-profiles it is [USAGE]."""
    for wave in waves.waves:
        if wave.selector is not None and not profiles:
            raise UsageError(f"--waves {source}: wave {shown(wave.name)}: selector needs --cluster-profiles "
                             "(it chooses ClusterProfiles by their labels)")


def _soak(value: Any, bad: Any) -> tuple[str, float]:
    text = str(value) if type(value) in (str, int) else None
    if text is None:
        raise bad(f"soak: a Go duration such as 30m (got {shown(value)})")
    try:
        nanoseconds = duration.parse(text)
    except ValueError as err:
        raise bad(f"soak: {err}") from None
    if nanoseconds < 0:
        raise bad(f"soak: must not be negative (got {text})")
    return text, nanoseconds / 1e9


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
