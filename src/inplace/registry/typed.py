"""Objects walked by their merge types: field sets, comparisons, apply merges, removals.

A port of structured-merge-diff's ``typed`` package to plain JSON values and the atoms of
:mod:`inplace.registry.fieldschema`, keeping upstream's rules (they decide what a field manager
owns, so they must match to the letter):

* :func:`field_set` (``ToFieldSet``): every scalar, atomic list and atomic map is a member;
  a map's key is a member too when its value is ``null`` or ``{}``, or when it is not a
  declared field (a label, an annotation); every item of an associative list is a member;
  duplicated items are members but not walked.
* :func:`compare` (``Compare``): fields added, removed and modified from one object to the
  next; a granular map or list that appears or disappears is itself added or removed, and
  two empty (or ``null``) containers compare as one leaf so ``{}`` and ``null`` differ.
* :func:`merge` (``Merge``, with the apply rule "keep the right-hand side"): maps by key,
  associative lists by item key in upstream's order, atomic values replaced whole.
* :func:`remove_items` (``RemoveItems``) and :func:`named_fields_as_members`
  (``EnsureNamedFieldsAreMembers``), which apply's pruning needs.
* :func:`check_applied`: what upstream's typed conversion of an applied configuration
  refuses (a field the schema does not declare, duplicated list items).

Sets are :mod:`inplace.registry.fieldpath` tries. ``MISSING`` stands for Go's nil value (a field
that is not there), which differs from JSON ``null``. Equal subtrees are skipped with one
``==`` (C speed), which is what keeps a comparison of two large objects that differ in one
field cheap.
"""

from __future__ import annotations

from typing import Any, Final

from inplace.registry import fieldpath
from inplace.registry.fieldpath import Set
from inplace.registry.fieldschema import DEDUCED, SCALAR, Atom

__all__ = [
    "MISSING",
    "Comparison",
    "TypedError",
    "check_applied",
    "compare",
    "field_set",
    "item_element",
    "merge",
    "named_fields_as_members",
    "remove_items",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: A value that is not there (Go's nil ``value.Value``), as opposed to JSON ``null``.
MISSING: Final[Any] = _Missing()

_LEAF, _MAP, _LIST = 0, 1, 2


class TypedError(ValueError):
    """A value the schema cannot take (upstream's ``ValidationErrors``), path first."""


def _role(atom: Atom, data: Any) -> int:
    """How a value of this type is walked: as a leaf, a map or a list (upstream
    ``deduceAtom`` then ``handleAtom``; ``null`` takes the type's own shape)."""
    kind = type(data)
    if kind is dict:
        return _MAP if atom.fields is not None else _LEAF
    if kind is list:
        return _LIST if atom.list_elem is not None else _LEAF
    if data is None:
        if atom.fields is not None:
            return _MAP
        if atom.list_elem is not None:
            return _LIST
    return _LEAF


# --- list items --------------------------------------------------------------------------


def item_element(atom: Atom, item: Any) -> str:
    """The path element of an associative list's item: its key fields (a field left out
    takes its default, if it has one), or the item itself for a set of scalars."""
    keys = atom.keys
    if keys:
        if type(item) is not dict:
            if item is None:
                raise TypedError("associative list with keys may not have a null element")
            raise TypedError("associative list with keys may not have non-map elements")
        fields: dict[str, Any] = {}
        elem = atom.list_elem
        for name in keys:
            if name in item:
                fields[name] = item[name]
            elif elem is not None and name in elem.defaults:
                fields[name] = elem.defaults[name]
        if not fields:
            quoted = "[" + " ".join(f'"{k}"' for k in keys) + "]"
            raise TypedError(
                f"associative list with keys has an element that omits all key fields "
                f"{quoted} (and doesn't have default values for any key fields)"
            )
        return fieldpath.key(fields)
    if type(item) is dict:
        raise TypedError("associative list without keys has an element that's a map type")
    if type(item) is list:
        raise TypedError("not supported: associative list with lists as elements")
    if item is None:
        raise TypedError("associative list without keys has an element that's an explicit null")
    return fieldpath.value(item)


# --- ToFieldSet --------------------------------------------------------------------------


def field_set(data: Any, atom: Atom) -> Set:
    """The fields a value sets (upstream ``TypedValue.ToFieldSet``)."""
    _, kids = _fs(data, atom)
    return kids


def _fs(data: Any, atom: Atom) -> tuple[bool, Set]:
    """(whether the value is a member itself, the set of what is below it)."""
    role = _role(atom, data)
    if role == _MAP:
        if atom.map_atomic:
            return True, {}
        if type(data) is not dict:
            return False, {}
        out: Set = {}
        fields = atom.fields or {}
        for name, child in data.items():
            declared = fields.get(name)
            member, kids = _fs(child, declared or atom.elem or DEDUCED)
            if child is None or (type(child) is dict and not child) or declared is None:
                member = True
            node = _node(member, kids)
            if node is not None:
                out["f:" + name] = node
        return False, out
    if role == _LIST:
        if atom.list_atomic:
            return True, {}
        if type(data) is not list:
            return False, {}
        return False, _fs_list(data, atom)
    return True, {}


def _fs_list(items: list[Any], atom: Atom) -> Set:
    elements = [item_element(atom, item) for item in items]
    seen: set[str] = set()
    duplicated: set[str] = set()
    for element in elements:
        if element in seen:
            duplicated.add(element)
        seen.add(element)
    out: Set = {}
    elem = atom.list_elem or DEDUCED
    for element, item in zip(elements, items, strict=True):
        if element in duplicated:
            out[element] = {}
            continue
        _, kids = _fs(item, elem)
        out[element] = _node(True, kids) or {}
    return out


def _node(member: bool, kids: Set) -> Set | None:
    if not kids:
        return {} if member else None
    if member:
        return {fieldpath.MEMBER: {}, **kids}
    return kids


# --- Compare -----------------------------------------------------------------------------


class Comparison:
    """What changed from one object to the next (upstream ``typed.Comparison``)."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self, removed: Set, modified: Set, added: Set) -> None:
        self.removed = removed
        self.modified = modified
        self.added = added

    def __repr__(self) -> str:
        return f"Comparison(removed={self.removed}, modified={self.modified}, added={self.added})"

    def is_same(self) -> bool:
        return not (self.removed or self.modified or self.added)

    @property
    def changed(self) -> Set:
        """Modified and added together: what a writer takes from every other owner."""
        return fieldpath.union(self.modified, self.added)


def compare(lhs: Any, rhs: Any, atom: Atom) -> Comparison:
    """The fields `rhs` adds, removes and modifies relative to `lhs` (upstream
    ``TypedValue.Compare``)."""
    result = Comparison({}, {}, {})
    _compare(lhs, rhs, atom, [], result)
    return result


def _compare(lhs: Any, rhs: Any, atom: Atom, path: list[str], out: Comparison) -> None:
    if lhs is not MISSING and rhs is not MISSING and lhs == rhs:
        return
    left = _role(atom, lhs) if lhs is not MISSING else None
    right = _role(atom, rhs) if rhs is not MISSING else None
    if left is not None and right is not None and left != right:
        # A value that changed shape (a map became a string): upstream walks each side as
        # its own shape against nothing of that shape.
        _compare_as(left, lhs, None, atom, path, out)
        _compare_as(right, None, rhs, atom, path, out)
        return
    _compare_as(right if left is None else left, lhs, rhs, atom, path, out)


def _compare_as(
    role: int | None, lhs: Any, rhs: Any, atom: Atom, path: list[str], out: Comparison
) -> None:
    if role == _MAP:
        lmap = lhs if type(lhs) is dict else {}
        rmap = rhs if type(rhs) is dict else {}
        zeros = atom.zeros
        if zeros:
            lmap, rmap = _with_zeros(lmap, zeros), _with_zeros(rmap, zeros)
        if atom.map_atomic or (not lmap and not rmap):
            _leaf(lhs, rhs, path, out)
            return
        for name, lvalue in lmap.items():
            path.append("f:" + name)
            _compare(lvalue, rmap.get(name, MISSING), atom.child(name), path, out)
            path.pop()
        for name, rvalue in rmap.items():
            if name not in lmap:
                path.append("f:" + name)
                _compare(MISSING, rvalue, atom.child(name), path, out)
                path.pop()
    elif role == _LIST:
        llist = lhs if type(lhs) is list else []
        rlist = rhs if type(rhs) is list else []
        if atom.list_atomic or (not llist and not rlist):
            _leaf(lhs, rhs, path, out)
            return
        _compare_items(llist, rlist, atom, path, out)
    else:
        _leaf(lhs, rhs, path, out)
        return
    if path:
        if lhs is MISSING:
            fieldpath.insert(out.added, tuple(path))
        elif rhs is MISSING:
            fieldpath.insert(out.removed, tuple(path))


def _with_zeros(data: dict[str, Any], zeros: dict[str, Any]) -> dict[str, Any]:
    """A struct as Go holds it: the fields Go always prints are there, zero if unset (so an
    object that lacks ``status`` compares as one whose ``status`` is ``{}``)."""
    if not data:
        return data
    missing = [name for name in zeros if name not in data]
    if not missing:
        return data
    return {**data, **{name: zeros[name] for name in missing}}


def _leaf(lhs: Any, rhs: Any, path: list[str], out: Comparison) -> None:
    if not path:
        return
    if lhs is MISSING:
        fieldpath.insert(out.added, tuple(path))
    elif rhs is MISSING:
        fieldpath.insert(out.removed, tuple(path))
    elif lhs != rhs:
        fieldpath.insert(out.modified, tuple(path))


def _group(
    atom: Atom, items: list[Any], seen: dict[str, list[Any]], order: list[str]
) -> dict[str, list[Any]]:
    """A list's items by element (duplicates together); elements new to `seen` are appended
    to `order` as they come."""
    grouped: dict[str, list[Any]] = {}
    for item in items:
        element = item_element(atom, item)
        found = grouped.get(element)
        if found is None:
            grouped[element] = [item]
            if element not in seen:
                order.append(element)
        else:
            found.append(item)
    return grouped


def _compare_items(
    llist: list[Any], rlist: list[Any], atom: Atom, path: list[str], out: Comparison
) -> None:
    order: list[str] = []
    lvalues = _group(atom, llist, {}, order)
    rvalues = _group(atom, rlist, lvalues, order)
    elem = atom.list_elem or DEDUCED
    for element in order:
        lefts = lvalues.get(element, [])
        rights = rvalues.get(element, [])
        path.append(element)
        if len(lefts) <= 1 and len(rights) <= 1:
            _compare(
                lefts[0] if lefts else MISSING, rights[0] if rights else MISSING, elem, path, out
            )
        elif len(lefts) >= 2 and len(rights) >= 2:
            if lefts != rights:
                fieldpath.insert(out.modified, tuple(path))
        elif len(lefts) >= 2:
            if rights:
                _compare(MISSING, rights[0], elem, path, out)
            fieldpath.insert(out.removed, tuple(path))
        else:
            if lefts:
                _compare(lefts[0], MISSING, elem, path, out)
            fieldpath.insert(out.added, tuple(path))
        path.pop()


# --- Merge (apply) -----------------------------------------------------------------------


def merge(lhs: Any, rhs: Any, atom: Atom) -> Any:
    """`rhs` (an applied configuration) merged into `lhs` (the live object), as upstream's
    ``TypedValue.Merge`` with its apply rule: a leaf takes the right-hand side (``null``
    included); MISSING when nothing is left."""
    return _merge(lhs, rhs, atom)


def _merge(lhs: Any, rhs: Any, atom: Atom) -> Any:
    if rhs is MISSING:
        return lhs  # what upstream's walk of the live side alone gives back
    left = _role(atom, lhs) if lhs is not MISSING else None
    right = _role(atom, rhs) if rhs is not MISSING else None
    role = right if left is None else left
    if left is not None and right is not None and left != right:
        role = _LEAF
    if role == _MAP:
        lmap = lhs if type(lhs) is dict else {}
        rmap = rhs if type(rhs) is dict else {}
        if atom.map_atomic or (not lmap and not rmap):
            return rhs if rhs is not MISSING else lhs
        out: dict[str, Any] = {}
        for name, lvalue in lmap.items():
            rvalue = rmap.get(name, MISSING)
            if rvalue is MISSING or rvalue is lvalue:
                out[name] = lvalue
                continue
            merged = _merge(lvalue, rvalue, atom.child(name))
            if merged is not MISSING:
                out[name] = merged
        for name, rvalue in rmap.items():
            if name not in lmap:
                merged = _merge(MISSING, rvalue, atom.child(name))
                if merged is not MISSING:
                    out[name] = merged
        return out if out else MISSING
    if role == _LIST:
        llist = lhs if type(lhs) is list else []
        rlist = rhs if type(rhs) is list else []
        if atom.list_atomic or (not llist and not rlist):
            return rhs if rhs is not MISSING else lhs
        items = _merge_items(llist, rlist, atom)
        return items if items else MISSING
    return rhs if rhs is not MISSING else lhs


def _index(atom: Atom, items: list[Any], *, duplicates: bool) -> tuple[list[str], dict[str, Any]]:
    elements: list[str] = []
    observed: dict[str, Any] = {}
    for item in items:
        element = item_element(atom, item)
        if element in observed:
            if not duplicates:
                raise TypedError(f"duplicate entries for key {fieldpath.format_element(element)}")
            observed[element] = None  # duplicated items are not merged with the new value
        else:
            observed[element] = item
        elements.append(element)
    return elements, observed


def _merge_items(llist: list[Any], rlist: list[Any], atom: Atom) -> list[Any]:
    """Upstream's order: the live items in their order, each item of the configuration
    taking the place of its live twin, new items after the live item they follow."""
    relements, robserved = _index(atom, rlist, duplicates=False)
    lelements, lobserved = _index(atom, llist, duplicates=True)
    elem = atom.list_elem or DEDUCED
    shared = [e for e in relements if e in lobserved]
    shared_at = 0
    next_shared = shared[0] if shared else None
    merged_rhs: set[str] = set()
    out: list[Any] = []

    def take(left: Any, right: Any) -> None:
        value = _merge(left, right, elem)
        if value is not MISSING:
            out.append(value)

    li = ri = 0
    llen, rlen = len(lelements), len(relements)
    while li < llen or ri < rlen:
        if li < llen and ri < rlen:
            element = lelements[li]
            if element == relements[ri]:
                merged_rhs.add(element)
                left = lobserved.get(element)
                take(MISSING if left is None else left, robserved[element])
                li += 1
                ri += 1
                shared_at += 1
                next_shared = shared[shared_at] if shared_at < len(shared) else None
                continue
            if element in robserved and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < llen:
            element = lelements[li]
            if element not in robserved:
                take(llist[li], MISSING)
                li += 1
                continue
            if element in merged_rhs:
                li += 1
        if ri < rlen:
            element = relements[ri]
            merged_rhs.add(element)
            left = lobserved.get(element)
            take(MISSING if left is None else left, robserved[element])
            ri += 1
            if next_shared is not None and next_shared == element:
                shared_at += 1
                next_shared = shared[shared_at] if shared_at < len(shared) else None
    return out


# --- RemoveItems and EnsureNamedFieldsAreMembers ------------------------------------------


def remove_items(data: Any, to_remove: Set, atom: Atom) -> Any:
    """`data` without the members of `to_remove` (upstream ``TypedValue.RemoveItems``): a
    member goes with everything below it, and a map or list left empty becomes ``null``,
    as upstream's does."""
    if not to_remove:
        return data
    role = _role(atom, data)
    if role == _MAP:
        if atom.map_atomic or type(data) is not dict or not data:
            return None
        out: dict[str, Any] = {}
        for name, child in data.items():
            node = to_remove.get("f:" + name)
            if node is not None:
                if not node or fieldpath.MEMBER in node:
                    continue
                child = remove_items(child, node, atom.child(name))
            out[name] = child
        return out if out else None
    if role == _LIST:
        if atom.list_atomic or type(data) is not list or not data:
            return None
        items: list[Any] = []
        elem = atom.list_elem or DEDUCED
        for item in data:
            node = to_remove.get(item_element(atom, item))
            if node is not None:
                if not node or fieldpath.MEMBER in node:
                    continue
                item = remove_items(item, node, elem)
                if item is None:
                    item = {}  # an item keeps its place (upstream's would be a null item)
            items.append(item)
        return items if items else None
    return data


def named_fields_as_members(fields: Set, atom: Atom) -> Set:
    """`fields` with every declared struct field that has members below it made a member
    too (upstream ``Set.EnsureNamedFieldsAreMembers``), so pruning can tell a field that
    nobody owns any more from one that only holds owned children."""
    out: Set = {}
    declared = atom.fields or {}
    for element, node in fields.items():
        if not node:
            out[element] = node
            continue
        member = fieldpath.MEMBER in node
        kids = {k: v for k, v in node.items() if k != fieldpath.MEMBER} if member else node
        if element.startswith("f:"):
            name = element[2:]
            child_atom = atom.child(name) if atom.fields is not None else SCALAR
            member = member or name in declared
        elif element.startswith("k:") and atom.list_elem is not None:
            child_atom = atom.list_elem
        else:
            child_atom = SCALAR
        kids = named_fields_as_members(kids, child_atom)
        out[element] = {fieldpath.MEMBER: {}, **kids} if member else kids
    return out


# --- the applied configuration ------------------------------------------------------------


def check_applied(data: Any, atom: Atom) -> list[str]:
    """What upstream's typed conversion of an applied configuration refuses, as its
    messages (``.spec.foo: field not declared in schema``); empty when it is fine."""
    errors: list[str] = []
    _check(data, atom, "", errors)
    return errors


def _check(data: Any, atom: Atom, path: str, errors: list[str]) -> None:
    role = _role(atom, data)
    if role == _MAP and type(data) is dict:
        fields = atom.fields or {}
        for name, child in data.items():
            declared = fields.get(name)
            if declared is None and atom.elem is None:
                errors.append(f"{path}.{name}: field not declared in schema")
                return
            _check(child, declared or atom.elem or DEDUCED, f"{path}.{name}", errors)
    elif role == _LIST and type(data) is list:
        elem = atom.list_elem or DEDUCED
        if atom.list_atomic:
            for position, item in enumerate(data):
                _check(item, elem, f"{path}[{position}]", errors)
            return
        observed: set[str] = set()
        for position, item in enumerate(data):
            try:
                element = item_element(atom, item)
            except TypedError as exc:
                errors.append(f"{path}: element {position}: {exc}")
                return
            if element in observed:
                shown = fieldpath.format_element(element)
                errors.append(f"{path}: duplicate entries for key {shown}")
            observed.add(element)
            _check(item, elem, path + fieldpath.format_element(element), errors)
