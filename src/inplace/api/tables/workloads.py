"""Deployments, ReplicaSets, Jobs and PodDisruptionBudgets."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from inplace.api.tables.printer import (
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    NAME_COLUMN,
    Column,
    Row,
    TablePrinter,
    age,
    condition_true,
    containers_cells,
    format_selector,
    get_path,
    human_duration,
    int_at,
    list_at,
    name_of,
    parse_time,
    selector_column,
)

_WORKLOAD_SELECTOR_DOC: Final = (
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the "
    "ones affected by this deployment."
)

_DEPLOYMENT_COLUMNS: Final = (
    NAME_COLUMN,
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
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    selector_column(_WORKLOAD_SELECTOR_DOC),
)


_REPLICA_SET_COLUMNS: Final = (
    NAME_COLUMN,
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
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    selector_column(
        "Selector is a label query over pods that should match the replica count. If the "
        "selector is empty, it is defaulted to the labels present on the pod template."
    ),
)


_JOB_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Status", "string", "Status of the job."),
    Column(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded. The value increases "
        "monotonically for a given spec. However, it may decrease in reaction to scale down "
        "of elastic indexed jobs.",
    ),
    Column("Duration", "string", "Time required to complete the job."),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    selector_column(
        "A label query over pods that should match the pod count. Normally, the system sets "
        "this field for you."
    ),
)


_PDB_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Min Available", "string", "The minimum number of pods that must be available."),
    Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    Column(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE_COLUMN,
)


def _print_deployment(d: Mapping[str, Any], now: datetime) -> Row:
    desired = int_at(d, "spec", "replicas", default=1)
    cells: list[Any] = [
        name_of(d),
        f"{int_at(d, 'status', 'readyReplicas')}/{desired}",
        int_at(d, "status", "updatedReplicas"),
        int_at(d, "status", "availableReplicas"),
        age(d, now),
        *containers_cells(get_path(d, "spec", "template", "spec")),
        format_selector(get_path(d, "spec", "selector"), empty="", invalid="<invalid>"),
    ]
    return cells, None


def _print_replica_set(rs: Mapping[str, Any], now: datetime) -> Row:
    cells: list[Any] = [
        name_of(rs),
        int_at(rs, "spec", "replicas", default=1),
        int_at(rs, "status", "replicas"),
        int_at(rs, "status", "readyReplicas"),
        age(rs, now),
        *containers_cells(get_path(rs, "spec", "template", "spec")),
        format_selector(get_path(rs, "spec", "selector"), empty="<none>", invalid="<error>"),
    ]
    return cells, None


def _print_job(job: Mapping[str, Any], now: datetime) -> Row:
    succeeded = int_at(job, "status", "succeeded")
    completions = get_path(job, "spec", "completions")
    if isinstance(completions, int):
        completions_cell = f"{succeeded}/{completions}"
    else:
        parallelism = int_at(job, "spec", "parallelism")
        if parallelism > 1:
            completions_cell = f"{succeeded}/1 of {parallelism}"
        else:
            completions_cell = f"{succeeded}/1"
    start = parse_time(get_path(job, "status", "startTime"))
    end = parse_time(get_path(job, "status", "completionTime"))
    if start is None:
        duration = ""
    elif end is None:
        duration = human_duration((now - start).total_seconds())
    else:
        duration = human_duration((end - start).total_seconds())
    conditions = list_at(job, "status", "conditions")
    if condition_true(conditions, "Complete"):
        state = "Complete"
    elif condition_true(conditions, "Failed"):
        state = "Failed"
    elif get_path(job, "metadata", "deletionTimestamp") is not None:
        state = "Terminating"
    elif condition_true(conditions, "Suspended"):
        state = "Suspended"
    elif condition_true(conditions, "FailureTarget"):
        state = "FailureTarget"
    else:
        state = "Running"
    cells: list[Any] = [
        name_of(job),
        state,
        completions_cell,
        duration,
        age(job, now),
        *containers_cells(get_path(job, "spec", "template", "spec")),
        format_selector(get_path(job, "spec", "selector"), empty="<none>", invalid="<error>"),
    ]
    return cells, None


def _int_or_string(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "N/A"
    return str(value)


def _print_pdb(pdb: Mapping[str, Any], now: datetime) -> Row:
    cells = [
        name_of(pdb),
        _int_or_string(get_path(pdb, "spec", "minAvailable")),
        _int_or_string(get_path(pdb, "spec", "maxUnavailable")),
        int_at(pdb, "status", "disruptionsAllowed"),
        age(pdb, now),
    ]
    return cells, None


DEPLOYMENT_TABLE: Final = TablePrinter(_DEPLOYMENT_COLUMNS, _print_deployment)
REPLICA_SET_TABLE: Final = TablePrinter(_REPLICA_SET_COLUMNS, _print_replica_set)
JOB_TABLE: Final = TablePrinter(_JOB_COLUMNS, _print_job)
PDB_TABLE: Final = TablePrinter(_PDB_COLUMNS, _print_pdb)
