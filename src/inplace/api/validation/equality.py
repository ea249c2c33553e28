"""Semantic equality and diffs, as upstream's ``apiequality.Semantic.DeepEqual`` compares
objects: absent, null and zero values are the same, quantities compare by value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api.quantity import Quantity, QuantityError
from inplace.api.validation.errors import child_path, index_path, key_path

# -- semantic equality and diffs -----------------------------------------------------------------

# Objects whose keys are data (label names, resource names), shown as ``[key]`` in paths.
_MAP_FIELDS: Final = frozenset(
    {
        "labels",
        "annotations",
        "nodeSelector",
        "matchLabels",
        "limits",
        "requests",
        "overhead",
        "capacity",
        "allocatable",
        "allocatedResources",
        "minAllowed",
        "maxAllowed",
    }
)
_QUANTITY_MAPS: Final = frozenset(
    {"limits", "requests", "overhead", "capacity", "allocatable", "minAllowed", "maxAllowed"}
)


def semantic_quantity(value: object) -> object:
    """A quantity compared by value (``"1000m" == "1"``); an unparseable one as itself."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return value
    try:
        return Quantity.from_json(value)
    except (QuantityError, ValueError, OverflowError, ArithmeticError):
        return value


def _is_zero(value: object) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def semantic(value: object, key: str | None = None) -> Any:
    """`value` normalised as upstream's ``Semantic.DeepEqual`` compares Go structs: absent,
    null and zero values are the same, quantities compare by value."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            k = str(k)
            nv = semantic_quantity(v) if key in _QUANTITY_MAPS else semantic(v, k)
            if key in _MAP_FIELDS or not _is_zero(nv):
                out[k] = nv
        return out
    if isinstance(value, list | tuple):
        return [semantic(v) for v in value]
    return value


def diff(old: Any, new: Any, path: str, out: list[tuple[str, Any, Any]], key: str = "") -> None:
    """Append ``(path, old, new)`` for every leaf that differs between two semantic values."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for k in sorted({*old.keys(), *new.keys()}):
            child = key_path(path, k) if key in _MAP_FIELDS else child_path(path, k)
            diff(old.get(k), new.get(k), child, out, k)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (o, n) in enumerate(zip(old, new, strict=True)):
            diff(o, n, index_path(path, i), out)
    elif old != new and not (_is_zero(old) and _is_zero(new)):
        out.append((path, old, new))
