"""Every annotation and label this project defines, in one place, with its format.

Upstream's names are used wherever upstream has one; these are our additions, all under the
``inplace.dev/`` prefix. docs/user-guide.md lists them for users; validation rejects a bad
value with a 422 that names the annotation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import orjson

from inplace.api.quantity import Quantity, QuantityError
from inplace.api.timestamps import parse_go_duration

PREFIX: Final = "inplace.dev/"

# -- on pods and pod templates ---------------------------------------------------------------

RESIZE_POLICY: Final = "inplace.dev/resize-policy"
"""How a resize that does not fit its node is handled: ``InPlaceOnly`` (the default: wait,
never evict), ``InPlacePreferred`` (evict through the Eviction API, respecting disruption
budgets, so the owner recreates the pod where it fits) or ``Restart`` (restart the
containers to apply any resize)."""

IN_PLACE_ONLY: Final = "InPlaceOnly"
IN_PLACE_PREFERRED: Final = "InPlacePreferred"
RESTART: Final = "Restart"
RESIZE_POLICIES: Final = (IN_PLACE_ONLY, IN_PLACE_PREFERRED, RESTART)


def resize_policy(annotations: Mapping[str, str] | None) -> str:
    """The :data:`RESIZE_POLICY` a pod or template's annotations name (``InPlaceOnly`` unset)."""
    return str((annotations or {}).get(RESIZE_POLICY) or IN_PLACE_ONLY)


OOM_KILL_DISABLE: Final = "inplace.dev/oom-kill-disable"
"""``"true"``: pause the pod's tasks at the memory limit instead of OOM-killing them, until a
resize raises the limit. ``"false"`` (the default) keeps the kernel's behaviour."""

MEMORY_ON_PAUSE: Final = "inplace.dev/memory-on-pause"
"""How much more memory to ask for when a container is paused at its memory limit (with
:data:`OOM_KILL_DISABLE`) and no vertical pod autoscaler answers for the pod:
``"+<quantity>"`` adds to the container's memory limit (``"+512Mi"``), ``"x<factor>"``
multiplies it (``"x1.5"``, a decimal number above 1). The memory request grows in proportion
to the limit, so the pod keeps its QoS class. Capped by :data:`MEMORY_MAX`; parsed by
:func:`parse_memory_on_pause`."""

MEMORY_MAX: Final = "inplace.dev/memory-max"
"""A memory quantity (``"4Gi"``), above 0: the largest memory limit an automatic bump of a
paused container may ask for (:data:`MEMORY_ON_PAUSE`, per container)."""

PAUSE_TIMEOUT: Final = "inplace.dev/pause-timeout"
"""A Go duration above 0 (``"90s"``, ``"5m"``, ``"1h30m"``): a container still paused at its
memory limit that long is OOM-killed, as it would have been without
:data:`OOM_KILL_DISABLE`. Unset: it stays paused until a resize raises its limit."""

USAGE_PROFILE: Final = "inplace.dev/usage-profile"
"""JSON: the usage a simulated node reports for the pod's containers: one profile for all,
or an object of profiles by container name. A profile is constant (``{"cpu": "250m",
"memory": "100Mi"}``), a ramp (``{"ramp": {"from": {...}, "to": {...}, "seconds": 600}}``)
or points (``{"points": [[0, "100m", "50Mi"], [60, "300m", "80Mi"]]}``, seconds since the
container started). Parsed and validated by :mod:`inplace.api.usage_profile`."""

SHRINKABLE: Final = "inplace.dev/shrinkable"
"""``"true"``: the rescue controller may shrink the pod's cpu and memory requests in place
(never below its recent peak usage plus a margin) to make room for a pending pod of equal or
higher priority, and grows them back when the pressure is gone. ``"false"`` (the default)
leaves it alone. Set it on a workload's pod template to cover its pods."""

ORIGINAL_RESOURCES: Final = "inplace.dev/original-resources"
"""JSON written by the rescue controller when it first shrinks a pod, so it can grow the pod
back to its size even after a restart: per container, the cpu and memory requests and
limits it had, ``{"main": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory":
"1Gi"}}}``. Removed once the pod is back to that size. Parsed and validated by
:mod:`inplace.api.original_resources`."""

# -- on workloads (Deployments, ReplicaSets, Jobs) -------------------------------------------------

RESIZE_STATUS: Final = "inplace.dev/resize-status"
"""JSON written by the workload-resize controller: ``{"resources": F, "moved": N}``, the
fingerprint ``F`` of the template resources its pods are being brought to and how many pods
were replaced (moved to another node) rather than resized in place for them; it survives a
restart of the controller. The human-readable counts are in the ``PodsResized`` condition."""

# -- on nodes --------------------------------------------------------------------------------

IN_PLACE: Final = "inplace.dev/in-place"
"""On a workload: ``"false"`` opts it out of the in-place rule, so a resources-only change of
its template rolls out as upstream does. Unset or ``"true"``: the rule applies."""

HELD: Final = "inplace.dev/held"
"""JSON written by the operator's admission webhook on a workload whose resources-only change
it held from rolling out: what the webhook changed so the real controllers do not replace
pods (``{"paused": false}`` for a Deployment it paused, ``{"updateStrategy": {...}}`` for a
StatefulSet or DaemonSet it set to ``OnDelete``), restored by the operator once the pods
are moved to the new template in place."""

TEMPLATE_RESOURCES: Final = "inplace.dev/template-resources"
"""JSON on a Job, written by the operator's admission webhook: the containers' resources of
the change it took out of the Job's immutable template (``{"main": {"requests": {...},
"limits": {...}}}``); the Job's pods are resized to them, and its later pods created at
them."""

SIMULATED: Final = "inplace.dev/simulated"
"""Label ``"true"`` on a node served by a simulated node agent (no processes)."""

LIMITS_ENFORCED: Final = "inplace.dev/limits-enforced"
"""``"true"`` or ``"false"``: whether the node agent can write cgroups to enforce limits."""

CGROUP_DRIVER: Final = "inplace.dev/cgroup-driver"
"""The node agent's cgroup driver: ``v1``, ``v2`` or ``none``."""

MEMORY_PAUSE: Final = "inplace.dev/memory-pause"
"""Label on a node: how its agent pauses a container at its memory limit
(:data:`OOM_KILL_DISABLE`), one of :data:`MEMORY_PAUSE_MECHANISMS`:

* ``oom-control``: cgroup v1 ``memory.oom_control``, the kernel parks the tasks itself;
* ``freeze``: cgroup v2, ``memory.high`` just under ``memory.max`` throttles the tasks and
  ``cgroup.freeze`` parks them before ``memory.max`` is reached;
* ``sigstop``: no writable cgroups, a userspace monitor SIGSTOPs the container's process
  groups as their memory nears the limit (best effort: polled);
* ``unavailable``: simulated nodes (no processes)."""

MEMORY_PAUSE_MECHANISMS: Final = ("oom-control", "freeze", "sigstop", "unavailable")

# -- on VerticalPodAutoscalerCheckpoints (written by the recommender) -------------------------

MEMORY_JUMP: Final = "inplace.dev/memory-jump"
"""Bytes, a decimal integer above 0: the ``inplace`` recommender's learned memory rise for
the checkpoint's container (its ``memory_jump_margin``), as it was at
:data:`MEMORY_JUMP_TIME`; it halves every ``memory_jump_half_life`` from then. Upstream's
checkpoint status has no field for it, so it travels beside the status, written with it."""

MEMORY_JUMP_TIME: Final = "inplace.dev/memory-jump-time"
"""An RFC 3339 time stamp with microseconds (``metav1.MicroTime``): when
:data:`MEMORY_JUMP` was recorded."""

MEMORY_FLOOR: Final = "inplace.dev/memory-floor"
"""Bytes, a decimal integer above 0: the ``inplace`` recommender's memory floor for the
checkpoint's container (the bumped size of its latest OOM kill, pause or pressure reading),
as it was at :data:`MEMORY_FLOOR_TIME`; it halves every ``memory_event_floor_half_life``."""

MEMORY_FLOOR_TIME: Final = "inplace.dev/memory-floor-time"
"""An RFC 3339 time stamp with microseconds: when :data:`MEMORY_FLOOR` was raised."""

CHECKPOINT_ANNOTATIONS: Final = (MEMORY_JUMP, MEMORY_JUMP_TIME, MEMORY_FLOOR, MEMORY_FLOOR_TIME)
"""Every annotation the recommender writes on a checkpoint (a missing or unparsable pair
means nothing learned; a checkpoint written by upstream's recommender has none)."""

# -- written by the vertical pod autoscaler's admission step (upstream's names) ---------------

VPA_UPDATES: Final = "vpaUpdates"
"""Upstream's: what the VPA admission step changed in a new pod, ``Pod resources updated by
VPA: container 0: cpu request, memory request, memory limit; container 1: ...`` (containers
by index, resources sorted)."""

VPA_OBSERVED_CONTAINERS: Final = "vpaObservedContainers"
"""Upstream's: the names of the pod's containers when it was admitted under a VPA, joined by
``", "`` (the recommender and updater of upstream use it to tell containers added later)."""

# -- formats ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryStep:
    """A parsed :data:`MEMORY_ON_PAUSE`: add ``add`` bytes, or multiply by ``factor``."""

    add: int | None = None
    factor: Fraction | None = None

    def apply(self, limit: int) -> int:
        """The bumped limit in bytes (a product is rounded up to a whole byte)."""
        if self.add is not None:
            return limit + self.add
        assert self.factor is not None
        product = limit * self.factor
        return -(-product.numerator // product.denominator)


MEMORY_ON_PAUSE_FORMAT: Final = 'must be "+<quantity>" (e.g. "+512Mi") or "x<factor>" (e.g. "x1.5")'


def parse_memory_on_pause(value: str) -> MemoryStep:
    """:data:`MEMORY_ON_PAUSE`; ValueError says what is wrong (validation's detail)."""
    if value.startswith("+"):
        try:
            amount = Quantity.parse(value[1:])
        except QuantityError as exc:
            raise ValueError(f"{MEMORY_ON_PAUSE_FORMAT}: {exc.reason}") from exc
        if amount.sign() <= 0:
            raise ValueError("the amount to add must be greater than 0")
        return MemoryStep(add=amount.value())
    if value.startswith("x"):
        text = value[1:]
        if not text or not all(ch.isdigit() or ch == "." for ch in text) or text.count(".") > 1:
            raise ValueError(MEMORY_ON_PAUSE_FORMAT)
        factor = Fraction(text)
        if factor <= 1:
            raise ValueError("the factor must be greater than 1")
        return MemoryStep(factor=factor)
    raise ValueError(MEMORY_ON_PAUSE_FORMAT)


def parse_memory_max(value: str) -> int:
    """:data:`MEMORY_MAX` in bytes; ValueError says what is wrong."""
    try:
        amount = Quantity.parse(value)
    except QuantityError as exc:
        raise ValueError(exc.reason) from exc
    if amount.sign() <= 0:
        raise ValueError("must be greater than 0")
    return amount.value()


def parse_pause_timeout(value: str) -> float:
    """:data:`PAUSE_TIMEOUT` in seconds; ValueError says what is wrong."""
    seconds = parse_go_duration(value)
    if seconds <= 0:
        raise ValueError("must be greater than 0")
    return seconds


def parse_held(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The :data:`HELD` record on a workload, or None when it is not held (or the record is
    not a JSON object: then there is nothing to restore)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(HELD) if isinstance(annotations, Mapping) else None
    if not text:
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
