"""Field types of the upstream object model, read from the official `kubernetes` client package.

The client package carries every core model's fields and their types (`openapi_types` and
`attribute_map`), so schemas, unknown-field checks and strategic-merge metadata are derived
from it instead of being written by hand.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import kubernetes.client.models as _models

_LIST = re.compile(r"^list\[(.+)\]$", re.IGNORECASE)
_DICT = re.compile(r"^dict\(str, (.+)\)$|^dict\[str, (.+)\]$", re.IGNORECASE)


def model_class(name: str) -> Any | None:
    """The client model class called `name` (e.g. "V1PodSpec"), or None."""
    cls = getattr(_models, name, None)
    return cls if isinstance(cls, type) and hasattr(cls, "openapi_types") else None


@functools.cache
def model_fields(name: str) -> dict[str, str]:
    """JSON field name → the client's type string ("List[V1Container]", "str", "V1ObjectMeta")."""
    cls = model_class(name)
    if cls is None:
        return {}
    types: dict[str, str] = cls.openapi_types
    attribute_map: dict[str, str] = cls.attribute_map
    return {attribute_map[attr]: type_ for attr, type_ in types.items()}


def list_element(type_: str) -> str | None:
    """ "List[V1Container]" → "V1Container"; None if `type_` is not a list."""
    match = _LIST.match(type_)
    return match.group(1) if match else None


def dict_value(type_: str) -> str | None:
    """ "Dict[str, str]" → "str"; None if `type_` is not a map."""
    match = _DICT.match(type_)
    return (match.group(1) or match.group(2)) if match else None


def is_model(type_: str) -> bool:
    return model_class(type_) is not None
