"""The ``inplace.dev/original-resources`` annotation: a shrunk pod's size before the shrink.

The rescue controller writes it when it first shrinks a pod (``controllers/rescue/``) and
reads it to grow the pod back; the API server validates it on pods and pod templates (a bad
value is a 422 naming it). The value is JSON, per container the cpu and memory requests and
limits: ``{"main": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory":
"1Gi"}}}``. The parsing lives here, in the API layer, so both agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from inplace.api.quantity import Quantity, QuantityError

__all__ = ["OriginalResources", "format_original_resources", "parse_original_resources"]

OriginalResources = dict[str, dict[str, dict[str, Quantity]]]
"""Container → ``requests``/``limits`` → ``cpu``/``memory`` → quantity."""


def parse_original_resources(text: str) -> OriginalResources:
    """The :data:`ORIGINAL_RESOURCES` annotation's value; ``ValueError`` names what is wrong."""
    try:
        raw: Any = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"must be JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ValueError("must be a JSON object of container names")
    out: OriginalResources = {}
    for container, sections in raw.items():
        if not isinstance(sections, Mapping):
            raise ValueError(f"{container}: must be an object with requests and limits")
        parsed: dict[str, dict[str, Quantity]] = {}
        for section, values in sections.items():
            if section not in ("requests", "limits"):
                raise ValueError(f"{container}: unknown key {section!r} (requests, limits)")
            if not isinstance(values, Mapping):
                raise ValueError(f"{container}.{section}: must be an object")
            parsed[section] = {}
            for name, value in values.items():
                if name not in ("cpu", "memory"):
                    raise ValueError(f"{container}.{section}: only cpu and memory, not {name!r}")
                try:
                    quantity = Quantity.from_json(value)
                except QuantityError as exc:
                    raise ValueError(f"{container}.{section}.{name}: {exc}") from None
                if quantity.sign() < 0:
                    raise ValueError(f"{container}.{section}.{name}: must not be negative")
                parsed[section][name] = quantity
        out[str(container)] = parsed
    return out


def format_original_resources(resources: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """The annotation's value for per-container ``requests``/``limits`` (quantities or their
    strings), compact and in a stable order."""
    body = {
        container: {
            section: {name: str(value) for name, value in sorted(values.items())}
            for section, values in sorted(sections.items())
            if values
        }
        for container, sections in sorted(resources.items())
    }
    return json.dumps(body, separators=(",", ":"))
