"""Reading raw objects defensively: typed access to untrusted JSON, a wrong type INVALID_OBJECT.

Every parse of the package reads through `ObjectReader`: a field of an unexpected type is
`[INVALID_OBJECT]` naming the object and the field, never a traceback.
"""


from collections.abc import Mapping
from datetime import datetime
from typing import Any

from aicr_core.clock import parse_time
from aicr_core.domain.operator_api.paths import ROLLOUTS
from aicr_core.errors import AicrError, Code, shown


def is_mapping(node: Any) -> bool:
    # JSON objects are dicts: test that first, since an ABC check costs ten times more (list at scale).
    return isinstance(node, dict) or isinstance(node, Mapping)


_KEYS: dict[str, tuple[str, ...]] = {}  # "spec.to.digest" -> ("spec", "to", "digest"), split once


class ObjectReader:
    """Typed access to an untrusted object; a wrong type is INVALID_OBJECT, not a traceback."""

    def __init__(self, obj: Any, what: str) -> None:
        self.obj, self.what = obj if is_mapping(obj) else {}, what

    def raw(self, path: str) -> Any:
        """The value at a dotted path as stored, unchecked (None when absent)."""
        keys = _KEYS.get(path)
        if keys is None:
            keys = _KEYS[path] = tuple(path.split("."))
        node: Any = self.obj
        for key in keys:
            if not is_mapping(node):
                return None
            node = node.get(key)
        return node

    def _typed(self, path: str, kind: type | tuple[type, ...], default: Any) -> Any:
        value = self.raw(path)
        if value is None:
            return default
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise AicrError(Code.INVALID_OBJECT, f"{self.what}: {path} has an unexpected type")
        return value

    def text(self, path: str, default: str = "") -> str:
        return self._typed(path, str, default)

    def opt_text(self, path: str) -> str | None:
        return self._typed(path, str, None) or None

    def integer(self, path: str, default: int = 0) -> int:
        return self._typed(path, int, default)

    def flag(self, path: str, default: bool = False) -> bool:
        return self._typed(path, bool, default)

    def items(self, path: str) -> list[Any]:
        return self._typed(path, list, [])

    def mapping(self, path: str) -> Mapping[str, Any]:
        return self._typed(path, (dict, Mapping), {})

    def time(self, path: str) -> datetime | None:
        text = self.opt_text(path)
        if text is None:
            return None
        try:
            return parse_time(text)
        except (ValueError, OverflowError):  # OverflowError: year 1 or 9999 moved into another year by its offset
            raise AicrError(Code.INVALID_OBJECT, f"{self.what}: {path} is not a time: {shown(text)}") from None

    def sub(self, path_or_item: str | Any, what: str) -> "ObjectReader":
        node = self.raw(path_or_item) if isinstance(path_or_item, str) else path_or_item
        return ObjectReader(node, what)


def required_time(reader: ObjectReader, path: str) -> datetime:
    """A time the object must hold: INVALID_OBJECT when it is missing."""
    moment = reader.time(path)
    if moment is None:
        raise AicrError(Code.INVALID_OBJECT, f"{reader.what}: {path} is missing")
    return moment


def metadata_name(obj: Mapping[str, Any]) -> str:
    """An object's metadata.name as read (INVALID_OBJECT when it is not a string)."""
    return ObjectReader(obj, "object").text("metadata.name")


def serves_rollouts(discovery: Mapping[str, Any]) -> bool:
    """Whether a group-version discovery document (APIResourceList) lists runtimerollouts."""
    resources = ObjectReader(discovery, "discovery document").raw("resources")
    return isinstance(resources, list) and any(
        isinstance(r, Mapping) and r.get("name") == ROLLOUTS for r in resources)
