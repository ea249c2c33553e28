"""Quantities as upstream writes them back, for every write of every kind.

Upstream decodes a request into Go structs, where each ``resource.Quantity`` is parsed, and
encodes what it stores from those structs, so ``cpu: "0.5"`` is stored and returned as
``500m`` and ``memory: 2048Mi`` as ``2Gi``, whichever endpoint wrote it (the object,
``status``, ``resize``). Tools compare these strings. :func:`canonicalize_quantities` rewrites
every quantity of an object the same way (:func:`inplace.api.quantity.serialize`), finding
them from the kind's field types (:mod:`inplace.api.schema`): containers' and pod-level
resources, overhead, container statuses' resources and allocated resources, node capacity and
allocatable, ``emptyDir.sizeLimit``, a ``resourceFieldRef``'s divisor, and the
VerticalPodAutoscaler's resource lists (a CRD upstream, whose values the typed recommender
writes canonical; here every writer's are). A value that does not parse is left for
validation to report.

The walk visits only the fields whose types can hold a quantity, so a pod status patch costs
a few dictionary lookups.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.kinds import Kind
from inplace.api.quantity import QuantityError, serialize
from inplace.api.schema import QUANTITY_NAME, Struct, Tag, Type, kind_schema

__all__ = ["canonicalize_quantities", "is_quantity"]

_PLAN_QUANTITY: Final = "q"


def is_quantity(t: Type) -> bool:
    """A ``resource.Quantity`` field: a built-in kind's, or a CRD's int-or-string one that
    carries the quantity pattern."""
    return t.tag is Tag.QUANTITY or (t.tag is Tag.INT_OR_STRING and t.ref == QUANTITY_NAME)


# A plan says where quantities can be below a type: "q" for a quantity itself, a dict
# {field: plan} for a struct, ("list", plan) / ("map", plan) for containers, None for none.
_Plan = Any


@functools.cache
def _type_plan(t: Type) -> _Plan:
    if is_quantity(t):
        return _PLAN_QUANTITY
    if t.tag is Tag.STRUCT:
        assert t.struct is not None
        return _struct_plan(t.struct)
    if t.tag in (Tag.LIST, Tag.MAP):
        assert t.elem is not None
        inner = _type_plan(t.elem)
        if inner is None:
            return None
        return ("list" if t.tag is Tag.LIST else "map", inner)
    return None


_building: set[int] = set()


def _struct_plan(st: Struct) -> dict[str, _Plan] | None:
    key = id(st)
    cached = _STRUCT_PLANS.get(key)
    if cached is not None or key in _STRUCT_PLANS:
        return cached
    if key in _building:  # a recursive type (JSONSchemaProps-like): no quantities through it
        return None
    _building.add(key)
    try:
        plan = {name: p for name, f in st.fields.items() if (p := _type_plan(f.type)) is not None}
    finally:
        _building.discard(key)
    _STRUCT_PLANS[key] = plan or None
    return plan or None


_STRUCT_PLANS: dict[int, dict[str, _Plan] | None] = {}


def _canonical(value: Any) -> Any:
    try:
        return serialize(value)
    except (QuantityError, ValueError, OverflowError, ArithmeticError):
        return value


def _apply(plan: _Plan, value: Any) -> Any:
    """`value` with its quantities rewritten (containers are changed in place)."""
    if plan is _PLAN_QUANTITY:
        return _canonical(value) if value is not None else value
    if isinstance(plan, dict):
        if isinstance(value, dict):
            for name, sub in plan.items():
                if name in value:
                    value[name] = _apply(sub, value[name])
        return value
    kind, inner = plan
    if kind == "list" and isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _apply(inner, item)
    elif kind == "map" and isinstance(value, dict):
        for key, item in value.items():
            # In a map of quantities a null is the zero quantity, as Go decodes it.
            value[key] = _canonical(item) if inner is _PLAN_QUANTITY else _apply(inner, item)
    return value


def canonicalize_quantities(kind: Kind, obj: Mapping[str, Any]) -> None:
    """Rewrite, in place, every quantity of `obj` (an object of `kind`) as upstream stores it."""
    if not kind.stored or not isinstance(obj, dict):
        return
    plan = _struct_plan(kind_schema(kind))
    if plan is not None:
        _apply(plan, obj)
