"""Per-pod checkpoints: what the agent started and what it allocated, to survive its own death.

One JSON file per pod, ``<data-dir>/checkpoints/<uid>.json``, replaced atomically (write to a
temporary file, ``rename``) on every change that matters after a restart: a container started
or ended, an allocation changed. There is deliberately no ``fsync``: the failure this guards
against is the agent process dying (SIGKILL, crash), which the page cache survives; a machine
crash takes the workloads with it, so there is nothing to re-adopt. That keeps a checkpoint
write off the resize latency path (microseconds instead of a disk flush).

A new agent reads them all before it starts its pod workers and re-adopts the processes they
name (see :meth:`ProcessRuntime.adopt`), so a SIGKILLed agent neither restarts nor forgets a
workload.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .model import Alloc, allocs_from_json, allocs_to_json

__all__ = ["CheckpointStore", "ContainerCheckpoint", "PodCheckpoint"]


@dataclass
class ContainerCheckpoint:
    pid: int | None = None
    start_time: float | None = None
    log_path: str | None = None
    restart_count: int = 0
    started_at: str | None = None
    state: str = "waiting"
    """Last known state: ``waiting``, ``running`` or ``terminated``."""
    exit_code: int | None = None
    reason: str = ""
    finished_at: str | None = None
    last_state: dict[str, Any] = field(default_factory=dict)


@dataclass
class PodCheckpoint:
    uid: str
    namespace: str
    name: str
    allocated: dict[str, Alloc] = field(default_factory=dict)
    """Container name → what the agent admitted for it."""
    actual: dict[str, Alloc] | None = None
    """What the cgroups were last made to hold, where it differs from ``allocated`` (a resize
    the kernel refused): the next agent retries it instead of assuming it applied."""
    containers: dict[str, ContainerCheckpoint] = field(default_factory=dict)
    initialized: bool = False
    start_time: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)  # the allocations' numbers are derived: only their quantities go
        out["allocated"] = allocs_to_json(self.allocated)
        out["actual"] = None if self.actual is None else allocs_to_json(self.actual)
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> PodCheckpoint:
        containers = {
            name: ContainerCheckpoint(**value)
            for name, value in (raw.get("containers") or {}).items()
        }
        return cls(
            uid=raw["uid"],
            namespace=raw["namespace"],
            name=raw["name"],
            allocated=allocs_from_json(raw.get("allocated")),
            actual=None if raw.get("actual") is None else allocs_from_json(raw.get("actual")),
            containers=containers,
            initialized=bool(raw.get("initialized")),
            start_time=raw.get("start_time"),
        )


class CheckpointStore:
    """The checkpoint directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def _path(self, uid: str) -> Path:
        return self.directory / f"{uid}.json"

    def save(self, checkpoint: PodCheckpoint) -> None:
        path = self._path(checkpoint.uid)
        tmp = path.with_suffix(".tmp")
        data = json.dumps(checkpoint.to_json(), sort_keys=True).encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:  # a short write (a full disk) must not pass for a whole one
                view = view[os.write(fd, view) :]
        except OSError:
            os.close(fd)
            tmp.unlink(missing_ok=True)  # the previous checkpoint stays, whole
            raise
        os.close(fd)
        os.replace(tmp, path)

    def load_all(self) -> list[PodCheckpoint]:
        out: list[PodCheckpoint] = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                out.append(PodCheckpoint.from_json(json.loads(path.read_bytes())))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return out

    def remove(self, uid: str) -> None:
        self._path(uid).unlink(missing_ok=True)
        self._path(uid).with_suffix(".tmp").unlink(missing_ok=True)
