"""YAML (and JSON) from files within bounds: the one loader of every YAML input.

PyYAML builds an alias as a shared reference, so an "anchor bomb" (nine
levels of `[*a, *a, ...]`, a few hundred bytes) loads cheaply and explodes
only when something walks it: validation, a JSON dump, a `repr` in an error
message (2.5 GB and 30 s for a 590-byte waves file). `<<` merge keys are
worse: PyYAML's constructor copies every merged pair, so the load itself
grows with the expansion.

So the composed node graph is measured before anything is constructed:

- its expansion, as go-yaml v3 measures it (the rule kubectl applies to a
  kubeconfig): every node decoded counts, and the nodes decoded through
  aliases may be at most 99% of them up to 400,000 decoded nodes, sliding
  to 10% at 4,000,000. A file a person or kubectl writes, with a few
  anchors, loads; a bomb is refused after a walk of its own (written)
  nodes, in milliseconds and without expanding anything;
- an alias that contains itself (go-yaml refuses it; PyYAML would build a
  recursive object that every later walk loops on);
- its depth, at most MAX_DEPTH levels counting through aliases (libyaml
  stops at 1,000 while parsing; Python walks after it must not meet a
  RecursionError).

Refused is a yaml.YAMLError, so a caller's `except yaml.YAMLError` covers
broken YAML and the budget alike; its text is one short line.
"""
from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 100
_TOO_DEEP = f"nested too deeply (more than {MAX_DEPTH} levels)"

# go-yaml v3's allowedAliasRatio (decode.go): the share of decoded nodes that may come from aliases.
_RATIO_LOW, _RATIO_HIGH = 400_000, 4_000_000

# libyaml when PyYAML has it: ten times the pure-Python parser (a fleet's kubeconfig, fixture files), and
# messages as precise (the same line and column).
_FastLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Refused(yaml.YAMLError):
    """The document expands far past its own size, contains itself, or nests too deeply."""


def load(text: str, *, unique_keys: bool = False) -> Any:
    """The one document of `text` (None when empty), as yaml.safe_load; bounded (see the module).

    unique_keys: a key given twice in one mapping is an error (the policy file's rule), not "the last wins".
    A value its tag cannot build (`!!int x`, an unhashable key) is a yaml ConstructorError too.
    """
    loader = _loader_class(unique_keys)(text)
    try:
        node = _composed(loader.get_single_node)
        return None if node is None else _constructed(loader, node)
    finally:
        loader.dispose()


def load_all(text: str, *, unique_keys: bool = False) -> list[Any]:
    """Every document of `text`, as yaml.safe_load_all; each bounded (see the module)."""
    loader = _loader_class(unique_keys)(text)
    documents: list[Any] = []
    try:
        while loader.check_node():
            documents.append(_constructed(loader, _composed(loader.get_node)))
    finally:
        loader.dispose()
    return documents


def _composed(compose: Any) -> Any:
    try:
        return compose()
    except RecursionError:  # the pure-Python composer (no libyaml) recurses once a level
        raise Refused(_TOO_DEEP) from None
    except yaml.YAMLError as err:
        if "maximum nesting depth" in str(getattr(err, "problem", "")):  # libyaml stops at 1,000 levels itself
            raise Refused(_TOO_DEEP) from None
        raise


def _constructed(loader: Any, node: yaml.Node) -> Any:
    check(node)
    try:
        return loader.construct_document(node)
    except AttributeError:  # PyYAML's own constructor of `!!timestamp foo` fails on its regular expression
        raise yaml.constructor.ConstructorError(
            None, None, "a value does not match its tag (!!timestamp, say)", None) from None
    except (TypeError, ValueError) as err:  # an unhashable key, `!!int x`, an integer of 5,000 digits
        raise yaml.constructor.ConstructorError(None, None, _first_line(str(err)), None) from None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "a value cannot be built"


def check(root: yaml.Node) -> None:
    """Refused when the node graph expands too far, contains itself, or nests deeper than MAX_DEPTH.

    One walk in document order, as go-yaml decodes: a collection met again is an alias of it, whose
    expanded size is known by then (an anchor comes before its aliases; one inside its own anchor is
    a cycle). Scalars are counted, never remembered: an alias of a scalar adds one node, no bomb.
    """
    sizes: dict[int, int] = {}  # expanded size of each finished collection, by id
    depths: dict[int, int] = {}
    open_nodes: set[int] = set()  # collections on the current path
    decoded = through_aliases = 0
    scalar = yaml.ScalarNode
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        if node.__class__ is scalar:
            decoded += 1
            continue
        key = id(node)
        if leaving:
            open_nodes.discard(key)
            size, depth = 1, 1
            for child in _children(node):
                size += sizes.get(id(child), 1)
                depth = max(depth, 1 + depths.get(id(child), 1))
            if depth > MAX_DEPTH:
                raise Refused(_TOO_DEEP)
            sizes[key], depths[key] = size, depth
            continue
        if key in sizes:  # an alias: go-yaml decodes the alias node, then all it stands for
            decoded += 1 + sizes[key]
            through_aliases += sizes[key]
            # Within one alias both counts grow together, so its end is where the share is highest.
            if through_aliases > 100 and decoded > 1000 and through_aliases / decoded > _allowed_share(decoded):
                raise Refused(f"aliases expand too far: more than {decoded:,} nodes from a document of "
                              f"{_written(root):,} (document contains excessive aliasing)")
            continue
        if key in open_nodes:
            raise Refused("an anchor's value contains an alias of itself")
        decoded += 1
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(_children(node)))


def _written(root: yaml.Node) -> int:
    """The nodes written in the document, each collection once (for the refusal's message only)."""
    seen: set[int] = set()
    count, stack = 0, [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            count += 1
        elif id(node) not in seen:
            seen.add(id(node))
            count += 1
            stack.extend(_children(node))
    return count


def _allowed_share(decoded: int) -> float:
    if decoded <= _RATIO_LOW:
        return 0.99
    if decoded >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


_LOADERS: dict[bool, type[Any]] = {}


def _loader_class(unique_keys: bool) -> type[Any]:
    if unique_keys not in _LOADERS:
        _LOADERS[unique_keys] = _unique_keys_loader() if unique_keys else _FastLoader
    return _LOADERS[unique_keys]


def _unique_keys_loader() -> type[Any]:
    """The safe loader, except that a key given twice in a mapping is an error, not "the last one wins"."""

    class UniqueKeysLoader(_FastLoader):  # type: ignore[misc,valid-type]
        pass

    def mapping_without_duplicates(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:  # the keys written here: a `<<` merge's keys may be overridden
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = loader.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: construct_mapping says so
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {_short(key)}", key_node.start_mark)
            seen.add(key)
        loader.flatten_mapping(node)
        mapping: dict[Any, Any] = loader.construct_mapping(node, deep=True)
        return mapping

    UniqueKeysLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping_without_duplicates)
    return UniqueKeysLoader


def _short(value: Any) -> str:
    from aicr_core.errors import shown
    return shown(value)
