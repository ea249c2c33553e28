"""Deployments, ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions, Jobs, CronJobs and
PodDisruptionBudgets (upstream's ``pkg/printers/internalversion``)."""

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
    format_labels,
    format_selector,
    get_path,
    human_duration,
    int_at,
    list_at,
    name_of,
    parse_time,
    selector_column,
    since,
    text_at,
)

_WORKLOAD_SELECTOR_DOC: Final = (
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the "
    "ones affected by this deployment."
)

#: A JobSpec's ``selector`` (a Job's, and a CronJob's job template's).
_JOB_SELECTOR_DOC: Final = (
    "A label query over pods that should match the pod count. Normally, the system sets this "
    "field for you. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
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
    selector_column(_JOB_SELECTOR_DOC),
)


_STATEFUL_SET_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Ready", "string", "Number of the pod with ready state"),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
)


_DAEMON_SET_COLUMNS: Final = (
    NAME_COLUMN,
    Column(
        "Desired",
        "integer",
        "The total number of nodes that should be running the daemon pod (including nodes "
        "correctly running the daemon pod). More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
    ),
    Column(
        "Current",
        "integer",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run "
        "the daemon pod. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
    ),
    Column(
        "Ready",
        "integer",
        "numberReady is the number of nodes that should be running the daemon pod and have one "
        "or more of the daemon pod running with a Ready Condition.",
    ),
    Column(
        "Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"
    ),
    Column(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the "
        "daemon pod running and available (ready for at least spec.minReadySeconds)",
    ),
    Column(
        "Node Selector",
        "string",
        "NodeSelector is a selector which must be true for the pod to fit on a node. Selector "
        "which must match a node's labels for the pod to be scheduled on that node. More info: "
        "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
    ),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    selector_column(
        "A label query over pods that are managed by the daemon set. Must match in order to be "
        "controlled. It must match the pod template's labels. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
        "#label-selectors"
    ),
)


_CONTROLLER_REVISION_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Controller", "string", "Controller of the object"),
    Column(
        "Revision", "string", "Revision indicates the revision of the state represented by Data."
    ),
    AGE_COLUMN,
)


_CRON_JOB_COLUMNS: Final = (
    NAME_COLUMN,
    Column(
        "Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."
    ),
    Column(
        "Timezone",
        "string",
        "The time zone name for the given schedule, see "
        "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this "
        "will default to the time zone of the kube-controller-manager process. The set of valid "
        "time zone names and the time zone offset is loaded from the system-wide time zone "
        "database by the API server during CronJob validation and the controller manager during "
        "execution. If no system-wide time zone database can be found a bundled version of the "
        "database is used instead. If the time zone name becomes invalid during the lifetime of "
        "a CronJob or due to a change in host configuration, the controller will stop creating "
        "new new Jobs and will create a system event with the reason UnknownTimeZone. More "
        "information can be found in "
        "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
    ),
    Column(
        "Suspend",
        "boolean",
        "This flag tells the controller to suspend subsequent executions, it does not apply to "
        "already started executions.  Defaults to false.",
    ),
    Column("Active", "integer", "A list of pointers to currently running jobs."),
    Column(
        "Last Schedule",
        "string",
        "Information when was the last time the job was successfully scheduled.",
    ),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    selector_column(_JOB_SELECTOR_DOC),
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


def _print_stateful_set(sts: Mapping[str, Any], now: datetime) -> Row:
    cells: list[Any] = [
        name_of(sts),
        f"{int_at(sts, 'status', 'readyReplicas')}/{int_at(sts, 'spec', 'replicas')}",
        age(sts, now),
        *containers_cells(get_path(sts, "spec", "template", "spec")),
    ]
    return cells, None


def _print_daemon_set(ds: Mapping[str, Any], now: datetime) -> Row:
    cells: list[Any] = [
        name_of(ds),
        int_at(ds, "status", "desiredNumberScheduled"),
        int_at(ds, "status", "currentNumberScheduled"),
        int_at(ds, "status", "numberReady"),
        int_at(ds, "status", "updatedNumberScheduled"),
        int_at(ds, "status", "numberAvailable"),
        format_labels(get_path(ds, "spec", "template", "spec", "nodeSelector")),
        age(ds, now),
        *containers_cells(get_path(ds, "spec", "template", "spec")),
        format_selector(get_path(ds, "spec", "selector"), empty="<none>", invalid="<error>"),
    ]
    return cells, None


def _controller_name(obj: Mapping[str, Any]) -> str:
    """Upstream ``formatResourceName`` of the controller reference: ``kind.group/name`` in
    lower case (``statefulset.apps/web``), ``<none>`` without one."""
    for ref in list_at(obj, "metadata", "ownerReferences"):
        if ref.get("controller") is True:
            api_version = ref.get("apiVersion")
            group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
            kind = ref.get("kind") if isinstance(ref.get("kind"), str) else ""
            name = ref.get("name") if isinstance(ref.get("name"), str) else ""
            group_kind = f"{kind}.{group}" if group else str(kind)
            return f"{group_kind.lower()}/{name}" if group_kind else str(name)
    return "<none>"


def _print_controller_revision(revision: Mapping[str, Any], now: datetime) -> Row:
    cells: list[Any] = [
        name_of(revision),
        _controller_name(revision),
        int_at(revision, "revision"),
        age(revision, now),
    ]
    return cells, None


def _bool_pointer(value: Any) -> str:
    """Upstream ``printBoolPtr``."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def _print_cron_job(cj: Mapping[str, Any], now: datetime) -> Row:
    last = get_path(cj, "status", "lastScheduleTime")
    time_zone = get_path(cj, "spec", "timeZone")
    job_spec = get_path(cj, "spec", "jobTemplate", "spec")
    active = get_path(cj, "status", "active")
    cells: list[Any] = [
        name_of(cj),
        text_at(cj, "spec", "schedule"),
        time_zone if isinstance(time_zone, str) else "<none>",
        _bool_pointer(get_path(cj, "spec", "suspend")),
        len(active) if isinstance(active, list) else 0,
        since(last, now) if last is not None else "<none>",
        age(cj, now),
        *containers_cells(get_path(job_spec, "template", "spec")),
        format_selector(get_path(job_spec, "selector"), empty="<none>", invalid="<error>"),
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
STATEFUL_SET_TABLE: Final = TablePrinter(_STATEFUL_SET_COLUMNS, _print_stateful_set)
DAEMON_SET_TABLE: Final = TablePrinter(_DAEMON_SET_COLUMNS, _print_daemon_set)
CONTROLLER_REVISION_TABLE: Final = TablePrinter(
    _CONTROLLER_REVISION_COLUMNS, _print_controller_revision
)
CRON_JOB_TABLE: Final = TablePrinter(_CRON_JOB_COLUMNS, _print_cron_job)
PDB_TABLE: Final = TablePrinter(_PDB_COLUMNS, _print_pdb)
