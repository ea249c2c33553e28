"""What every Table shares: durations, column definitions, the default printer and the Table
envelope."""

from __future__ import annotations

import pytest

from inplace.api.tables import (
    column_definitions,
    human_duration,
    to_table,
)
from tests.api.tables.helpers import (
    DAY,
    HOUR,
    MINUTE,
    MS,
    NOW,
    SECOND,
    ago,
    cells,
    pod,
    printer,
    terminated,
)

# --- human_duration (upstream duration_test.go) ---------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (SECOND, "1s"),
        (70 * SECOND, "70s"),
        (190 * SECOND, "3m10s"),
        (70 * MINUTE, "70m"),
        (47 * HOUR, "47h"),
        (49 * HOUR, "2d1h"),
        ((8 * 24 + 2) * HOUR, "8d"),
        (367 * 24 * HOUR, "367d"),
        ((365 * 2 * 24 + 25) * HOUR, "2y1d"),
        ((365 * 8 * 24 + 2) * HOUR, "8y"),
        # boundaries
        (-2 * SECOND, "<invalid>"),
        (-2 * SECOND + 1e-9, "0s"),
        (0, "0s"),
        (SECOND - MS, "0s"),
        (2 * MINUTE - MS, "119s"),
        (2 * MINUTE, "2m"),
        (2 * MINUTE + SECOND, "2m1s"),
        (10 * MINUTE - MS, "9m59s"),
        (10 * MINUTE, "10m"),
        (10 * MINUTE + SECOND, "10m"),
        (3 * HOUR - MS, "179m"),
        (3 * HOUR, "3h"),
        (3 * HOUR + MINUTE, "3h1m"),
        (8 * HOUR - MS, "7h59m"),
        (8 * HOUR, "8h"),
        (8 * HOUR + 59 * MINUTE, "8h"),
        (2 * DAY - MS, "47h"),
        (2 * DAY, "2d"),
        (2 * DAY + HOUR, "2d1h"),
        (8 * DAY - MS, "7d23h"),
        (8 * DAY, "8d"),
        (8 * DAY + 23 * HOUR, "8d"),
        (2 * 365 * DAY - MS, "729d"),
        (2 * 365 * DAY, "2y"),
        (2 * 365 * DAY + 23 * HOUR, "2y"),
        (2 * 365 * DAY + 23 * HOUR + 59 * MINUTE, "2y"),
        (2 * 365 * DAY + DAY - MS, "2y"),
        (2 * 365 * DAY + DAY, "2y1d"),
        (3 * 365 * DAY, "3y"),
        (4 * 365 * DAY, "4y"),
        (5 * 365 * DAY, "5y"),
        (6 * 365 * DAY, "6y"),
        (7 * 365 * DAY, "7y"),
        (8 * 365 * DAY - MS, "7y364d"),
        (8 * 365 * DAY, "8y"),
        (8 * 365 * DAY + 364 * DAY, "8y"),
        (9 * 365 * DAY, "9y"),
        # a little in the future is clock skew, not an error
        (-1.5, "0s"),
        (-0.5, "0s"),
        (5 * SECOND, "5s"),
        (150 * SECOND, "2m30s"),
        (3 * HOUR, "3h"),
        (4 * DAY, "4d"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected


# --- column definitions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "default", "wide"),
    [
        (
            "Pod",
            ["Name", "Ready", "Status", "Restarts", "Age"],
            ["IP", "Node", "Nominated Node", "Readiness Gates"],
        ),
        (
            "Node",
            ["Name", "Status", "Roles", "Age", "Version"],
            ["Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"],
        ),
        ("Namespace", ["Name", "Status", "Age"], []),
        (
            "Event",
            ["Last Seen", "Type", "Reason", "Object", "Message"],
            ["Subobject", "Source", "First Seen", "Count", "Name"],
        ),
        (
            "Deployment",
            ["Name", "Ready", "Up-to-date", "Available", "Age"],
            ["Containers", "Images", "Selector"],
        ),
        (
            "ReplicaSet",
            ["Name", "Desired", "Current", "Ready", "Age"],
            ["Containers", "Images", "Selector"],
        ),
        (
            "Job",
            ["Name", "Status", "Completions", "Duration", "Age"],
            ["Containers", "Images", "Selector"],
        ),
        (
            "PodDisruptionBudget",
            ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"],
            [],
        ),
        ("PriorityClass", ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"], []),
        ("Lease", ["Name", "Holder", "Age"], []),
        (
            "VerticalPodAutoscaler",
            ["Name", "Mode", "CPU", "Mem", "Provided", "Age"],
            ["MinReplicas", "OOMSeconds"],
        ),
        ("Widget", ["Name", "Age"], []),
    ],
)
def test_columns_and_priorities(kind: str, default: list[str], wide: list[str]) -> None:
    columns = column_definitions(printer(kind))
    assert [c["name"] for c in columns if c["priority"] == 0] == default
    assert [c["name"] for c in columns if c["priority"] == 1] == wide
    for c in columns:
        assert set(c) == {"name", "type", "format", "description", "priority"}
        assert c["description"]


def test_column_order_is_upstreams_including_wide_columns() -> None:
    names = [c["name"] for c in column_definitions(printer("Event"))]
    assert names == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Subobject",
        "Source",
        "Message",
        "First Seen",
        "Count",
        "Name",
    ]
    pod = column_definitions(printer("Pod"))
    assert pod[0] == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": pod[0]["description"],
        "priority": 0,
    }
    assert pod[0]["description"].startswith("Name must be unique within a namespace.")
    types = {c["name"]: c["type"] for c in column_definitions(printer("ReplicaSet"))}
    assert types["Desired"] == "integer"
    assert {c["name"]: c["type"] for c in column_definitions(printer("PriorityClass"))}[
        "Global-Default"
    ] == "boolean"
    assert {c["name"]: c["type"] for c in column_definitions(printer("VerticalPodAutoscaler"))}[
        "Age"
    ] == "date"


def test_column_definitions_are_fresh_copies() -> None:
    column_definitions(printer("Pod"))[0]["name"] = "mutated"
    assert column_definitions(printer("Pod"))[0]["name"] == "Name"


def test_unknown_kind_gets_name_and_age() -> None:
    obj = {"metadata": {"name": "cfg", "creationTimestamp": ago(45 * DAY)}}
    assert cells("Widget", obj) == ["cfg", "45d"]
    assert [c["name"] for c in column_definitions(printer("Widget"))] == ["Name", "Age"]


@pytest.mark.parametrize(
    "kind",
    [
        "Pod",
        "Node",
        "Namespace",
        "Event",
        "Deployment",
        "ReplicaSet",
        "Job",
        "PodDisruptionBudget",
        "PriorityClass",
        "Lease",
        "VerticalPodAutoscaler",
        "Widget",
    ],
)
def test_every_printer_survives_an_empty_object(kind: str) -> None:
    row = cells(kind, {})
    assert len(row) == len(column_definitions(printer(kind)))


# --- the Table envelope ---------------------------------------------------------------------


def test_table_envelope_with_partial_object_metadata() -> None:
    a = pod(status={"phase": "Running"}, resourceVersion="7", labels={"app": "web"})
    b = pod(status={"phase": "Pending"}, name="q")
    table = to_table(
        printer("Pod"),
        [a, b],
        now=NOW,
        list_metadata={"resourceVersion": "99", "continue": "", "remainingItemCount": 3},
    )
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "99", "remainingItemCount": 3}
    assert table["columnDefinitions"] == column_definitions(printer("Pod"))
    assert [r["cells"][0] for r in table["rows"]] == ["p", "q"]
    assert table["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": a["metadata"],
    }


def test_table_include_object_modes() -> None:
    obj = pod(resourceVersion="5")
    full = to_table(printer("Pod"), [obj], now=NOW, include_object="Object")
    assert full["rows"][0]["object"] == obj
    assert full["metadata"] == {"resourceVersion": "5"}  # a GET reports the object's version
    none = to_table(printer("Pod"), [obj], now=NOW, include_object="None")
    assert none["rows"][0]["object"] is None
    assert none["rows"][0]["cells"] == full["rows"][0]["cells"]


def test_empty_list_and_naive_now() -> None:
    table = to_table(
        printer("Node"), [], now=NOW.replace(tzinfo=None), list_metadata={"resourceVersion": "1"}
    )
    assert table["rows"] == []
    assert table["metadata"] == {"resourceVersion": "1"}
    obj = {"metadata": {"name": "n", "creationTimestamp": ago(HOUR)}}
    assert (
        to_table(printer("Lease"), [obj], now=NOW.replace(tzinfo=None))["rows"][0]["cells"][2]
        == "60m"
    )


def test_to_table_does_not_mutate_objects() -> None:
    obj = pod(status={"phase": "Succeeded", "containerStatuses": [terminated("Completed")]})
    snapshot = repr(obj)
    to_table(printer("Pod"), [obj], now=NOW, include_object="Object")
    assert repr(obj) == snapshot
