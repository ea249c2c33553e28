"""Objects as upstream stores them, for every write of every kind: canonical quantities,
and no empty list or map that Go's encoder leaves out.

Upstream decodes a request into Go structs and encodes what it stores from those structs.

Quantities: each ``resource.Quantity`` is parsed, so ``cpu: "0.5"`` is stored and returned as
``500m`` and ``memory: 2048Mi`` as ``2Gi``, whichever endpoint wrote it (the object,
``status``, ``resize``). Tools compare these strings. Every quantity is rewritten the same way
(:func:`inplace.api.quantity.serialize`): containers' and pod-level resources, overhead,
container statuses' resources and allocated resources, node capacity and allocatable,
``emptyDir.sizeLimit``, a ``resourceFieldRef``'s divisor, and the VerticalPodAutoscaler's
resource lists (a CRD upstream, whose values the typed recommender writes canonical; here
every writer's are). A value that does not parse is left for validation to report.

Empty values: a slice or map field whose Go tag says ``omitempty`` is not written when it is
empty or nil, so ``metadata.ownerReferences: []`` (what an orphaning leaves), ``labels: {}``,
``finalizers: []`` or ``args: []`` are stored, served and watched as no field at all, however
the object came to hold them (a create, a PUT, any patch, an apply, a subresource). A field Go
always prints (no ``omitempty``: ``spec.containers``, a role's ``rules``, an EndpointSlice's
``endpoints``) keeps its empty value. Which is which comes from the protobuf schema's field
modes (:mod:`inplace.registry.protobuf`, read from upstream's Go struct tags), and for the few
types that schema does not reach, from ``_ALWAYS_PRINTED``; a field neither knows (newer than
both) is ``omitempty``, as optional fields are by upstream's API conventions. A custom
resource keeps whatever its own fields hold, as upstream's unstructured objects do; only its
``metadata``, which upstream converts through ``ObjectMeta``, loses its empty values.
``metadata.managedFields`` is the field manager's (``[]`` is a request to clear them), which
leaves it out when there is nothing to say.

Both are one walk over the fields whose types can hold a quantity or an omitted empty value,
built once per type from the kind's field types (:mod:`inplace.registry.schema`); a struct that
can hold neither (a condition, an owner reference) is not entered, and a quantity text seen
before is not parsed again.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.quantity import QuantityError, serialize
from inplace.registry import protobuf
from inplace.registry.kinds import Kind
from inplace.registry.schema import QUANTITY_NAME, Struct, Tag, Type, kind_schema

__all__ = ["canonicalize", "canonicalize_quantities", "is_quantity", "omits_empty"]

#: List and map fields Go prints even when empty (no ``omitempty``) in the types the protobuf
#: schema does not reach (it holds the kinds clients send as protobuf), by Go type name, from
#: upstream's Go types (k8s.io/api v0.36.3). The other list and map fields of those types are
#: ``omitempty``.
_ALWAYS_PRINTED: Final = frozenset(
    {
        ("CephFSPersistentVolumeSource", "monitors"),
        ("RBDPersistentVolumeSource", "monitors"),
        ("PodExtendedResourceClaimStatus", "requestMappings"),
        ("TopologySelectorLabelRequirement", "values"),
    }
)
#: Fields another step owns: the field manager reads ``managedFields: []`` as "clear them".
_LEFT_ALONE: Final = frozenset({("ObjectMeta", "managedFields")})


def is_quantity(t: Type) -> bool:
    """A ``resource.Quantity`` field: a built-in kind's, or a CRD's int-or-string one that
    carries the quantity pattern."""
    return t.tag is Tag.QUANTITY or (t.tag is Tag.INT_OR_STRING and t.ref == QUANTITY_NAME)


@functools.cache
def _modes(message: str) -> dict[str, str]:
    """JSON name -> printing mode of a protobuf message's fields, inline structs' included."""
    fields = protobuf.schema().messages.get(message) or {}
    out: dict[str, str] = {}
    for field in fields.values():
        if field.mode == "i":
            out.update(_modes(field.type))
        else:
            out[field.name] = field.mode
    return out


def _message(struct: Struct) -> str | None:
    for prefix in ("io.k8s.api.", "io.k8s.apimachinery.pkg.apis."):
        if struct.name.startswith(prefix):
            return struct.name[len(prefix) :]
    return None


def omits_empty(struct: Struct, name: str) -> bool:
    """Whether upstream leaves field `name` of `struct` (a list or a map) out of what it stores
    when it is empty or null: Go's ``omitempty``. A CRD's own fields never are."""
    if struct.crd:
        return False
    message = _message(struct)
    if message is not None:
        mode = _modes(message).get(name)
        if mode is not None:
            return mode != "a"
    return (struct.go_name, name) not in _ALWAYS_PRINTED


# A plan says what to do below a type: _QUANTITY for a quantity itself; a struct's is a dict
# {field: (omit when empty, plan or None)}; a list's or a map's a tuple (_LIST or _MAP, plan of
# the items). None: nothing below this type ever changes.
_Plan = Any
_QUANTITY: Final = 1
_LIST: Final = 2
_MAP: Final = 3


@functools.cache
def _type_plan(t: Type) -> _Plan:
    if is_quantity(t):
        return _QUANTITY
    if t.tag is Tag.STRUCT:
        assert t.struct is not None
        return _struct_plan(t.struct)
    if t.tag in (Tag.LIST, Tag.MAP):
        assert t.elem is not None
        inner = _type_plan(t.elem)
        if inner is None:
            return None
        return (_LIST if t.tag is Tag.LIST else _MAP, inner)
    return None


_STRUCT_PLANS: dict[int, dict[str, tuple[bool, _Plan]] | None] = {}


def _struct_plan(st: Struct) -> dict[str, tuple[bool, _Plan]] | None:
    key = id(st)
    if key in _STRUCT_PLANS:
        # Built, or being built (a recursive type): the dict is filled in before it is used.
        return _STRUCT_PLANS[key]
    plan: dict[str, tuple[bool, _Plan]] = {}
    _STRUCT_PLANS[key] = plan
    for name, f in st.fields.items():
        sub = _type_plan(f.type)
        omit = (
            f.type.tag in (Tag.LIST, Tag.MAP)
            and (st.go_name, name) not in _LEFT_ALONE
            and omits_empty(st, name)
        )
        if omit or sub is not None:
            plan[name] = (omit, sub)
    if not plan:
        _STRUCT_PLANS[key] = None
        return None
    return plan


_TEXTS: dict[str, str] = {}
_TEXTS_LIMIT: Final = 4096


def _canonical(value: Any) -> Any:
    if type(value) is str:
        known = _TEXTS.get(value)
        if known is not None:
            return known
    try:
        text = serialize(value)
    except (QuantityError, ValueError, OverflowError, ArithmeticError):
        text = value
    if type(value) is str:
        if len(_TEXTS) >= _TEXTS_LIMIT:
            _TEXTS.clear()
        _TEXTS[value] = text
    return text


def _struct(plan: dict[str, tuple[bool, _Plan]], value: dict[str, Any]) -> None:
    """`value`'s fields as stored, in place: empties Go omits dropped, quantities rewritten."""
    dropped = None
    for name, item in value.items():
        entry = plan.get(name)
        if entry is None:
            continue
        omit, sub = entry
        if omit and (item is None or item == [] or item == {}):
            if dropped is None:
                dropped = [name]
            else:
                dropped.append(name)
        elif sub is None or item is None:
            continue
        elif type(sub) is dict:
            if type(item) is dict:
                _struct(sub, item)
        elif sub == _QUANTITY:
            value[name] = _canonical(item)
        else:
            _container(sub, item)
    if dropped is not None:
        for name in dropped:
            del value[name]


def _container(plan: tuple[int, _Plan], value: Any) -> None:
    kind, inner = plan
    if kind == _LIST:
        if type(value) is not list:
            return
        if type(inner) is dict:
            for item in value:
                if type(item) is dict:
                    _struct(inner, item)
        elif inner == _QUANTITY:
            for i, item in enumerate(value):
                if item is not None:
                    value[i] = _canonical(item)
        else:
            for item in value:
                _container(inner, item)
    elif type(value) is dict:
        if type(inner) is dict:
            for item in value.values():
                if type(item) is dict:
                    _struct(inner, item)
        elif inner == _QUANTITY:
            # In a map of quantities a null is the zero quantity, as Go decodes it.
            for key, item in value.items():
                value[key] = _canonical(item)
        else:
            for item in value.values():
                _container(inner, item)


def canonicalize(kind: Kind, obj: Mapping[str, Any]) -> None:
    """Rewrite `obj` (an object of `kind`) in place as upstream stores it: every quantity in
    its canonical form, and every empty (or null) list or map Go's ``omitempty`` drops gone."""
    if not kind.stored or not isinstance(obj, dict):
        return
    plan = _struct_plan(kind_schema(kind))
    if plan is not None:
        _struct(plan, obj)


#: The name this walk had when it rewrote only quantities.
canonicalize_quantities = canonicalize
