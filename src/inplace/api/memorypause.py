"""The pod condition ``MemoryPaused``: written by the node agent when it pauses containers at
their memory limit (``inplace.dev/oom-kill-disable``), read by whoever answers the pause with
a resize (the controller manager's memory-pause responder, the VPA updater) and by people.

The one place its format is defined, so the writer and the readers cannot drift apart. The
message starts ``containers [a b] paused at their memory limit``, then says how (the node's
mechanism) and what happens next; :func:`paused_containers` reads the names back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from inplace.api.conditions import find_condition
from inplace.api.timestamps import parse_rfc3339

__all__ = [
    "LIMIT_REACHED",
    "MEMORY_PAUSED",
    "memory_paused",
    "paused_containers",
    "paused_message",
    "paused_since",
]

MEMORY_PAUSED: Final = "MemoryPaused"
"""The pod condition type: ``True`` while at least one container is paused at its limit."""

LIMIT_REACHED: Final = "MemoryLimitReached"
"""The condition's reason."""

_PREFIX: Final = re.compile(r"^containers \[([^\]]*)\] paused at their memory limit")


def paused_message(containers: Sequence[str], how: str, *details: str) -> str:
    """``containers [a b] paused at their memory limit (not killed) by HOW; DETAIL; ...``."""
    text = f"containers [{' '.join(containers)}] paused at their memory limit (not killed) by {how}"
    return "; ".join([text, *(d for d in details if d)])


def memory_paused(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's ``MemoryPaused`` condition while it is ``True``."""
    cond = find_condition(pod, MEMORY_PAUSED)
    return cond if cond is not None and cond.get("status") == "True" else None


def paused_containers(pod: Mapping[str, Any]) -> list[str]:
    """The containers the pod's ``MemoryPaused`` condition names (none when not paused)."""
    cond = memory_paused(pod)
    match = _PREFIX.match(str((cond or {}).get("message") or ""))
    return match.group(1).split() if match else []


def paused_since(pod: Mapping[str, Any]) -> datetime | None:
    """When the pod became paused (the condition's ``lastTransitionTime``)."""
    cond = memory_paused(pod)
    stamp = (cond or {}).get("lastTransitionTime")
    if not isinstance(stamp, str):
        return None
    try:
        return parse_rfc3339(stamp)
    except ValueError:
        return None
