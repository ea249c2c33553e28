"""Server-side Table responses (`meta.k8s.io/v1 Table`), so `kubectl get` prints what it prints
against a real cluster.

kubectl asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints the cells the
server computed, so READY, STATUS, RESTARTS and the rest are decided here. Each printer is a
port of upstream's `pkg/printers/internalversion/printers.go` (v1.32) working on the v1 JSON
we store; the VerticalPodAutoscaler follows its CRD's `additionalPrinterColumns`.

Like upstream's TableConvertor, rows always carry the wide (`-o wide`) cells too; the priority 1
columns are the ones kubectl hides unless asked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal

from inplace.api.selectors import LabelSelector, SelectorError

__all__ = [
    "DEFAULT_TABLE",
    "DEPLOYMENT_TABLE",
    "EVENT_TABLE",
    "JOB_TABLE",
    "LEASE_TABLE",
    "NAMESPACE_TABLE",
    "NODE_TABLE",
    "PDB_TABLE",
    "POD_TABLE",
    "PRIORITY_CLASS_TABLE",
    "REPLICA_SET_TABLE",
    "VPA_TABLE",
    "Column",
    "TablePrinter",
    "column_definitions",
    "human_duration",
    "to_table",
]

_NS_PER_SECOND: Final = 1_000_000_000
_NS_PER_MINUTE: Final = 60 * _NS_PER_SECOND
_NS_PER_HOUR: Final = 60 * _NS_PER_MINUTE


def human_duration(seconds: float) -> str:
    """upstream duration.HumanDuration: ~2-3 significant figures ("5s", "3m10s", "2d1h", "2y").

    Up to two seconds in the future still reads "0s" (clock skew between hosts); further is
    "<invalid>".
    """
    d = round(seconds * _NS_PER_SECOND)
    whole_seconds = int(d / _NS_PER_SECOND)  # Go's int(d.Seconds()) truncates toward zero
    if whole_seconds < -1:
        return "<invalid>"
    if whole_seconds < 0:
        return "0s"
    if whole_seconds < 60 * 2:
        return f"{whole_seconds}s"
    minutes = d // _NS_PER_MINUTE
    if minutes < 10:
        s = (d // _NS_PER_SECOND) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = d // _NS_PER_HOUR
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if dy == 0 else f"{years}y{dy}d"
    return f"{hours // 24 // 365}y"


# --- column definitions --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    """One Table column (upstream ``TableColumnDefinition``); priority 1 = only with -o wide."""

    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


#: One object's cells, and the row's conditions (pods: Completed/Failed rows are greyed out).
_Row = tuple[list[Any], list[dict[str, Any]] | None]


@dataclass(frozen=True, slots=True)
class TablePrinter:
    """How one kind prints as a Table (upstream's TableConvertor for a resource): its columns
    and the function that computes one object's cells. A kind names its printer in its
    strategy (`inplace.api.kinds`); a printer's cells must line up with its columns."""

    columns: tuple[Column, ...]
    row: Callable[[Mapping[str, Any], datetime], _Row]


# Descriptions are upstream's (SwaggerDoc of the field each column shows).
_NAME_DOC: Final = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE_DOC: Final = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_NAME: Final = Column("Name", "string", _NAME_DOC, format="name")
_AGE: Final = Column("Age", "string", _AGE_DOC)
_CONTAINERS: Final = Column(
    "Containers", "string", "Names of each container in the template.", priority=1
)
_IMAGES: Final = Column(
    "Images", "string", "Images referenced by each container in the template.", priority=1
)


def _selector_column(description: str) -> Column:
    return Column("Selector", "string", description, priority=1)


_NODE_ADDRESSES_DOC: Final = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. "
    "More info: https://kubernetes.io/docs/reference/node/node-status/#addresses"
)
_WORKLOAD_SELECTOR_DOC: Final = (
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the "
    "ones affected by this deployment."
)

_POD_COLUMNS: Final = (
    _NAME,
    Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", "The aggregate status of the containers in this pod."),
    Column(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the "
        "last container in this pod has restarted.",
    ),
    _AGE,
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


_NODE_COLUMNS: Final = (
    _NAME,
    Column("Status", "string", "The status of the node"),
    Column("Roles", "string", "The roles of the node"),
    _AGE,
    Column("Version", "string", "Kubelet Version reported by the node."),
    Column("Internal-IP", "string", _NODE_ADDRESSES_DOC, priority=1),
    Column("External-IP", "string", _NODE_ADDRESSES_DOC, priority=1),
    Column(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        priority=1,
    ),
    Column(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        priority=1,
    ),
    Column(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
        "containerd://1.4.2).",
        priority=1,
    ),
)


_NAMESPACE_COLUMNS: Final = (
    _NAME,
    Column("Status", "string", "The status of the namespace"),
    _AGE,
)


_EVENT_COLUMNS: Final = (
    Column(
        "Last Seen",
        "string",
        "The time at which the most recent occurrence of this event was recorded.",
    ),
    Column(
        "Type",
        "string",
        "Type of this event (Normal, Warning), new types could be added in the future",
    ),
    Column(
        "Reason",
        "string",
        "This should be a short, machine understandable string that gives the reason for "
        "the transition into the object's current status.",
    ),
    Column("Object", "string", "The object that this event is about."),
    Column(
        "Subobject",
        "string",
        "If referring to a piece of an object instead of an entire object, this string "
        "should contain a valid JSON/Go field access statement, such as "
        "desiredState.manifest.containers[2].",
        priority=1,
    ),
    Column(
        "Source",
        "string",
        "The component reporting this event. Should be a short machine understandable string.",
        priority=1,
    ),
    Column("Message", "string", "A human-readable description of the status of this operation."),
    Column(
        "First Seen",
        "string",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        priority=1,
    ),
    Column("Count", "string", "The number of times this event has occurred.", priority=1),
    Column("Name", "string", _NAME_DOC, priority=1, format="name"),
)


_DEPLOYMENT_COLUMNS: Final = (
    _NAME,
    Column("Ready", "string", "Number of the pod with ready state"),
    Column(
        "Up-to-date",
        "string",
        "Total number of non-terminated pods targeted by this deployment that have the "
        "desired template spec.",
    ),
    Column(
        "Available",
        "string",
        "Total number of available pods (ready for at least minReadySeconds) targeted by "
        "this deployment.",
    ),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _selector_column(_WORKLOAD_SELECTOR_DOC),
)


_REPLICA_SET_COLUMNS: Final = (
    _NAME,
    Column(
        "Desired",
        "integer",
        "Replicas is the number of desired replicas. This is a pointer to distinguish "
        "between explicit zero and unspecified. Defaults to 1. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller"
        "/#what-is-a-replicationcontroller",
    ),
    Column(
        "Current",
        "integer",
        "Replicas is the most recently oberved number of replicas. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller"
        "/#what-is-a-replicationcontroller",
    ),
    Column(
        "Ready",
        "integer",
        "The number of ready replicas for this replica set.",
    ),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _selector_column(
        "Selector is a label query over pods that should match the replica count. If the "
        "selector is empty, it is defaulted to the labels present on the pod template."
    ),
)


_JOB_COLUMNS: Final = (
    _NAME,
    Column("Status", "string", "Status of the job."),
    Column(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded. The value increases "
        "monotonically for a given spec. However, it may decrease in reaction to scale down "
        "of elastic indexed jobs.",
    ),
    Column("Duration", "string", "Time required to complete the job."),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _selector_column(
        "A label query over pods that should match the pod count. Normally, the system sets "
        "this field for you."
    ),
)


_PDB_COLUMNS: Final = (
    _NAME,
    Column("Min Available", "string", "The minimum number of pods that must be available."),
    Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    Column(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    _AGE,
)


_PRIORITY_CLASS_COLUMNS: Final = (
    _NAME,
    Column(
        "Value",
        "integer",
        "value represents the integer value of this priority class. This is the actual "
        "priority that pods receive when they have the name of this class in their pod spec.",
    ),
    Column(
        "Global-Default",
        "boolean",
        "globalDefault specifies whether this PriorityClass should be considered as the "
        "default priority for pods that do not have any priority class. Only one "
        "PriorityClass can be marked as `globalDefault`. However, if more than one "
        "PriorityClasses exists with their `globalDefault` field set to true, the smallest "
        "value of such global default PriorityClasses will be used as the default priority.",
    ),
    _AGE,
    Column(
        "PreemptionPolicy",
        "string",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of "
        "Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
    ),
)


_LEASE_COLUMNS: Final = (
    _NAME,
    Column(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a current lease. If "
        "Coordinated Leader Election is used, the holder identity must be equal to the "
        "elected LeaseCandidate.metadata.name field.",
    ),
    _AGE,
)


def _crd_column(name: str, type_: str, json_path: str, *, priority: int = 0) -> Column:
    """A CRD printer column as the apiextensions server describes it when it has no text."""
    doc = f"Custom resource definition column (in JSONPath format): {json_path}"
    return Column(name, type_, doc, priority=priority)


# The VPA CRD's additionalPrinterColumns (kubernetes/autoscaler vpa-v1-crd-gen.yaml).
_VPA_COLUMNS: Final = (
    _NAME,
    _crd_column("Mode", "string", ".spec.updatePolicy.updateMode"),
    _crd_column("CPU", "string", ".status.recommendation.containerRecommendations[0].target.cpu"),
    _crd_column(
        "Mem", "string", ".status.recommendation.containerRecommendations[0].target.memory"
    ),
    _crd_column(
        "Provided", "string", ".status.conditions[?(@.type=='RecommendationProvided')].status"
    ),
    Column("Age", "date", _AGE_DOC),
    _crd_column("MinReplicas", "integer", ".spec.updatePolicy.minReplicas", priority=1),
    _crd_column("OOMSeconds", "integer", ".spec.updatePolicy.evictAfterOOMSeconds", priority=1),
)

# What a CRD without printer columns gets.
_DEFAULT_COLUMNS: Final = (_NAME, Column("Age", "date", _AGE_DOC))


def column_definitions(printer: TablePrinter) -> list[dict[str, Any]]:
    """A printer's Table columns, as fresh dicts; priority 1 = only with `-o wide`."""
    return [c.as_dict() for c in printer.columns]


# --- helpers over raw JSON -----------------------------------------------------------------


def _get(obj: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def _str(obj: Any, *path: str) -> str:
    value = _get(obj, *path)
    return value if isinstance(value, str) else ""


def _int(obj: Any, *path: str, default: int = 0) -> int:
    value = _get(obj, *path)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return int(value)


def _list(obj: Any, *path: str) -> list[Mapping[str, Any]]:
    value = _get(obj, *path)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (Time or MicroTime) as an aware datetime; None when unset."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def _since(value: Any, now: datetime) -> str:
    """upstream translateTimestampSince: "<unknown>" for an unset time."""
    when = value if isinstance(value, datetime) else _time(value)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def _age(obj: Mapping[str, Any], now: datetime) -> str:
    return _since(_get(obj, "metadata", "creationTimestamp"), now)


def _name(obj: Mapping[str, Any]) -> str:
    return _str(obj, "metadata", "name")


def _containers_cells(template_spec: Any) -> list[str]:
    """upstream layoutContainerCells: names and images, comma-joined."""
    containers = _list(template_spec, "containers")
    return [
        ",".join(_str(c, "name") for c in containers),
        ",".join(_str(c, "image") for c in containers),
    ]


def _format_selector(selector: Any, *, empty: str, invalid: str) -> str:
    """upstream LabelSelectorAsSelector(...).String(); `empty`/`invalid` differ per printer."""
    try:
        text = str(LabelSelector.from_dict(selector if isinstance(selector, Mapping) else None))
    except SelectorError:
        return invalid
    return text or empty


def _condition(conditions: list[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def _condition_true(conditions: list[Mapping[str, Any]], type_: str) -> bool:
    """upstream's has*Condition: the first condition of that type decides."""
    c = _condition(conditions, type_)
    return c is not None and c.get("status") == "True"


# --- printers ------------------------------------------------------------------------------


def _later(current: datetime | None, candidate: datetime | None) -> datetime | None:
    if candidate is not None and (current is None or candidate > current):
        return candidate
    return current


def _print_pod(pod: Mapping[str, Any], now: datetime) -> _Row:
    """upstream printPod: READY, STATUS and RESTARTS as kubectl shows them."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    init_containers = _list(spec, "initContainers")
    conditions = _list(status, "conditions")
    phase = _str(status, "phase")
    reason = _str(status, "reason") or phase
    for c in conditions:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    row_conditions: list[dict[str, Any]] | None = None
    if phase == "Succeeded":
        row_conditions = [_completed("Succeeded", "The pod has completed successfully.")]
    elif phase == "Failed":
        row_conditions = [_completed("Failed", "The pod failed.")]

    # restartable init containers (sidecars) count as containers of the pod
    sidecars = {_str(c, "name") for c in init_containers if c.get("restartPolicy") == "Always"}
    total = len(_list(spec, "containers")) + sum(
        1 for c in init_containers if c.get("restartPolicy") == "Always"
    )
    ready = 0
    restarts = sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None

    initializing = False
    for i, cs in enumerate(_list(status, "initContainerStatuses")):
        count = _int(cs, "restartCount")
        finished = _time(_get(cs, "lastState", "terminated", "finishedAt"))
        restarts += count
        last_restart = _later(last_restart, finished)
        is_sidecar = _str(cs, "name") in sidecars
        if is_sidecar:
            sidecar_restarts += count
            last_sidecar_restart = _later(last_sidecar_restart, finished)
        terminated = _get(cs, "state", "terminated")
        waiting = _get(cs, "state", "waiting")
        if isinstance(terminated, Mapping) and _int(terminated, "exitCode") == 0:
            continue
        if is_sidecar and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if isinstance(terminated, Mapping):
            if why := _str(terminated, "reason"):
                reason = "Init:" + why
            elif signal := _int(terminated, "signal"):
                reason = f"Init:Signal:{signal}"
            else:
                reason = f"Init:ExitCode:{_int(terminated, 'exitCode')}"
        elif isinstance(waiting, Mapping) and _str(waiting, "reason") not in (
            "",
            "PodInitializing",
        ):
            reason = "Init:" + _str(waiting, "reason")
        else:
            reason = f"Init:{i}/{len(init_containers)}"
        initializing = True
        break

    if not initializing or _condition_true(conditions, "Initialized"):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed(_list(status, "containerStatuses")):
            restarts += _int(cs, "restartCount")
            last_restart = _later(
                last_restart, _time(_get(cs, "lastState", "terminated", "finishedAt"))
            )
            terminated = _get(cs, "state", "terminated")
            waiting = _get(cs, "state", "waiting")
            if isinstance(waiting, Mapping) and _str(waiting, "reason"):
                reason = _str(waiting, "reason")
            elif isinstance(terminated, Mapping) and _str(terminated, "reason"):
                reason = _str(terminated, "reason")
            elif isinstance(terminated, Mapping):
                signal = _int(terminated, "signal")
                exit_code = _int(terminated, "exitCode")
                reason = f"Signal:{signal}" if signal else f"ExitCode:{exit_code}"
            elif cs.get("ready") is True and isinstance(_get(cs, "state", "running"), Mapping):
                has_running = True
                ready += 1
        # a pod whose last container completed while another still runs is not "Completed"
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"

    if _get(pod, "metadata", "deletionTimestamp") is not None:
        if _str(status, "reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_cell = f"{restarts} ({_since(last_restart, now)} ago)"

    pod_ips = _list(status, "podIPs")
    pod_ip = _str(pod_ips[0], "ip") if pod_ips else _str(status, "podIP")
    gates = _list(spec, "readinessGates")
    readiness = "<none>"
    if gates:
        passed = 0
        for gate in gates:
            gate_condition = _condition(conditions, _str(gate, "conditionType"))
            if gate_condition is not None and gate_condition.get("status") == "True":
                passed += 1
        readiness = f"{passed}/{len(gates)}"
    cells = [
        _name(pod),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        _age(pod, now),
        pod_ip or "<none>",
        _str(spec, "nodeName") or "<none>",
        _str(status, "nominatedNodeName") or "<none>",
        readiness,
    ]
    return cells, row_conditions


def _completed(reason: str, message: str) -> dict[str, Any]:
    return {"type": "Completed", "status": "True", "reason": reason, "message": message}


def _print_node(node: Mapping[str, Any], now: datetime) -> _Row:
    status: list[str] = []
    ready = _condition(_list(node, "status", "conditions"), "Ready")
    if ready is not None:
        status.append("Ready" if ready.get("status") == "True" else "NotReady")
    else:
        status.append("Unknown")
    if _get(node, "spec", "unschedulable") is True:
        status.append("SchedulingDisabled")

    roles: set[str] = set()
    for key, value in (_get(node, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            if role := key.removeprefix("node-role.kubernetes.io/"):
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(value)

    info = _get(node, "status", "nodeInfo") or {}
    addresses = _list(node, "status", "addresses")

    def address(type_: str) -> str:
        return next((_str(a, "address") for a in addresses if a.get("type") == type_), "<none>")

    cells = [
        _name(node),
        ",".join(status),
        ",".join(sorted(roles)) or "<none>",
        _age(node, now),
        _str(info, "kubeletVersion"),
        address("InternalIP"),
        address("ExternalIP"),
        _str(info, "osImage") or "<unknown>",
        _str(info, "kernelVersion") or "<unknown>",
        _str(info, "containerRuntimeVersion") or "<unknown>",
    ]
    return cells, None


def _print_namespace(ns: Mapping[str, Any], now: datetime) -> _Row:
    return [_name(ns), _str(ns, "status", "phase"), _age(ns, now)], None


def _print_event(event: Mapping[str, Any], now: datetime) -> _Row:
    first = _get(event, "firstTimestamp")
    first_seen = _since(first if _time(first) else _get(event, "eventTime"), now)
    last = _get(event, "lastTimestamp")
    last_seen = _since(last, now) if _time(last) else first_seen
    count = _int(event, "count")
    series = _get(event, "series")
    if isinstance(series, Mapping):
        last_seen = _since(_get(series, "lastObservedTime"), now)
        count = _int(series, "count")
    elif count == 0:
        count = 1  # singleton events have no count in the new API
    kind = _str(event, "involvedObject", "kind").lower()
    obj_name = _str(event, "involvedObject", "name")
    component = _str(event, "source", "component") or _str(event, "reportingComponent")
    instance = _str(event, "source", "host") or _str(event, "reportingInstance")
    cells = [
        last_seen,
        _str(event, "type"),
        _str(event, "reason"),
        f"{kind}/{obj_name}" if obj_name else kind,
        _str(event, "involvedObject", "fieldPath"),
        f"{component}, {instance}" if instance else component,
        _str(event, "message").strip(),
        first_seen,
        count,
        _name(event),
    ]
    return cells, None


def _print_deployment(d: Mapping[str, Any], now: datetime) -> _Row:
    desired = _int(d, "spec", "replicas", default=1)
    cells: list[Any] = [
        _name(d),
        f"{_int(d, 'status', 'readyReplicas')}/{desired}",
        _int(d, "status", "updatedReplicas"),
        _int(d, "status", "availableReplicas"),
        _age(d, now),
        *_containers_cells(_get(d, "spec", "template", "spec")),
        _format_selector(_get(d, "spec", "selector"), empty="", invalid="<invalid>"),
    ]
    return cells, None


def _print_replica_set(rs: Mapping[str, Any], now: datetime) -> _Row:
    cells: list[Any] = [
        _name(rs),
        _int(rs, "spec", "replicas", default=1),
        _int(rs, "status", "replicas"),
        _int(rs, "status", "readyReplicas"),
        _age(rs, now),
        *_containers_cells(_get(rs, "spec", "template", "spec")),
        _format_selector(_get(rs, "spec", "selector"), empty="<none>", invalid="<error>"),
    ]
    return cells, None


def _print_job(job: Mapping[str, Any], now: datetime) -> _Row:
    succeeded = _int(job, "status", "succeeded")
    completions = _get(job, "spec", "completions")
    if isinstance(completions, int):
        completions_cell = f"{succeeded}/{completions}"
    else:
        parallelism = _int(job, "spec", "parallelism")
        if parallelism > 1:
            completions_cell = f"{succeeded}/1 of {parallelism}"
        else:
            completions_cell = f"{succeeded}/1"
    start = _time(_get(job, "status", "startTime"))
    end = _time(_get(job, "status", "completionTime"))
    if start is None:
        duration = ""
    elif end is None:
        duration = human_duration((now - start).total_seconds())
    else:
        duration = human_duration((end - start).total_seconds())
    conditions = _list(job, "status", "conditions")
    if _condition_true(conditions, "Complete"):
        state = "Complete"
    elif _condition_true(conditions, "Failed"):
        state = "Failed"
    elif _get(job, "metadata", "deletionTimestamp") is not None:
        state = "Terminating"
    elif _condition_true(conditions, "Suspended"):
        state = "Suspended"
    elif _condition_true(conditions, "FailureTarget"):
        state = "FailureTarget"
    else:
        state = "Running"
    cells: list[Any] = [
        _name(job),
        state,
        completions_cell,
        duration,
        _age(job, now),
        *_containers_cells(_get(job, "spec", "template", "spec")),
        _format_selector(_get(job, "spec", "selector"), empty="<none>", invalid="<error>"),
    ]
    return cells, None


def _int_or_string(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "N/A"
    return str(value)


def _print_pdb(pdb: Mapping[str, Any], now: datetime) -> _Row:
    cells = [
        _name(pdb),
        _int_or_string(_get(pdb, "spec", "minAvailable")),
        _int_or_string(_get(pdb, "spec", "maxUnavailable")),
        _int(pdb, "status", "disruptionsAllowed"),
        _age(pdb, now),
    ]
    return cells, None


def _print_priority_class(pc: Mapping[str, Any], now: datetime) -> _Row:
    cells = [
        _name(pc),
        _int(pc, "value"),
        _get(pc, "globalDefault") is True,
        _age(pc, now),
        _str(pc, "preemptionPolicy"),
    ]
    return cells, None


def _print_lease(lease: Mapping[str, Any], now: datetime) -> _Row:
    return [_name(lease), _str(lease, "spec", "holderIdentity"), _age(lease, now)], None


def _jsonpath_text(value: Any) -> str | None:
    """A CRD "string" column: the value as kubectl's JSONPath printer writes it."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _jsonpath_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _print_vpa(vpa: Mapping[str, Any], now: datetime) -> _Row:
    recommendations = _list(vpa, "status", "recommendation", "containerRecommendations")
    target = recommendations[0].get("target") if recommendations else None
    provided = _condition(_list(vpa, "status", "conditions"), "RecommendationProvided")
    cells = [
        _name(vpa),
        _jsonpath_text(_get(vpa, "spec", "updatePolicy", "updateMode")),
        _jsonpath_text(_get(target, "cpu")),
        _jsonpath_text(_get(target, "memory")),
        _jsonpath_text(provided.get("status")) if provided is not None else None,
        _age(vpa, now),
        _jsonpath_int(_get(vpa, "spec", "updatePolicy", "minReplicas")),
        _jsonpath_int(_get(vpa, "spec", "updatePolicy", "evictAfterOOMSeconds")),
    ]
    return cells, None


def _print_default(obj: Mapping[str, Any], now: datetime) -> _Row:
    return [_name(obj), _age(obj, now)], None


POD_TABLE: Final = TablePrinter(_POD_COLUMNS, _print_pod)
NODE_TABLE: Final = TablePrinter(_NODE_COLUMNS, _print_node)
NAMESPACE_TABLE: Final = TablePrinter(_NAMESPACE_COLUMNS, _print_namespace)
EVENT_TABLE: Final = TablePrinter(_EVENT_COLUMNS, _print_event)
DEPLOYMENT_TABLE: Final = TablePrinter(_DEPLOYMENT_COLUMNS, _print_deployment)
REPLICA_SET_TABLE: Final = TablePrinter(_REPLICA_SET_COLUMNS, _print_replica_set)
JOB_TABLE: Final = TablePrinter(_JOB_COLUMNS, _print_job)
PDB_TABLE: Final = TablePrinter(_PDB_COLUMNS, _print_pdb)
PRIORITY_CLASS_TABLE: Final = TablePrinter(_PRIORITY_CLASS_COLUMNS, _print_priority_class)
LEASE_TABLE: Final = TablePrinter(_LEASE_COLUMNS, _print_lease)
VPA_TABLE: Final = TablePrinter(_VPA_COLUMNS, _print_vpa)
#: Name and Age: what a kind without a printer of its own gets (as a CRD without printer
#: columns does upstream).
DEFAULT_TABLE: Final = TablePrinter(_DEFAULT_COLUMNS, _print_default)


def _row_object(obj: Mapping[str, Any], include_object: str) -> Any:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def to_table(
    printer: TablePrinter,
    objects: Sequence[Mapping[str, Any]],
    *,
    now: datetime,
    include_object: Literal["None", "Metadata", "Object"] = "Metadata",
    list_metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A `meta.k8s.io/v1 Table` of `objects` (all of the kind `printer` prints), as
    kube-apiserver answers it.

    `include_object` is the request's `includeObject`: "Metadata" (kubectl's default) puts a
    PartialObjectMetadata in each row, "Object" the object itself, "None" nothing.
    `list_metadata` is the list's metadata (resourceVersion, continue, remainingItemCount);
    without it, a single object's resourceVersion is used, as for a GET.
    """
    now = _aware(now)
    rows: list[dict[str, Any]] = []
    for obj in objects:
        cells, conditions = printer.row(obj, now)
        row: dict[str, Any] = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(obj, include_object)
        rows.append(row)

    metadata: dict[str, Any] = {}
    if list_metadata is not None:
        for key in ("resourceVersion", "continue", "remainingItemCount"):
            value = list_metadata.get(key)
            if value not in (None, ""):
                metadata[key] = value
    elif len(objects) == 1 and (rv := _str(objects[0], "metadata", "resourceVersion")):
        metadata["resourceVersion"] = rv
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": column_definitions(printer),
        "rows": rows,
    }
