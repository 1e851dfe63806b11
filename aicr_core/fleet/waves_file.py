"""The waves file of `approve --plan DIGEST --waves FILE`: which clusters go in which wave, soak, maxFailures.

```yaml
apiVersion: aicr.run/v1alpha1
kind: Waves
waves:
  - name: canary
    contexts: [gpu-lab-1]          # names and globs, as --contexts
    optional: false                # default; true: a wave whose clusters are all skipped does not stop the fleet
  - name: rest
    contexts: ["*"]                # a context belongs to the first wave that names it
soak: 30m                          # Go duration; default 0
maxFailures: 0                     # per wave; default 0
```

Everything wrong with the file is [USAGE] naming the key or the wave, before any call:
an unknown key, a bad duration, `optional` that is not true or false, no waves, a wave that
selects no context or only contexts claimed by earlier waves. Pure: it knows context names, not clusters.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from aicr_core import go_duration as duration
from aicr_core.errors import UsageError
from aicr_core.fleet import fan_out as fleet

API_VERSION = "aicr.run/v1alpha1"
KIND = "Waves"
MAX_BYTES = 1 << 20  # a waves file is a few lines; a larger one is a wrong file
TOP_KEYS = ("apiVersion", "kind", "waves", "soak", "maxFailures")
WAVE_KEYS = ("name", "contexts", "optional")


class Wave(NamedTuple):
    name: str
    patterns: tuple[str, ...]
    optional: bool = False  # its clusters all skipped: the fleet goes on (else the wave proved nothing: it stops)


class Waves(NamedTuple):
    waves: tuple[Wave, ...]
    soak_seconds: float
    soak_text: str
    max_failures: int


def load(path: str) -> Waves:
    """The file at `path`, parsed; at most MAX_BYTES of a regular file are read."""
    try:
        with open(path, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise UsageError(f"--waves {path}: not a regular file")
            data = file.read(MAX_BYTES + 1)
    except OSError as err:
        raise UsageError(f"--waves {path}: cannot read it: {err.strerror or err}") from None
    if len(data) > MAX_BYTES:
        raise UsageError(f"--waves {path}: larger than {MAX_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"--waves {path}: not UTF-8 text") from None
    return parse(text, path)


def parse(text: str, source: str = "the waves file") -> Waves:
    import yaml

    def bad(message: str) -> UsageError:
        return UsageError(f"--waves {source}: {message}")

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise bad(f"not YAML: {str(err).splitlines()[0] if str(err) else err}") from None
    if not isinstance(doc, Mapping):
        raise bad("not a Waves document (a YAML mapping with apiVersion, kind and waves)")
    _known_keys(doc, TOP_KEYS, "", bad)
    if doc.get("apiVersion") != API_VERSION:
        raise bad(f"apiVersion must be {API_VERSION} (got {doc.get('apiVersion')!r})")
    if doc.get("kind") != KIND:
        raise bad(f"kind must be {KIND} (got {doc.get('kind')!r})")
    listed = doc.get("waves")
    if not isinstance(listed, list) or not listed:
        raise bad("waves: at least one wave is needed")
    waves: list[Wave] = []
    for i, entry in enumerate(listed):
        where = f"waves[{i}]"
        if not isinstance(entry, Mapping):
            raise bad(f"{where}: a wave is a mapping with name and contexts")
        _known_keys(entry, WAVE_KEYS, f"{where}.", bad)
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise bad(f"{where}.name: every wave needs a name")
        if any(w.name == name for w in waves):
            raise bad(f"wave {name!r}: two waves have that name")
        contexts = entry.get("contexts")
        if (not isinstance(contexts, list) or not contexts
                or any(not isinstance(c, str) or not c.strip() or c.strip() == "!" for c in contexts)):
            raise bad(f"wave {name!r}: contexts must be a list of context names and globs")
        optional = entry.get("optional", False)
        if type(optional) is not bool:
            raise bad(f"wave {name!r}: optional must be true or false (got {type(optional).__name__})")
        waves.append(Wave(name, tuple(c.strip() for c in contexts), optional))
    soak_text, soak_seconds = _soak(doc.get("soak", "0s"), bad)
    max_failures = doc.get("maxFailures", 0)
    if type(max_failures) is not int or max_failures < 0:
        raise bad(f"maxFailures: a whole number of clusters, 0 or more (got {max_failures!r})")
    return Waves(tuple(waves), soak_seconds, soak_text, max_failures)


def _known_keys(doc: Mapping[Any, Any], keys: Sequence[str], where: str, bad: Any) -> None:
    for key in doc:
        if key not in keys:
            raise bad(f"unknown key {where}{key} (known: {', '.join(keys)})")


def _soak(value: Any, bad: Any) -> tuple[str, float]:
    text = str(value) if type(value) in (str, int) else None
    if text is None:
        raise bad(f"soak: a Go duration such as 30m (got {value!r})")
    try:
        nanoseconds = duration.parse(text)
    except ValueError as err:
        raise bad(f"soak: {err}") from None
    if nanoseconds < 0:
        raise bad(f"soak: must not be negative (got {text})")
    return text, nanoseconds / 1e9


def assign(waves: Waves, names: Sequence[str]) -> list[tuple[Wave, list[str]]]:
    """Each wave's contexts, in the kubeconfig's order: a context belongs to the first wave that selects it."""
    claimed: set[str] = set()
    assigned: list[tuple[Wave, list[str]]] = []
    for wave in waves.waves:
        try:
            selected = fleet.choose(names, wave.patterns, what=f"--waves: wave {wave.name!r}")
        except UsageError as err:
            raise UsageError(err.message) from None
        own = [name for name in selected if name not in claimed]
        if not own:
            raise UsageError(f"--waves: wave {wave.name!r} selects only contexts claimed by earlier waves")
        claimed.update(own)
        assigned.append((wave, own))
    return assigned
