"""The pod printer: READY, STATUS (the kubelet's reasons, Terminating, init progress),
RESTARTS with the last restart's age, and the wide columns."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from inplace.api.tables.printer import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Row,
    TablePrinter,
    age,
    condition,
    condition_true,
    get_path,
    int_at,
    list_at,
    name_of,
    parse_time,
    since,
    text_at,
)

_POD_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", "The aggregate status of the containers in this pod."),
    Column(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the "
        "last container in this pod has restarted.",
    ),
    AGE_COLUMN,
    Column(
        "IP",
        "string",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if "
        "not yet allocated.",
        priority=1,
    ),
    Column(
        "Node",
        "string",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
        "candidate for scheduling by the scheduler defined in schedulerName. Once this field "
        "is set, the kubelet for this node becomes responsible for the lifecycle of this pod. "
        "This field should not be used to express a desire for the pod to be scheduled on a "
        "specific node. "
        "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        priority=1,
    ),
    Column(
        "Nominated Node",
        "string",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
        "cannot be scheduled right away as preemption victims receive their graceful "
        "termination periods. This field does not guarantee that the pod will be scheduled "
        "on this node. Scheduler may decide to place the pod elsewhere if other nodes become "
        "available sooner. Scheduler may also decide to give the resources on this node to a "
        "higher priority pod that is created after preemption. As a result, this field may "
        "be different than PodSpec.nodeName when the pod is scheduled.",
        priority=1,
    ),
    Column(
        "Readiness Gates",
        "string",
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is "
        "ready when all its containers are ready AND all conditions specified in the "
        'readiness gates have status equal to "True" More info: '
        "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        priority=1,
    ),
)


def _later(current: datetime | None, candidate: datetime | None) -> datetime | None:
    if candidate is not None and (current is None or candidate > current):
        return candidate
    return current


def _print_pod(pod: Mapping[str, Any], now: datetime) -> Row:
    """upstream printPod: READY, STATUS and RESTARTS as kubectl shows them."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    init_containers = list_at(spec, "initContainers")
    conditions = list_at(status, "conditions")
    phase = text_at(status, "phase")
    reason = text_at(status, "reason") or phase
    for c in conditions:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    row_conditions: list[dict[str, Any]] | None = None
    if phase == "Succeeded":
        row_conditions = [_completed("Succeeded", "The pod has completed successfully.")]
    elif phase == "Failed":
        row_conditions = [_completed("Failed", "The pod failed.")]

    # restartable init containers (sidecars) count as containers of the pod
    sidecars = {text_at(c, "name") for c in init_containers if c.get("restartPolicy") == "Always"}
    total = len(list_at(spec, "containers")) + sum(
        1 for c in init_containers if c.get("restartPolicy") == "Always"
    )
    ready = 0
    restarts = sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None

    initializing = False
    for i, cs in enumerate(list_at(status, "initContainerStatuses")):
        count = int_at(cs, "restartCount")
        finished = parse_time(get_path(cs, "lastState", "terminated", "finishedAt"))
        restarts += count
        last_restart = _later(last_restart, finished)
        is_sidecar = text_at(cs, "name") in sidecars
        if is_sidecar:
            sidecar_restarts += count
            last_sidecar_restart = _later(last_sidecar_restart, finished)
        terminated = get_path(cs, "state", "terminated")
        waiting = get_path(cs, "state", "waiting")
        if isinstance(terminated, Mapping) and int_at(terminated, "exitCode") == 0:
            continue
        if is_sidecar and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if isinstance(terminated, Mapping):
            if why := text_at(terminated, "reason"):
                reason = "Init:" + why
            elif signal := int_at(terminated, "signal"):
                reason = f"Init:Signal:{signal}"
            else:
                reason = f"Init:ExitCode:{int_at(terminated, 'exitCode')}"
        elif isinstance(waiting, Mapping) and text_at(waiting, "reason") not in (
            "",
            "PodInitializing",
        ):
            reason = "Init:" + text_at(waiting, "reason")
        else:
            reason = f"Init:{i}/{len(init_containers)}"
        initializing = True
        break

    if not initializing or condition_true(conditions, "Initialized"):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed(list_at(status, "containerStatuses")):
            restarts += int_at(cs, "restartCount")
            last_restart = _later(
                last_restart, parse_time(get_path(cs, "lastState", "terminated", "finishedAt"))
            )
            terminated = get_path(cs, "state", "terminated")
            waiting = get_path(cs, "state", "waiting")
            if isinstance(waiting, Mapping) and text_at(waiting, "reason"):
                reason = text_at(waiting, "reason")
            elif isinstance(terminated, Mapping) and text_at(terminated, "reason"):
                reason = text_at(terminated, "reason")
            elif isinstance(terminated, Mapping):
                signal = int_at(terminated, "signal")
                exit_code = int_at(terminated, "exitCode")
                reason = f"Signal:{signal}" if signal else f"ExitCode:{exit_code}"
            elif cs.get("ready") is True and isinstance(get_path(cs, "state", "running"), Mapping):
                has_running = True
                ready += 1
        # a pod whose last container completed while another still runs is not "Completed"
        if reason == "Completed" and has_running:
            reason = "Running" if condition_true(conditions, "Ready") else "NotReady"

    if get_path(pod, "metadata", "deletionTimestamp") is not None:
        if text_at(status, "reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_cell = f"{restarts} ({since(last_restart, now)} ago)"

    pod_ips = list_at(status, "podIPs")
    pod_ip = text_at(pod_ips[0], "ip") if pod_ips else text_at(status, "podIP")
    gates = list_at(spec, "readinessGates")
    readiness = "<none>"
    if gates:
        passed = 0
        for gate in gates:
            gate_condition = condition(conditions, text_at(gate, "conditionType"))
            if gate_condition is not None and gate_condition.get("status") == "True":
                passed += 1
        readiness = f"{passed}/{len(gates)}"
    cells = [
        name_of(pod),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        age(pod, now),
        pod_ip or "<none>",
        text_at(spec, "nodeName") or "<none>",
        text_at(status, "nominatedNodeName") or "<none>",
        readiness,
    ]
    return cells, row_conditions


def _completed(reason: str, message: str) -> dict[str, Any]:
    return {"type": "Completed", "status": "True", "reason": reason, "message": message}


POD_TABLE: Final = TablePrinter(_POD_COLUMNS, _print_pod)
