"""Reading an object as its JSON holds it: the one helper for a nested field.

Objects travel as plain dicts (the wire form), so a field deep in one may be missing at any
level or hold the wrong type. :func:`get_path` answers None in both cases instead of raising,
which is what every reader of a possibly partial object wants.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["get_path"]


def get_path(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]…``, or None where a step is missing or not a mapping."""
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj
