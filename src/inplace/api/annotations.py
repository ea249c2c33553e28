"""Every annotation and label this project defines, in one place, with its format.

Upstream's names are used wherever upstream has one; these are our additions, all under the
``inplace.dev/`` prefix. docs/user-guide.md lists them for users; validation rejects a bad
value with a 422 that names the annotation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from .quantity import Quantity, QuantityError

PREFIX: Final = "inplace.dev/"

# -- on pods and pod templates ---------------------------------------------------------------

RESIZE_POLICY: Final = "inplace.dev/resize-policy"
"""How a resize that does not fit its node is handled: ``InPlaceOnly`` (the default: wait,
never evict), ``InPlacePreferred`` (evict through the Eviction API, respecting disruption
budgets, so the owner recreates the pod where it fits) or ``Restart`` (restart the
containers to apply any resize)."""

RESIZE_POLICIES: Final = ("InPlaceOnly", "InPlacePreferred", "Restart")

OOM_KILL_DISABLE: Final = "inplace.dev/oom-kill-disable"
"""``"true"``: pause the pod's tasks at the memory limit instead of OOM-killing them, until a
resize raises the limit. ``"false"`` (the default) keeps the kernel's behaviour."""

USAGE_PROFILE: Final = "inplace.dev/usage-profile"
"""JSON: the usage a simulated node reports for the pod (constant, ramp or points; see
:func:`inplace.node.simulated.parse_profile`)."""

SHRINKABLE: Final = "inplace.dev/shrinkable"
"""``"true"``: the rescue controller may shrink the pod's cpu and memory requests in place
(never below its recent peak usage plus a margin) to make room for a pending pod of equal or
higher priority, and grows them back when the pressure is gone. ``"false"`` (the default)
leaves it alone. Set it on a workload's pod template to cover its pods."""

ORIGINAL_RESOURCES: Final = "inplace.dev/original-resources"
"""JSON written by the rescue controller when it first shrinks a pod, so it can grow the pod
back to its size even after a restart: per container, the cpu and memory requests and
limits it had, ``{"main": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory":
"1Gi"}}}``. Removed once the pod is back to that size. See :func:`parse_original_resources`."""

# -- on nodes --------------------------------------------------------------------------------

SIMULATED: Final = "inplace.dev/simulated"
"""Label ``"true"`` on a node served by a simulated node agent (no processes)."""

LIMITS_ENFORCED: Final = "inplace.dev/limits-enforced"
"""``"true"`` or ``"false"``: whether the node agent can write cgroups to enforce limits."""

CGROUP_DRIVER: Final = "inplace.dev/cgroup-driver"
"""The node agent's cgroup driver: ``v1``, ``v2`` or ``none``."""


# -- formats ---------------------------------------------------------------------------------

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
