"""Sets of field paths, in the form ``metadata.managedFields[*].fieldsV1`` stores them.

Upstream (structured-merge-diff's ``fieldpath``) keeps a set as a trie of path elements and
serializes it as nested JSON objects, one key per element (``FieldsV1``):

* ``f:<name>`` a field of a map or struct, ``k:{"name":"main"}`` the item of an associative
  list with those key fields (names sorted, values as JSON), ``v:"x"`` the item of a set
  (a list of scalars), ``i:3`` an index (atomic lists; unused by the API server);
* a node's value is an object of its children; ``".": {}`` marks the node itself as a member
  when it also has children, and a node with no children is a member.

Here the trie *is* that JSON form (plain dicts keyed by the serialized elements), so the
managedFields of a stored object need no decoding before they are compared, and an entry no
write changed is written back as the very same object. A set is the dict of the root's
children (the root is never a member). Every operation is pure and returns its input object
unchanged (``is``) when nothing changed, which is what lets the field manager skip
re-encoding entries it did not touch. The element order of upstream (fields, then keys, then
values, then indices, each compared as upstream compares them) matters only when a set is
written out (:func:`to_fields_v1`) or iterated (:func:`paths`), so it is applied there.

No library does this: upstream's is Go, and a Python port of its pointer trie would be slower
than dicts that are already the wire form.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any, Final, TypeAlias

import orjson

from inplace.api.validation.errors import go_quote

__all__ = [
    "MEMBER",
    "FieldsError",
    "Path",
    "Set",
    "canonical_fields_v1",
    "difference",
    "element_order",
    "field",
    "format_path",
    "has",
    "index",
    "insert",
    "intersection",
    "key",
    "leaves",
    "paths",
    "recursive_difference",
    "set_of",
    "to_fields_v1",
    "union",
    "value",
]

#: A set of paths: serialized path element -> node; a node is a member when it is empty or
#: holds ".", and its other keys are its children.
Set: TypeAlias = dict[str, Any]
#: A path: serialized path elements from the object's root.
Path: TypeAlias = tuple[str, ...]

#: The key that marks a node with children as a member itself.
MEMBER: Final = "."


class FieldsError(ValueError):
    """A ``fieldsV1`` that is not a set of paths (an unknown element, bad JSON in a key)."""


# --- path elements -----------------------------------------------------------------------


def field(name: str) -> str:
    """The element of a map's or struct's field."""
    return "f:" + name


def key(fields: Mapping[str, Any]) -> str:
    """The element of an associative list's item with these key fields."""
    try:
        # Typed, so 1, 1.0 and True (equal in Python) are told apart.
        return _scalar_key(tuple((n, type(v), v) for n, v in sorted(fields.items())))
    except TypeError:  # a key field holding a list or a map: not cacheable
        return "k:" + go_json({name: fields[name] for name in sorted(fields)})


@functools.lru_cache(maxsize=65536)
def _scalar_key(fields: tuple[tuple[str, type, Any], ...]) -> str:
    return "k:" + go_json({name: value for name, _, value in fields})


def value(item: Any) -> str:
    """The element of a set's item (a scalar)."""
    return "v:" + go_json(item)


def index(position: int) -> str:
    """The element of an atomic list's item (upstream never records these in managedFields)."""
    return f"i:{position}"


def go_json(data: Any) -> str:
    """JSON as Go's encoder writes it (jsoniter, compatible with encoding/json): compact, map
    keys sorted, ``<``, ``>`` and ``&`` escaped, whole floats without a fraction."""
    text = orjson.dumps(_whole_floats(data), option=orjson.OPT_SORT_KEYS).decode()
    if "<" in text or ">" in text or "&" in text or "\u2028" in text or "\u2029" in text:
        for char, escaped in _HTML_ESCAPES:
            text = text.replace(char, escaped)
    return text


_HTML_ESCAPES: Final = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def _whole_floats(data: Any) -> Any:
    if type(data) is float and data.is_integer() and abs(data) < 1e21:
        return int(data)
    if type(data) is dict:
        return {k: _whole_floats(v) for k, v in data.items()}
    if type(data) is list:
        return [_whole_floats(v) for v in data]
    return data


@functools.lru_cache(maxsize=65536)
def element_order(element: str) -> tuple[Any, ...]:
    """Upstream's ``PathElement.Compare`` as a sort key: ``.`` first, then fields by name,
    keys (field names, then values), values, indices."""
    if element == MEMBER:
        return (-1,)
    kind, rest = element[:2], element[2:]
    if kind == "f:":
        return (0, rest)
    if kind == "k:":
        fields = orjson.loads(rest)
        return (1, tuple((name, _value_order(fields[name])) for name in sorted(fields)))
    if kind == "v:":
        return (2, _value_order(orjson.loads(rest)))
    return (3, int(rest))


def _value_order(data: Any) -> tuple[Any, ...]:
    """Upstream's ``value.Compare``: numbers, strings, booleans, lists, maps, then null."""
    if isinstance(data, bool):
        return (2, data)
    if isinstance(data, int | float):
        return (0, data)
    if isinstance(data, str):
        return (1, data)
    if isinstance(data, list):
        return (3, tuple(_value_order(item) for item in data))
    if isinstance(data, dict):
        return (4, tuple((k, _value_order(data[k])) for k in sorted(data)))
    return (5,)


def format_element(element: str) -> str:
    """An element as upstream prints it in messages: ``.name``, ``[name="main"]``,
    ``[="x"]``, ``[3]``."""
    kind, rest = element[:2], element[2:]
    if kind == "f:":
        return "." + rest
    if kind == "k:":
        fields = orjson.loads(rest)
        return "[" + ",".join(f"{n}={_go_string(fields[n])}" for n in sorted(fields)) + "]"
    if kind == "v:":
        return f"[={_go_string(orjson.loads(rest))}]"
    return f"[{rest}]"


def format_path(path: Path) -> str:
    """A path as upstream prints it: ``.spec.containers[name="main"].image``."""
    return "".join(format_element(e) for e in path)


def _go_string(data: Any) -> str:
    """``value.ToString``: strings quoted as Go's %q, the rest as Go's %v."""
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "true" if data else "false"
    if isinstance(data, str):
        return go_quote(data)
    if isinstance(data, float):
        return repr(int(data)) if data.is_integer() and abs(data) < 1e21 else repr(data)
    if isinstance(data, int):
        return str(data)
    if isinstance(data, list):
        return "[" + ",".join(_go_string(v) for v in data) + "]"
    if isinstance(data, dict):
        return "".join(f"{k}={_go_string(v)}" for k, v in data.items())
    return str(data)


# --- nodes -------------------------------------------------------------------------------


def _member(node: Set) -> bool:
    return not node or MEMBER in node


def _kids(node: Set) -> Set:
    """A node's children (the node itself when it has no member mark, to avoid a copy)."""
    if MEMBER not in node:
        return node
    return {k: v for k, v in node.items() if k != MEMBER}


def _node(member: bool, kids: Set, like: Set | None = None) -> Set | None:
    """The node with this membership and these children; None when it would be empty.
    Returns `like` itself when it is that node already."""
    if like is not None and member == _member(like) and kids is _kids(like):
        return like
    if not kids:
        return {} if member else None
    if member:
        return {MEMBER: {}, **kids}
    return kids


# --- building and reading ----------------------------------------------------------------


def insert(root: Set, path: Path) -> None:
    """Add `path` to `root` in place (building a set; parents are not made members)."""
    if not path:
        return
    node = root
    last = len(path) - 1
    for depth, element in enumerate(path):
        child = node.get(element)
        if depth == last:
            if child is None:
                node[element] = {}
            elif child and MEMBER not in child:
                child[MEMBER] = {}
            return
        if child is None:
            child = node[element] = {}
        elif not child:
            child[MEMBER] = {}  # a member leaf gains children: keep it a member
        node = child


def set_of(*path_list: Path) -> Set:
    """A set of the given paths."""
    root: Set = {}
    for path in path_list:
        insert(root, path)
    return root


def has(root: Set, path: Path) -> bool:
    """Whether `path` is a member of the set."""
    if not path:
        return False
    node = root
    for element in path[:-1]:
        node = node.get(element)  # type: ignore[assignment]
        if node is None:
            return False
    child = node.get(path[-1])
    return child is not None and _member(child)


def with_prefix(root: Set, element: str) -> Set:
    """The paths under `element`, without it (upstream ``WithPrefix``)."""
    child = root.get(element)
    return {} if child is None else _kids(child)


def paths(root: Set, prefix: Path = ()) -> Iterator[Path]:
    """Every member, depth first and in upstream's order (upstream ``Set.Iterate``): a
    level's members first, then its children's subtrees."""
    ordered = sorted((e for e in root if e != MEMBER), key=element_order)
    for element in ordered:
        if _member(root[element]):
            yield (*prefix, element)
    for element in ordered:
        child = root[element]
        if child:
            yield from paths(_kids(child), (*prefix, element))


# --- set algebra -------------------------------------------------------------------------


def union(a: Set, b: Set) -> Set:
    """Paths in either set."""
    if not b or a is b:
        return a
    if not a:
        return b
    out: Set | None = None
    for element, bn in b.items():
        an = a.get(element)
        merged = bn if an is None else _union_node(an, bn)
        if merged is not an:
            if out is None:
                out = dict(a)
            out[element] = merged
    return a if out is None else out


def _union_node(an: Set, bn: Set) -> Set:
    if an is bn:
        return an
    kids = union(_kids(an), _kids(bn))
    node = _node(_member(an) or _member(bn), kids, an)
    assert node is not None
    return node


def intersection(a: Set, b: Set) -> Set:
    """Paths in both sets."""
    if a is b:
        return a
    if len(b) < len(a):
        a, b = b, a
    out: Set = {}
    for element, an in a.items():
        bn = b.get(element)
        if bn is None:
            continue
        node = _node(_member(an) and _member(bn), intersection(_kids(an), _kids(bn)))
        if node is not None:
            out[element] = node
    return out


def difference(a: Set, b: Set) -> Set:
    """Paths of `a` that are not members of `b`; a parent minus its child stays, and a child
    minus its parent stays too (upstream ``Set.Difference``)."""
    if not b or not a:
        return a
    if a is b:
        return {}
    out: Set | None = None
    for element, bn in b.items():
        an = a.get(element)
        if an is None:
            continue
        node = _node(_member(an) and not _member(bn), difference(_kids(an), _kids(bn)), an)
        if node is not an:
            if out is None:
                out = dict(a)
            if node is None:
                del out[element]
            else:
                out[element] = node
    return a if out is None else out


def recursive_difference(a: Set, b: Set) -> Set:
    """Paths of `a` that are neither members of `b` nor below one of its members (upstream
    ``Set.RecursiveDifference``: removing ``spec`` removes everything under it)."""
    if not b or not a:
        return a
    out: Set | None = None
    for element, bn in b.items():
        an = a.get(element)
        if an is None:
            continue
        node = None if _member(bn) else _node(_member(an), recursive_difference(_kids(an), bn), an)
        if node is not an:
            if out is None:
                out = dict(a)
            if node is None:
                del out[element]
            else:
                out[element] = node
    return a if out is None else out


def leaves(root: Set) -> Set:
    """Only the members that have no children of their own (upstream ``Set.Leaves``)."""
    out: Set = {}
    for element, node in root.items():
        if not node:
            out[element] = {}
            continue
        kids = leaves(_kids(node))
        if kids:
            out[element] = kids
    return out


# --- the wire form -----------------------------------------------------------------------


def to_fields_v1(root: Set) -> dict[str, Any]:
    """The set as upstream serializes it: keys in upstream's order, ``.`` first."""
    return _ordered(root)


def _ordered(node: Set) -> dict[str, Any]:
    if len(node) <= 1:
        if not node:
            return {}
        ((element, child),) = node.items()
        return {element: _ordered(child) if child else {}}
    return {e: _ordered(node[e]) if node[e] else {} for e in sorted(node, key=element_order)}


def canonical_fields_v1(data: Any) -> Set:
    """A ``fieldsV1`` from a client, checked and rewritten in canonical form (keys and values
    re-serialized as upstream would), as upstream's decoder does. Elements of an unknown kind
    are dropped, as upstream drops them; anything else malformed raises FieldsError."""
    if not isinstance(data, dict):
        raise FieldsError("expected a JSON object")
    node, _ = _canonical_node(data)
    return node


def _canonical_node(data: dict[str, Any]) -> tuple[Set, bool]:
    """(children, member) of one encoded node."""
    kids: Set = {}
    member = False
    for raw, child in data.items():
        if raw == MEMBER:
            member = True
            continue
        if not isinstance(child, dict):
            raise FieldsError(f"the value of {raw!r} is not a JSON object")
        element = _canonical_element(raw)
        if element is None:
            continue
        grandkids, child_member = _canonical_node(child)
        node = _node(child_member or not grandkids, grandkids)
        if node is not None:
            existing = kids.get(element)
            kids[element] = node if existing is None else _union_node(existing, node)
    return kids, member or not kids


def _canonical_element(raw: str) -> str | None:
    if len(raw) < 2 or raw[1] != ":":
        raise FieldsError(f"missing colon: {raw}")
    kind, rest = raw[0], raw[2:]
    try:
        if kind == "f":
            return raw
        if kind == "k":
            fields = orjson.loads(rest)
            if not isinstance(fields, dict):
                raise FieldsError(f"a key must be a JSON object: {raw}")
            return key(fields)
        if kind == "v":
            return value(orjson.loads(rest))
        if kind == "i":
            return index(int(rest))
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise FieldsError(f"parsing key as path element: {raw}: {exc}") from None
    return None  # an element kind a newer server may know: dropped, as upstream drops it
