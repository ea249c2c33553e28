"""The three PATCH flavours the API server accepts: JSON patch, JSON merge patch, strategic merge.

All three are pure functions over plain JSON values (dicts, lists, str, int, float, bool, None).
They never mutate their inputs and never deep-copy a whole document: they copy only the
containers on the path they change ("copy on write"), so the result shares every untouched
subtree with the inputs. Callers that want to mutate the result further must copy what they
touch, as with any object read from a cache. Any failure raises `PatchError` (the API server
answers it with a 4xx) and leaves the inputs as they were.

Strategic merge patch follows upstream's `StrategicMergeMapPatch` (apimachinery
pkg/util/strategicpatch/patch.go), the default of `kubectl patch`, with these deliberate
differences, all on inputs upstream handles poorly:

- values the original lacks are themselves run through the merge (against an empty value), so
  directives and nulls nested in them never end up stored in the object;
- `$patch: merge` in a map is accepted as the default it names (upstream rejects it);
- `$retainKeys` is accepted only where the field's strategy includes retainKeys;
- `$deleteFromPrimitiveList/x` is an error unless x is a merging list of primitives, and does
  nothing when x is absent (upstream would store the deletion list as x);
- keys starting with "$" that are not directives are rejected.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from inplace.registry.patchmeta import FieldPatchMeta, PatchSchema


class PatchError(ValueError):
    """A patch that cannot be applied; the message names the operation, path or field."""


# --------------------------------------------------------------------------- JSON helpers


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: unlike Python's `==`, `true` is not `1`; `1` and `1.0` are equal."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, str) or a is None:
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping):
        return (
            isinstance(b, Mapping)
            and len(a) == len(b)
            and all(k in b and json_equal(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(json_equal, a, b))
    return False


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


# --------------------------------------------------------------------------- JSON patch (RFC 6902)

_INDEX = re.compile(r"0|[1-9][0-9]*")
_BAD_ESCAPE = re.compile(r"~(?![01])")
_MISSING: Any = object()


def _parse_pointer(pointer: Any, member: str) -> list[str]:
    """RFC 6901 pointer → reference tokens ("" is the whole document)."""
    if not isinstance(pointer, str):
        raise PatchError(f'"{member}" must be a string JSON pointer')
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f'"{member}" {pointer!r} is not a JSON pointer (must start with "/")')
    tokens = pointer[1:].split("/")
    for i, token in enumerate(tokens):
        if "~" in token:
            if _BAD_ESCAPE.search(token):
                raise PatchError(f'"{member}" {pointer!r} has an invalid "~" escape')
            tokens[i] = token.replace("~1", "/").replace("~0", "~")
    return tokens


def _array_index(token: str, size: int, *, for_insert: bool) -> int:
    """Index into an array of `size`; "-" (past the end) only where inserting."""
    if token == "-" and for_insert:
        return size
    if not _INDEX.fullmatch(token):
        raise PatchError(f"{token!r} is not an array index")
    index = int(token)
    if index > size or (index == size and not for_insert):
        raise PatchError(f"array index {index} is out of range (length {size})")
    return index


def _child(node: Any, token: str) -> Any:
    """The value `token` names inside `node`, or _MISSING."""
    if isinstance(node, Mapping):
        return node.get(token, _MISSING)
    if isinstance(node, list):
        if not _INDEX.fullmatch(token) or int(token) >= len(node):
            return _MISSING
        return node[int(token)]
    return _MISSING


class _CowDocument:
    """A document changed in place only in containers this object created (copy on write)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        # id → container, holding a reference so ids are never reused while we compare them.
        self._owned: dict[int, Any] = {}

    def _own(self, node: Any) -> Any:
        if id(node) in self._owned:
            return node
        copy: Any = dict(node) if isinstance(node, Mapping) else list(node)
        self._owned[id(copy)] = copy
        return copy

    def get(self, tokens: list[str], pointer: str) -> Any:
        node = self.root
        for token in tokens:
            node = _child(node, token)
            if node is _MISSING:
                raise PatchError(f"path {pointer!r} does not exist")
        return node

    def _parent(self, tokens: list[str], pointer: str) -> Any:
        """A writable copy of the container holding the last token, linked into the tree."""
        if not isinstance(self.root, Mapping | list):
            raise PatchError(f"path {pointer!r} does not exist (the document is not a container)")
        node = self.root = self._own(self.root)
        for token in tokens[:-1]:
            child = _child(node, token)
            if child is _MISSING:
                raise PatchError(f"path {pointer!r} does not exist")
            if not isinstance(child, Mapping | list):
                raise PatchError(f"path {pointer!r} does not exist ({token!r} is not a container)")
            owned = self._own(child)
            if owned is not child:
                node[int(token) if isinstance(node, list) else token] = owned
            node = owned
        return node

    def add(self, tokens: list[str], pointer: str, value: Any) -> None:
        if not tokens:
            self.root = value
            return
        parent, last = self._parent(tokens, pointer), tokens[-1]
        if isinstance(parent, list):
            parent.insert(_array_index(last, len(parent), for_insert=True), value)
        else:
            parent[last] = value

    def remove(self, tokens: list[str], pointer: str) -> Any:
        if not tokens:
            raise PatchError("cannot remove the whole document")
        parent, last = self._parent(tokens, pointer), tokens[-1]
        if isinstance(parent, list):
            return parent.pop(_array_index(last, len(parent), for_insert=False))
        if last not in parent:
            raise PatchError(f"path {pointer!r} does not exist")
        return parent.pop(last)

    def replace(self, tokens: list[str], pointer: str, value: Any) -> None:
        if not tokens:
            self.root = value
            return
        parent, last = self._parent(tokens, pointer), tokens[-1]
        if isinstance(parent, list):
            parent[_array_index(last, len(parent), for_insert=False)] = value
        elif last not in parent:
            raise PatchError(f"path {pointer!r} does not exist")
        else:
            parent[last] = value


_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})


def apply_json_patch(doc: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch; all operations or none.

    Errors name the failing operation by index and path, e.g.
    `operation 2 (remove /spec/x): path '/spec/x' does not exist`.
    """
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be an array of operations")
    document = _CowDocument(doc)
    for i, operation in enumerate(operations):
        if not isinstance(operation, Mapping):
            raise PatchError(f"operation {i}: must be an object, not {_type_name(operation)}")
        op = operation.get("op")
        where = f"operation {i} ({op} {operation.get('path')})"
        try:
            _apply_operation(document, op, operation)
        except PatchError as err:
            raise PatchError(f"{where}: {err}") from None
    return document.root


def _value_of(operation: Mapping[str, Any]) -> Any:
    if "value" not in operation:
        raise PatchError('missing "value"')
    return operation["value"]


def _apply_operation(document: _CowDocument, op: Any, operation: Mapping[str, Any]) -> None:
    if op not in _OPS:
        raise PatchError(f"unknown op {op!r} (expected one of {', '.join(sorted(_OPS))})")
    if "path" not in operation:
        raise PatchError('missing "path"')
    pointer = operation["path"]
    tokens = _parse_pointer(pointer, "path")
    if op == "add":
        document.add(tokens, pointer, _value_of(operation))
    elif op == "remove":
        document.remove(tokens, pointer)
    elif op == "replace":
        value = _value_of(operation)
        document.replace(tokens, pointer, value)
    elif op == "test":
        value = _value_of(operation)
        actual = document.get(tokens, pointer)
        if not json_equal(actual, value):
            raise PatchError(f"test failed: value at {pointer!r} is {actual!r}, not {value!r}")
    else:  # move, copy
        if "from" not in operation:
            raise PatchError('missing "from"')
        source = operation["from"]
        from_tokens = _parse_pointer(source, "from")
        if op == "copy":
            value = _deep_copy(document.get(from_tokens, source))
            document.add(tokens, pointer, value)
            return
        if tokens[: len(from_tokens)] == from_tokens and len(tokens) > len(from_tokens):
            raise PatchError(f"cannot move {source!r} into its own child {pointer!r}")
        value = document.get(from_tokens, source)
        if tokens == from_tokens:
            return
        document.remove(from_tokens, source)
        document.add(tokens, pointer, value)


# --------------------------------------------------------------------------- merge patch (RFC 7386)


def apply_merge_patch(doc: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes a member, anything else replaces."""
    if not isinstance(patch, Mapping):
        return patch
    target: Mapping[str, Any] = doc if isinstance(doc, Mapping) else {}
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(target.get(key), value)
    return result


def create_merge_patch(original: Any, modified: Any) -> Any:
    """A merge patch taking `original` to `modified` (which must hold no null object members)."""
    if not (isinstance(original, Mapping) and isinstance(modified, Mapping)):
        return modified
    patch: dict[str, Any] = {key: None for key in original if key not in modified}
    for key, value in modified.items():
        if key not in original:
            patch[key] = value
            continue
        before = original[key]
        if isinstance(before, Mapping) and isinstance(value, Mapping):
            sub = create_merge_patch(before, value)
            if sub:
                patch[key] = sub
        elif not json_equal(before, value):
            patch[key] = value
    return patch


# --------------------------------------------------------------------------- strategic merge patch

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder"
_DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"


def apply_strategic_merge_patch(
    doc: Mapping[str, Any], patch: Mapping[str, Any], schema: PatchSchema
) -> dict[str, Any]:
    """Apply a strategic merge patch as the API server does for built-in kinds.

    Maps merge recursively and null deletes a key; lists whose field has strategy "merge" merge
    items by the field's merge key (primitives: set union); other lists are replaced whole.
    Directives: `$patch` (replace / delete / merge), `$retainKeys`, `$setElementOrder/<field>`,
    `$deleteFromPrimitiveList/<field>`. Without `$setElementOrder`, items of a merged list keep
    their relative order, patch items keep the patch's order, and new items go before the
    existing items that follow them, as upstream does.
    """
    if not isinstance(doc, Mapping):
        raise PatchError(f"the object is a JSON {_type_name(doc)}, not an object")
    if not isinstance(patch, Mapping):
        raise PatchError(f"a strategic merge patch must be a JSON object, not {_type_name(patch)}")
    return _merge_map(doc, patch, schema, retain_keys=False, path="")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _merge_map(
    original: Mapping[str, Any] | None,
    patch: Mapping[str, Any],
    schema: PatchSchema,
    *,
    retain_keys: bool,
    path: str,
) -> dict[str, Any]:
    where = path or "the object"
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        rest = {k: v for k, v in patch.items() if k != _DIRECTIVE}
        if directive == "replace":
            return _merge_map(None, rest, schema, retain_keys=retain_keys, path=path)
        if directive == "delete":
            return {}
        if directive != "merge":
            raise PatchError(f"{where}: unknown $patch directive {directive!r}")
        patch = rest

    result: dict[str, Any] = dict(original) if original else {}

    if _RETAIN_KEYS in patch:
        if not retain_keys:
            raise PatchError(
                f"{where}: $retainKeys is only allowed where the field's patch strategy "
                "includes retainKeys"
            )
        keep = patch[_RETAIN_KEYS]
        if not isinstance(keep, list) or not all(isinstance(k, str) for k in keep):
            raise PatchError(f"{where}: $retainKeys must be a list of field names")
        keep_set = set(keep)
        for key, value in patch.items():
            if value is None or key.startswith("$"):
                continue
            if key not in keep_set:
                raise PatchError(f"{where}: field {key!r} is in the patch but not in $retainKeys")
        result = {k: v for k, v in result.items() if k in keep_set}

    regular: list[str] = []
    set_orders: list[tuple[str, Any]] = []
    deletions: list[tuple[str, Any]] = []
    for key, value in patch.items():
        if not key.startswith("$"):
            regular.append(key)
            continue
        if key == _RETAIN_KEYS:
            continue
        prefix, _, field = key.partition("/")
        if prefix == _SET_ORDER and field:
            set_orders.append((field, value))
        elif prefix == _DELETE_FROM_PRIMITIVE_LIST and field:
            deletions.append((field, value))
        else:
            raise PatchError(f"{where}: unknown directive {key!r}")

    consumed: set[str] = set()
    for field, order in set_orders:
        _apply_set_element_order(result, patch, field, order, schema, _join(path, field))
        consumed.add(field)

    for key in regular:
        if key in consumed:
            continue
        value = patch[key]
        if value is None:
            result.pop(key, None)
            continue
        result[key] = _merge_value(result.get(key), value, key, schema, _join(path, key))

    for field, values in deletions:
        _delete_from_primitive_list(result, field, values, schema, _join(path, field))
    return result


def _merge_value(current: Any, value: Any, key: str, schema: PatchSchema, path: str) -> Any:
    """The new value of field `key`: `value` merged into `current` (None when absent)."""
    meta = schema.meta(key)
    if isinstance(value, Mapping):
        if isinstance(current, Mapping) and not (meta and meta.replaces):
            return _merge_map(
                current,
                value,
                schema.child(key),
                retain_keys=bool(meta and meta.retains_keys),
                path=path,
            )
        # Absent, of another type, or replaced whole: merge into nothing so that directives
        # and nulls inside the patch value are resolved, never stored.
        return _merge_map(
            None, value, schema.child(key), retain_keys=bool(meta and meta.retains_keys), path=path
        )
    if isinstance(value, list) and meta and meta.merges:
        base = current if isinstance(current, list) else []
        return _merge_list(base, value, schema.child(key), meta, path)
    return value


def _scalar_key(value: Any, path: str) -> Hashable:
    """A hashable identity for a JSON scalar that keeps `true` apart from `1`."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z", None)
    raise PatchError(f"{path}: {_type_name(value)} where a scalar (or merge key value) is expected")


def _element_kind(path: str, *lists: list[Any]) -> str | None:
    """Whether the items of `lists` are objects or scalars (None if empty); mixed is an error."""
    kind: str | None = None
    for items in lists:
        for item in items:
            if isinstance(item, list):
                raise PatchError(f"{path}: lists of lists cannot be merged")
            this = "object" if isinstance(item, Mapping) else "scalar"
            if kind is None:
                kind = this
            elif kind != this:
                raise PatchError(f"{path}: list items are not all of the same type")
    return kind


def _keyed(item: Any, merge_key: str, path: str) -> Hashable:
    if not isinstance(item, Mapping):
        raise PatchError(f"{path}: list item {item!r} is not an object")
    if merge_key not in item:
        raise PatchError(
            f"{path}: {dict(item)!r} does not contain declared merge key {merge_key!r}"
        )
    return _scalar_key(item[merge_key], f"{path}[{merge_key}]")


def _item_path(path: str, item: Mapping[str, Any], merge_key: str) -> str:
    return f"{path}[{merge_key}={item.get(merge_key)}]"


def _merge_list(
    original: list[Any],
    patch: list[Any],
    item_schema: PatchSchema,
    meta: FieldPatchMeta,
    path: str,
) -> list[Any]:
    """Merge a list whose field has strategy "merge" (by merge key, or as a set of scalars)."""
    if not original and not patch:
        return original
    kind = _element_kind(path, original, patch)
    merge_key = meta.merge_key
    if kind == "scalar":
        if merge_key:
            raise PatchError(f"{path}: items must be objects with merge key {merge_key!r}")
        key = _scalar_key
        merged: list[Any] = []
        seen: set[Hashable] = set()
        for item in (*original, *patch):
            k = key(item, path)
            if k not in seen:
                seen.add(k)
                merged.append(item)
        return _order_like_upstream(
            merged,
            patch_order=[key(v, path) for v in patch],
            server_order=[key(v, path) for v in original],
            key=lambda v: key(v, path),
        )

    if not merge_key:
        raise PatchError(f"{path}: cannot merge a list of objects without a merge key")
    retain = meta.retains_keys
    remaining = list(original)
    plain: list[Mapping[str, Any]] = []
    replace = False
    for item in patch:
        if _DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[_DIRECTIVE]
        if directive == "delete":
            doomed = _keyed(item, merge_key, path)
            remaining = [o for o in remaining if _keyed(o, merge_key, path) != doomed]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError(f"{path}: $patch: merge cannot be used on a list item")
        else:
            raise PatchError(f"{path}: unknown $patch directive {directive!r}")
    if replace:
        for item in plain:
            _keyed(item, merge_key, path)
        return [
            _merge_map(
                None,
                item,
                item_schema,
                retain_keys=retain,
                path=_item_path(path, item, merge_key),
            )
            for item in plain
        ]

    merged = list(remaining)
    position: dict[Hashable, int] = {}
    for i, existing in enumerate(merged):
        position.setdefault(_keyed(existing, merge_key, path), i)
    patch_order: list[Hashable] = []
    for item in plain:
        k = _keyed(item, merge_key, path)
        patch_order.append(k)
        at = position.get(k)
        item_path = _item_path(path, item, merge_key)
        if at is None:
            position[k] = len(merged)
            merged.append(_merge_map(None, item, item_schema, retain_keys=retain, path=item_path))
        else:
            merged[at] = _merge_map(
                merged[at], item, item_schema, retain_keys=retain, path=item_path
            )
    return _order_like_upstream(
        merged,
        patch_order=patch_order,
        server_order=[_keyed(o, merge_key, path) for o in remaining],
        key=lambda o: _keyed(o, merge_key, path),
    )


def _order_like_upstream(
    merged: list[Any],
    *,
    patch_order: list[Hashable],
    server_order: list[Hashable],
    key: Callable[[Any], Hashable],
) -> list[Any]:
    """Upstream's normalizeElementOrder: items named by `patch_order` take that order, the
    others keep `server_order`, and the two runs are interleaved by server position."""
    patch_index: dict[Hashable, int] = {}
    for i, k in enumerate(patch_order):
        patch_index.setdefault(k, i)
    server_index: dict[Hashable, int] = {}
    for i, k in enumerate(server_order):
        server_index.setdefault(k, i)
    keyed = [(key(item), item) for item in merged]
    from_patch = sorted(
        (pair for pair in keyed if pair[0] in patch_index), key=lambda p: patch_index[p[0]]
    )
    unplaced = len(server_index)
    server_only = sorted(
        (pair for pair in keyed if pair[0] not in patch_index),
        key=lambda p: server_index.get(p[0], unplaced),
    )
    # mergeSortedSlice: take a server-only item first only when both are on the server and it
    # comes earlier there; new items (not on the server) therefore go first.
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(from_patch):
        if j >= len(from_patch):
            out.append(server_only[i][1])
            i += 1
        elif i >= len(server_only):
            out.append(from_patch[j][1])
            j += 1
        else:
            left = server_index.get(server_only[i][0])
            right = server_index.get(from_patch[j][0])
            if left is not None and right is not None and left < right:
                out.append(server_only[i][1])
                i += 1
            else:
                out.append(from_patch[j][1])
                j += 1
    return out


def _apply_set_element_order(
    result: dict[str, Any],
    patch: Mapping[str, Any],
    field: str,
    order: Any,
    schema: PatchSchema,
    path: str,
) -> None:
    """`$setElementOrder/<field>`: merge the field's patch list, then order it as listed."""
    if not isinstance(order, list):
        raise PatchError(f"{path}: $setElementOrder/{field} must be a list")
    current = result.get(field)
    if current is not None and not isinstance(current, list):
        raise PatchError(f"{path}: is a {_type_name(current)}, not a list")
    patch_list = patch.get(field, _MISSING)
    if patch_list is not _MISSING and not isinstance(patch_list, list):
        raise PatchError(f"{path}: the patch value must be a list alongside $setElementOrder")
    meta = schema.meta(field)
    merge_key = meta.merge_key if meta else None

    def order_key(item: Any) -> Hashable:
        if merge_key:
            return _keyed(item, merge_key, path)
        return _scalar_key(item, path)

    if patch_list is not _MISSING and order and patch_list:
        # The patch list must name its items in the order $setElementOrder gives them.
        wanted = [order_key(o) for o in order]
        j = 0
        for item in patch_list:
            if isinstance(item, Mapping) and _DIRECTIVE in item:
                continue
            k = order_key(item)
            while j < len(wanted) and wanted[j] != k:
                j += 1
            if j == len(wanted):
                raise PatchError(
                    f"{path}: the order of the patch list doesn't match $setElementOrder/{field}"
                )
            j += 1

    if current is None and patch_list is _MISSING:
        return
    if patch_list is _MISSING:
        merged: list[Any] = current if current is not None else []
    else:
        merged = _merge_value(current, patch_list, field, schema, path)
    if not _element_kind(path, current or [], [] if patch_list is _MISSING else patch_list):
        result[field] = merged
        return
    result[field] = _order_like_upstream(
        merged,
        patch_order=[order_key(o) for o in order],
        server_order=[order_key(o) for o in current or []],
        key=order_key,
    )


def _delete_from_primitive_list(
    result: dict[str, Any], field: str, values: Any, schema: PatchSchema, path: str
) -> None:
    """`$deleteFromPrimitiveList/<field>`: drop every occurrence of the listed values."""
    if not isinstance(values, list):
        raise PatchError(f"{path}: $deleteFromPrimitiveList/{field} must be a list")
    meta = schema.meta(field)
    if not meta or not meta.merges or meta.merge_key:
        raise PatchError(f"{path}: $deleteFromPrimitiveList needs a merging list of primitives")
    current = result.get(field)
    if current is None:
        return
    if not isinstance(current, list):
        raise PatchError(f"{path}: is a {_type_name(current)}, not a list")
    _element_kind(path, current, values)
    doomed = {_scalar_key(v, path) for v in values}
    result[field] = [v for v in current if _scalar_key(v, path) not in doomed]
