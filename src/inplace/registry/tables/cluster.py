"""Nodes, Namespaces, Events, PriorityClasses, Leases, and the VPA's CRD printer columns."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from inplace.api.tables.printer import (
    AGE_COLUMN,
    AGE_DOC,
    NAME_COLUMN,
    NAME_DOC,
    Column,
    Row,
    TablePrinter,
    age,
    condition,
    get_path,
    int_at,
    list_at,
    name_of,
    parse_time,
    since,
    text_at,
)

_NODE_ADDRESSES_DOC: Final = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. "
    "More info: https://kubernetes.io/docs/reference/node/node-status/#addresses"
)
_NODE_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Status", "string", "The status of the node"),
    Column("Roles", "string", "The roles of the node"),
    AGE_COLUMN,
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
    NAME_COLUMN,
    Column("Status", "string", "The status of the namespace"),
    AGE_COLUMN,
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
    Column("Name", "string", NAME_DOC, priority=1, format="name"),
)


_PRIORITY_CLASS_COLUMNS: Final = (
    NAME_COLUMN,
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
    AGE_COLUMN,
    Column(
        "PreemptionPolicy",
        "string",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of "
        "Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
    ),
)


_LEASE_COLUMNS: Final = (
    NAME_COLUMN,
    Column(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a current lease. If "
        "Coordinated Leader Election is used, the holder identity must be equal to the "
        "elected LeaseCandidate.metadata.name field.",
    ),
    AGE_COLUMN,
)


def _crd_column(name: str, type_: str, json_path: str, *, priority: int = 0) -> Column:
    """A CRD printer column as the apiextensions server describes it when it has no text."""
    doc = f"Custom resource definition column (in JSONPath format): {json_path}"
    return Column(name, type_, doc, priority=priority)


# The VPA CRD's additionalPrinterColumns (kubernetes/autoscaler vpa-v1-crd-gen.yaml).
_VPA_COLUMNS: Final = (
    NAME_COLUMN,
    _crd_column("Mode", "string", ".spec.updatePolicy.updateMode"),
    _crd_column("CPU", "string", ".status.recommendation.containerRecommendations[0].target.cpu"),
    _crd_column(
        "Mem", "string", ".status.recommendation.containerRecommendations[0].target.memory"
    ),
    _crd_column(
        "Provided", "string", ".status.conditions[?(@.type=='RecommendationProvided')].status"
    ),
    Column("Age", "date", AGE_DOC),
    _crd_column("MinReplicas", "integer", ".spec.updatePolicy.minReplicas", priority=1),
    _crd_column("OOMSeconds", "integer", ".spec.updatePolicy.evictAfterOOMSeconds", priority=1),
)


def _print_node(node: Mapping[str, Any], now: datetime) -> Row:
    status: list[str] = []
    ready = condition(list_at(node, "status", "conditions"), "Ready")
    if ready is not None:
        status.append("Ready" if ready.get("status") == "True" else "NotReady")
    else:
        status.append("Unknown")
    if get_path(node, "spec", "unschedulable") is True:
        status.append("SchedulingDisabled")

    roles: set[str] = set()
    for key, value in (get_path(node, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            if role := key.removeprefix("node-role.kubernetes.io/"):
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(value)

    info = get_path(node, "status", "nodeInfo") or {}
    addresses = list_at(node, "status", "addresses")

    def address(type_: str) -> str:
        return next((text_at(a, "address") for a in addresses if a.get("type") == type_), "<none>")

    cells = [
        name_of(node),
        ",".join(status),
        ",".join(sorted(roles)) or "<none>",
        age(node, now),
        text_at(info, "kubeletVersion"),
        address("InternalIP"),
        address("ExternalIP"),
        text_at(info, "osImage") or "<unknown>",
        text_at(info, "kernelVersion") or "<unknown>",
        text_at(info, "containerRuntimeVersion") or "<unknown>",
    ]
    return cells, None


def _print_namespace(ns: Mapping[str, Any], now: datetime) -> Row:
    return [name_of(ns), text_at(ns, "status", "phase"), age(ns, now)], None


def _print_event(event: Mapping[str, Any], now: datetime) -> Row:
    first = get_path(event, "firstTimestamp")
    first_seen = since(first if parse_time(first) else get_path(event, "eventTime"), now)
    last = get_path(event, "lastTimestamp")
    last_seen = since(last, now) if parse_time(last) else first_seen
    count = int_at(event, "count")
    series = get_path(event, "series")
    if isinstance(series, Mapping):
        last_seen = since(get_path(series, "lastObservedTime"), now)
        count = int_at(series, "count")
    elif count == 0:
        count = 1  # singleton events have no count in the new API
    kind = text_at(event, "involvedObject", "kind").lower()
    obj_name = text_at(event, "involvedObject", "name")
    component = text_at(event, "source", "component") or text_at(event, "reportingComponent")
    instance = text_at(event, "source", "host") or text_at(event, "reportingInstance")
    cells = [
        last_seen,
        text_at(event, "type"),
        text_at(event, "reason"),
        f"{kind}/{obj_name}" if obj_name else kind,
        text_at(event, "involvedObject", "fieldPath"),
        f"{component}, {instance}" if instance else component,
        text_at(event, "message").strip(),
        first_seen,
        count,
        name_of(event),
    ]
    return cells, None


def _print_priority_class(pc: Mapping[str, Any], now: datetime) -> Row:
    cells = [
        name_of(pc),
        int_at(pc, "value"),
        get_path(pc, "globalDefault") is True,
        age(pc, now),
        text_at(pc, "preemptionPolicy"),
    ]
    return cells, None


def _print_lease(lease: Mapping[str, Any], now: datetime) -> Row:
    return [name_of(lease), text_at(lease, "spec", "holderIdentity"), age(lease, now)], None


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


def _print_vpa(vpa: Mapping[str, Any], now: datetime) -> Row:
    recommendations = list_at(vpa, "status", "recommendation", "containerRecommendations")
    target = recommendations[0].get("target") if recommendations else None
    provided = condition(list_at(vpa, "status", "conditions"), "RecommendationProvided")
    cells = [
        name_of(vpa),
        _jsonpath_text(get_path(vpa, "spec", "updatePolicy", "updateMode")),
        _jsonpath_text(get_path(target, "cpu")),
        _jsonpath_text(get_path(target, "memory")),
        _jsonpath_text(provided.get("status")) if provided is not None else None,
        age(vpa, now),
        _jsonpath_int(get_path(vpa, "spec", "updatePolicy", "minReplicas")),
        _jsonpath_int(get_path(vpa, "spec", "updatePolicy", "evictAfterOOMSeconds")),
    ]
    return cells, None


NODE_TABLE: Final = TablePrinter(_NODE_COLUMNS, _print_node)
NAMESPACE_TABLE: Final = TablePrinter(_NAMESPACE_COLUMNS, _print_namespace)
EVENT_TABLE: Final = TablePrinter(_EVENT_COLUMNS, _print_event)
PRIORITY_CLASS_TABLE: Final = TablePrinter(_PRIORITY_CLASS_COLUMNS, _print_priority_class)
LEASE_TABLE: Final = TablePrinter(_LEASE_COLUMNS, _print_lease)
VPA_TABLE: Final = TablePrinter(_VPA_COLUMNS, _print_vpa)
