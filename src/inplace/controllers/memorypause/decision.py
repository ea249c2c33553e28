"""What to do about a pod paused at its memory limit: the pure half of the responder.

:func:`decide` reads only the pod (its ``MemoryPaused`` condition, its annotations, the
resources its spec asks for and those its status reports) and the time, and answers with a
:class:`Decision`:

* how much: each paused container's memory limit is bumped as ``inplace.dev/memory-on-pause``
  says (``+512Mi`` or ``x1.5``) from the limit it was paused at, rounded up to a whole MiB;
  its request grows in proportion (upstream's limit:request arithmetic, so the QoS class
  stays);
* capped how: at most ``inplace.dev/memory-max``; a container already there gets nothing,
  and when no container can grow the pod stays paused (``capped``);
* when to give up: once ``inplace.dev/pause-timeout`` has passed since the pod was paused,
  nothing more is asked (the node agent hands the container to the OOM killer then);
* when to wait: a resize that raises the limit is already asked for (by this responder or
  anyone), pending or in progress — the scheduler's arbiter retries a deferred one when room
  appears, so asking again would change nothing;
* when not to act: not paused, no ``memory-on-pause`` annotation (someone resizes by hand),
  or a vertical pod autoscaler answers for the pod (:func:`covering_vpa`: the VPA updater's
  own rule, :func:`inplace.api.vpa_targets.answering_vpa`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from inplace.api.annotations import (
    MEMORY_MAX,
    MEMORY_ON_PAUSE,
    OOM_KILL_DISABLE,
    PAUSE_TIMEOUT,
    parse_memory_max,
    parse_memory_on_pause,
    parse_pause_timeout,
)
from inplace.api.conditions import find_condition
from inplace.api.memorypause import paused_containers, paused_since
from inplace.api.quantity import Format, Quantity
from inplace.api.resources import MEMORY
from inplace.api.vpa_policy import proportional_limit
from inplace.api.vpa_targets import Lookup, answering_vpa

__all__ = ["Action", "Decision", "covering_vpa", "decide"]

Action = Literal["none", "wait", "resize", "capped", "give-up"]

MiB: Final = 1 << 20


@dataclass(frozen=True)
class Bumped:
    """One container's bump: memory limit and request, before and after, in bytes."""

    name: str
    limit: int
    new_limit: int
    request: int | None
    new_request: int | None


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    """A short CamelCase word (the event's reason when there is one)."""
    message: str
    bumps: tuple[Bumped, ...] = field(default=())

    def resize_body(self) -> dict[str, Any]:
        """The ``pods/resize`` strategic merge patch raising the bumped containers."""
        containers = []
        for b in self.bumps:
            resources: dict[str, Any] = {"limits": {"memory": _quantity(b.new_limit)}}
            if b.new_request is not None:
                resources["requests"] = {"memory": _quantity(b.new_request)}
            containers.append({"name": b.name, "resources": resources})
        return {"spec": {"containers": containers}}


def _quantity(value: int) -> str:
    return str(Quantity.from_int(value, Format.BINARY_SI))


def _annotation(pod: Mapping[str, Any], name: str) -> str | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(name)
    return value if isinstance(value, str) else None


def _memory(resources: Any, key: str) -> int | None:
    value = (
        ((resources or {}).get(key) or {}).get("memory") if isinstance(resources, Mapping) else None
    )
    if value is None:
        return None
    try:
        return Quantity.from_json(value).value()
    except ValueError:
        return None


def _condition(pod: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    cond = find_condition(pod, ctype)
    return cond if cond is not None and cond.get("status") == "True" else None


def _round_up_mib(value: int) -> int:
    return -(-value // MiB) * MiB


def covering_vpa(
    pod: Mapping[str, Any], vpas: Iterable[Mapping[str, Any]], lookup: Lookup
) -> str | None:
    """The name of the VPA whose updater answers ``pod``'s pauses, or None (the responder
    does): :func:`~inplace.api.vpa_targets.answering_vpa`, the function the VPA updater
    groups its pods by, so exactly one of the two answers."""
    vpa = answering_vpa(pod, vpas, lookup)
    return str((vpa.get("metadata") or {}).get("name") or "") if vpa is not None else None


def decide(pod: Mapping[str, Any], *, now: datetime, covered_by: str | None = None) -> Decision:
    """The responder's answer for ``pod`` at ``now`` (see the module docstring).
    ``covered_by``: the name of the vertical pod autoscaler that answers for the pod."""
    paused = paused_containers(pod)
    if not paused:
        return Decision("none", "NotPaused", "no container is paused")
    if _annotation(pod, OOM_KILL_DISABLE) != "true":
        return Decision("none", "NotOptedIn", f'{OOM_KILL_DISABLE} is not "true"')
    if covered_by is not None:
        return Decision(
            "none", "CoveredByVPA", f"the vertical pod autoscaler {covered_by} answers the pause"
        )
    step_text = _annotation(pod, MEMORY_ON_PAUSE)
    if step_text is None:
        return Decision("none", "NoBumpAnnotation", f"no {MEMORY_ON_PAUSE}: waiting for a resize")
    try:
        step = parse_memory_on_pause(step_text)
    except ValueError as exc:
        return Decision("none", "InvalidAnnotation", f"{MEMORY_ON_PAUSE}: {exc}")

    timeout_text = _annotation(pod, PAUSE_TIMEOUT)
    since = paused_since(pod)
    if timeout_text is not None and since is not None:
        try:
            deadline = since + timedelta(seconds=parse_pause_timeout(timeout_text))
        except ValueError:
            deadline = None
        if deadline is not None and now >= deadline:
            return Decision(
                "give-up",
                "PauseTimedOut",
                f"paused longer than {PAUSE_TIMEOUT} ({timeout_text}): nothing more is asked",
            )

    for ctype, state in (("PodResizePending", "pending"), ("PodResizeInProgress", "in progress")):
        cond = _condition(pod, ctype)
        if cond is not None:
            why = f" ({cond.get('reason')}: {cond.get('message')})" if cond.get("reason") else ""
            return Decision("wait", "ResizeInFlight", f"a resize is {state}{why}")

    cap: int | None = None
    cap_text = _annotation(pod, MEMORY_MAX)
    if cap_text is not None:
        try:
            cap = parse_memory_max(cap_text)
        except ValueError as exc:
            return Decision("none", "InvalidAnnotation", f"{MEMORY_MAX}: {exc}")

    specs = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or ()}
    actual = {
        s.get("name"): s.get("resources")
        for s in (pod.get("status") or {}).get("containerStatuses") or ()
    }
    bumps: list[Bumped] = []
    capped: list[str] = []
    for name in paused:
        spec_resources = (specs.get(name) or {}).get("resources")
        wanted = _memory(spec_resources, "limits")
        held = _memory(actual.get(name), "limits")
        if held is None:
            held = wanted
        if wanted is None or held is None:
            continue  # no limit: nothing to pause at, nothing to raise
        if wanted > held:
            return Decision(
                "wait", "ResizeInFlight", f"a resize of {name} to {_quantity(wanted)} is asked for"
            )
        new_limit = _round_up_mib(step.apply(held))
        if cap is not None:
            new_limit = min(new_limit, cap)
        if new_limit <= held:
            capped.append(name)
            continue
        request = _memory(spec_resources, "requests")
        new_request = None
        if request is not None:
            # The request keeps its ratio to the limit: upstream's proportional arithmetic,
            # with the limit as the driver (request and limit swap roles).
            scaled = proportional_limit(
                MEMORY,
                Quantity.from_int(request),
                Quantity.from_int(held),
                Quantity.from_int(new_limit),
            )
            new_request = min(new_limit, scaled.value()) if scaled is not None else request
        bumps.append(Bumped(name, held, new_limit, request, new_request))
    if not bumps:
        if capped:
            return Decision(
                "capped",
                "MemoryMaxReached",
                f"containers {capped} are at {MEMORY_MAX} ({cap_text}): no automatic resize",
            )
        return Decision("none", "NoLimit", "the paused containers have no memory limit")
    shown = ", ".join(f"{b.name} {_quantity(b.limit)} -> {_quantity(b.new_limit)}" for b in bumps)
    note = (
        f" (capped at {MEMORY_MAX} {cap_text})"
        if cap is not None and any(b.new_limit == cap for b in bumps)
        else ""
    )
    return Decision(
        "resize",
        "MemoryBumped",
        f"memory limit raised for the pause: {shown} ({MEMORY_ON_PAUSE} {step_text}){note}",
        tuple(bumps),
    )
