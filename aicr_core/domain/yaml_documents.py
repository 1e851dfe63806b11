"""YAML documents read strictly and within a budget: what `policy test` reads its test and fixture files with.

- strictly: a key given twice in one mapping is an error (as in the policy file);
- within a budget: aliases may add at most ALIAS_EXPANSION_BUDGET nodes to a document, and none may
  contain itself (a "billion laughs" file is a few lines that expand to billions), counted on the
  composed node graph before anything is built from it;
- on libyaml when PyYAML has it (fixture files hold many objects).

The seam for the core's shared bounded YAML loader (Hardening III): when it exists, `load_documents`
calls it and this module goes.
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from aicr_core.domain import policy_file

if TYPE_CHECKING:
    import yaml

ALIAS_EXPANSION_BUDGET = 1_000_000


def load_documents(text: str) -> list[Any]:
    """Every YAML document of `text`, strictly (a key given twice is an error) and within the alias
    expansion budget; ValueError naming the line and the problem.

    The seam for a shared bounded YAML loader: when the core has one, this calls it.
    """
    import yaml

    loader = _strict_fast_loader()(text)
    documents: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            _within_budget(node)
            documents.append(loader.construct_document(node))
    except _Refused:
        raise
    except yaml.YAMLError as err:
        raise ValueError(policy_file._yaml_problem(err, text)) from None
    except AttributeError:  # PyYAML's own constructor of `!!timestamp foo` fails on its regular expression
        raise ValueError("(YAML): a value does not match its tag (!!timestamp, say)") from None
    except (TypeError, ValueError) as err:  # an unhashable key, `!!int x`
        raise ValueError(f"(YAML): {str(err)[:200]}") from None
    except RecursionError:
        raise ValueError("(YAML): nested too deeply") from None
    finally:
        loader.dispose()  # type: ignore[no-untyped-call]
    return [d for d in documents if d is not None]


@lru_cache(maxsize=1)
def _strict_fast_loader() -> type[Any]:
    """The policy file's strict loader (a key given twice is an error), on libyaml when PyYAML has it:
    fixture files hold many objects, and the pure-Python parser costs milliseconds per object."""
    import yaml

    base = getattr(yaml, "CSafeLoader", None)
    if base is None:
        return policy_file._strict_loader()

    class StrictFastLoader(base):  # type: ignore[misc, valid-type]
        pass

    def mapping_without_duplicates(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}"[:200], key_node.start_mark)
            seen.add(key)
        return loader.construct_mapping(node, deep=True)  # type: ignore[no-any-return]

    StrictFastLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping_without_duplicates)
    return StrictFastLoader


class _Refused(ValueError):
    """A document refused before it is built (its message is the whole problem)."""


def _within_budget(root: yaml.Node | None) -> None:
    """Refuse a document whose aliases would expand beyond ALIAS_EXPANSION_BUDGET nodes (or forever).

    Each distinct node's expanded size is computed once, depth first (the graph is walked, never
    expanded); a node that is its own descendant is refused."""
    import yaml

    if root is None or isinstance(root, yaml.ScalarNode):
        return
    scalar, mapping = yaml.ScalarNode, yaml.MappingNode
    sizes: dict[int, int] = {}  # of the collections done (a scalar is 1)
    started: set[int] = set()  # the collections on the current path
    scalars: set[int] = set()  # the distinct scalars
    stack: list[Any] = [root]
    while stack:
        node = stack[-1]
        key = id(node)
        if key in sizes:
            stack.pop()
            continue
        children = [part for pair in node.value for part in pair] if isinstance(node, mapping) else node.value
        if key not in started:
            started.add(key)
            scalars.update(id(c) for c in children if c.__class__ is scalar)
            pending = [c for c in children if c.__class__ is not scalar and id(c) not in sizes]
            if any(id(c) in started for c in pending):
                raise _Refused("(YAML): an alias refers to a node that contains it (a recursive document)")
            if pending:
                stack.extend(pending)
                continue
        sizes[key] = 1 + sum(1 if c.__class__ is scalar else sizes[id(c)] for c in children)
        started.discard(key)
        stack.pop()
    if sizes[id(root)] - len(sizes) - len(scalars) > ALIAS_EXPANSION_BUDGET:
        raise _Refused(f"(YAML): its aliases expand to more than {ALIAS_EXPANSION_BUDGET} nodes")
