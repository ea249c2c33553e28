"""Time, cells by column name, and pods with container statuses, for the Table tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from inplace.registry.kinds import REGISTRY
from inplace.registry.tables import (
    DEFAULT_TABLE,
    TablePrinter,
    column_definitions,
    to_table,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
SECOND = 1.0
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
MS = 0.001


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def printer(kind: str) -> TablePrinter:
    """The printer the served kind called `kind` names in its strategy; Name and Age for a
    kind the server does not serve (as for a CRD without printer columns)."""
    served = [k for k in REGISTRY.kinds if k.kind == kind]
    return served[0].strategy.table if served else DEFAULT_TABLE


def cells(kind: str, obj: dict[str, Any]) -> list[Any]:
    table = to_table(printer(kind), [obj], now=NOW)
    row: list[Any] = table["rows"][0]["cells"]
    assert len(row) == len(table["columnDefinitions"])
    return row


def by_name(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return dict(
        zip((c["name"] for c in column_definitions(printer(kind))), cells(kind, obj), strict=True)
    )


def pod(
    *,
    containers: int = 1,
    init: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "creationTimestamp": ago(3 * HOUR), **metadata},
        "spec": {
            "containers": [{"name": f"c{i}", "image": "busybox"} for i in range(containers)],
            **({"initContainers": init} if init is not None else {}),
        },
        "status": status or {},
    }


def running(ready: bool = True, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "name": "c0",
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": ago(HOUR)}},
        **extra,
    }


def waiting(reason: str, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "name": "c0",
        "ready": False,
        "restartCount": restarts,
        "state": {"waiting": {"reason": reason}},
        **extra,
    }


def terminated(
    reason: str = "", exit_code: int = 0, signal: int = 0, **extra: Any
) -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": exit_code}
    if reason:
        state["reason"] = reason
    if signal:
        state["signal"] = signal
    return {
        "name": "c0",
        "ready": False,
        "restartCount": 0,
        "state": {"terminated": state},
        **extra,
    }


def last_terminated(seconds_ago: float) -> dict[str, Any]:
    return {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(seconds_ago)}}


READY = {"type": "Ready", "status": "True"}
INITIALIZED = {"type": "Initialized", "status": "True"}
SIDECAR = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
INIT = [{"name": "i0", "image": "busybox"}, {"name": "i1", "image": "busybox"}]
