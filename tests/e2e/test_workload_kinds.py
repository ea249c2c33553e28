"""StatefulSets, DaemonSets, ControllerRevisions and CronJobs served to a real kubectl by a
real `inplace up`: applied and stored, printed with upstream's columns, explained from the
OpenAPI documents, scaled, restarted, and refused with the field named.

The objects need not converge here (their controllers have tests of their own): every pod
template selects a node label no node has, and the CronJob is suspended.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.conftest import Cluster

pytestmark = pytest.mark.e2e

NAMESPACE = "kinds"
NOWHERE = {"inplace.dev/e2e": "api-only"}


def pod_template(app: str, restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeSelector": NOWHERE,
        "containers": [{"name": app, "image": "busybox", "command": ["sleep", "3600"]}],
    }
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "db", "namespace": NAMESPACE},
    "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]},
}
STATEFUL_SET = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db", "namespace": NAMESPACE},
    "spec": {
        "serviceName": "db",
        "replicas": 1,
        "selector": {"matchLabels": {"app": "db"}},
        "template": pod_template("db"),
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "64Mi"}},
                },
            }
        ],
    },
}
DAEMON_SET = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "agent", "namespace": NAMESPACE},
    "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": pod_template("agent")},
}
CRON_JOB = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "report", "namespace": NAMESPACE},
    "spec": {
        "schedule": "*/10 * * * *",
        "timeZone": "Europe/Paris",
        "suspend": True,
        "jobTemplate": {"spec": {"template": pod_template("report", restart="OnFailure")}},
    },
}
REVISION = {
    "apiVersion": "apps/v1",
    "kind": "ControllerRevision",
    "metadata": {"name": "db-manual", "namespace": NAMESPACE},
    "revision": 1,
    "data": {"spec": {"template": {"$patch": "replace", **pod_template("db")}}},
}


@pytest.fixture(scope="module")
def kinds(cluster: Cluster) -> Iterator[Cluster]:
    """The four kinds (and the StatefulSet's headless Service), applied once with kubectl."""
    cluster.kubectl("create", "namespace", NAMESPACE)
    try:
        manifest = "\n---\n".join(
            yaml.safe_dump(o) for o in (SERVICE, STATEFUL_SET, DAEMON_SET, CRON_JOB, REVISION)
        )
        applied = cluster.kubectl("apply", "-f", "-", input=manifest).stdout
        for line in (
            "service/db created",
            "statefulset.apps/db created",
            "daemonset.apps/agent created",
            "cronjob.batch/report created",
            "controllerrevision.apps/db-manual created",
        ):
            assert line in applied, applied
        yield cluster
    finally:
        cluster.kubectl(
            "delete",
            "namespace",
            NAMESPACE,
            "--wait=true",
            "--timeout=60s",
            check=False,
            timeout=90,
        )


def get(cluster: Cluster, resource: str) -> dict[str, Any]:
    out = cluster.kubectl("get", resource, "-n", NAMESPACE, "-o", "json").stdout
    result: dict[str, Any] = json.loads(out)
    return result


def header(output: str) -> str:
    return " ".join(output.splitlines()[0].split())


def test_applied_objects_are_stored_with_upstreams_defaults(kinds: Cluster) -> None:
    sts = get(kinds, "statefulset/db")
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0},
    }
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    ds = get(kinds, "daemonset/agent")
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "1"
    assert ds["spec"]["updateStrategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    cj = get(kinds, "cronjob/report")
    assert (cj["spec"]["concurrencyPolicy"], cj["spec"]["successfulJobsHistoryLimit"]) == (
        "Allow",
        3,
    )
    revision = get(kinds, "controllerrevision/db-manual")
    assert revision["revision"] == 1


def test_get_prints_upstreams_columns(kinds: Cluster) -> None:
    expected = {
        "statefulsets": "NAME READY AGE",
        "daemonsets": "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE",
        "cronjobs": "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE",
        "controllerrevisions": "NAME CONTROLLER REVISION AGE",
    }
    for resource, columns in expected.items():
        out = kinds.kubectl("get", resource, "-n", NAMESPACE).stdout
        assert header(out) == columns, (resource, out)
    wide = kinds.kubectl("get", "sts", "-n", NAMESPACE, "-o", "wide").stdout
    assert header(wide) == "NAME READY AGE CONTAINERS IMAGES"
    assert wide.splitlines()[1].split()[-2:] == ["db", "busybox"]
    daemons = kinds.kubectl("get", "ds", "agent", "-n", NAMESPACE, "-o", "wide").stdout
    assert header(daemons).endswith("AGE CONTAINERS IMAGES SELECTOR")
    assert "inplace.dev/e2e=api-only" in daemons and "app=agent" in daemons
    crons = kinds.kubectl("get", "cj", "-n", NAMESPACE).stdout.splitlines()[1].split()
    assert crons[:7] == ["report", "*/10", "*", "*", "*", "*", "Europe/Paris"]
    assert crons[7:10] == ["True", "0", "<none>"]
    # The short names and the `all` category, as upstream's discovery lists them.
    every = kinds.kubectl("get", "sts,ds,cj,controllerrevisions", "-n", NAMESPACE).stdout
    for name in ("statefulset.apps/db", "daemonset.apps/agent", "cronjob.batch/report"):
        assert name in every, every
    assert "controllerrevision.apps/db-manual" in every
    listed = kinds.kubectl("get", "all", "-n", NAMESPACE, "-o", "name").stdout.split()
    assert {"statefulset.apps/db", "daemonset.apps/agent", "cronjob.batch/report"} <= set(listed)


def test_explain_reads_the_schema(kinds: Cluster) -> None:
    partition = kinds.kubectl(
        "explain", "statefulset.spec.updateStrategy.rollingUpdate.partition"
    ).stdout
    assert "KIND:       StatefulSet" in partition and "FIELD: partition <integer>" in partition
    schedule = kinds.kubectl("explain", "cronjob.spec.schedule").stdout
    assert "KIND:       CronJob" in schedule and "FIELD: schedule <string>" in schedule
    strategy = kinds.kubectl("explain", "daemonset.spec.updateStrategy").stdout
    assert "rollingUpdate" in strategy


def test_scale_and_restart_a_stateful_set(kinds: Cluster) -> None:
    scaled = kinds.kubectl("scale", "sts/db", "--replicas=2", "-n", NAMESPACE).stdout
    assert "statefulset.apps/db scaled" in scaled
    sts = get(kinds, "statefulset/db")
    assert sts["spec"]["replicas"] == 2
    generation = sts["metadata"]["generation"]
    kinds.kubectl("rollout", "restart", "sts/db", "-n", NAMESPACE)
    restarted = get(kinds, "statefulset/db")
    annotations = restarted["spec"]["template"]["metadata"]["annotations"]
    assert "kubectl.kubernetes.io/restartedAt" in annotations
    assert restarted["metadata"]["generation"] == generation + 1
    kinds.kubectl("rollout", "restart", "ds/agent", "-n", NAMESPACE)
    ds = get(kinds, "daemonset/agent")
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"


def test_invalid_objects_are_refused_naming_the_field(kinds: Cluster) -> None:
    bad_schedule = {
        **CRON_JOB,
        "metadata": {"name": "never", "namespace": NAMESPACE},
        "spec": {**CRON_JOB["spec"], "schedule": "not a schedule"},
    }
    refused = kinds.kubectl("apply", "-f", "-", input=json.dumps(bad_schedule), check=False)
    assert refused.returncode != 0
    assert (
        'spec.schedule: Invalid value: "not a schedule": expected exactly 5 fields, found 3'
        in refused.stderr
    ), refused.stderr
    mismatched = {
        **STATEFUL_SET,
        "metadata": {"name": "stray", "namespace": NAMESPACE},
        "spec": {**STATEFUL_SET["spec"], "selector": {"matchLabels": {"app": "other"}}},
    }
    refused = kinds.kubectl("apply", "-f", "-", input=json.dumps(mismatched), check=False)
    assert refused.returncode != 0
    assert "spec.template.metadata.labels: Invalid value" in refused.stderr, refused.stderr
    assert "`selector` does not match template `labels`" in refused.stderr
    renamed = kinds.kubectl(
        "patch",
        "sts",
        "db",
        "-n",
        NAMESPACE,
        "--type=merge",
        "-p",
        '{"spec":{"serviceName":"x"}}',
        check=False,
    )
    assert renamed.returncode != 0
    assert "spec: Forbidden: updates to statefulset spec for fields other than" in renamed.stderr


def test_kubectls_typed_creates(kinds: Cluster) -> None:
    """``kubectl create cronjob`` sends protobuf; ``kubectl create job --from=cronjob/...``
    reads the CronJob and makes a Job of its template, owned by it."""
    kinds.kubectl(
        "create",
        "cronjob",
        "never",
        "-n",
        NAMESPACE,
        "--image=busybox",
        "--schedule=0 0 30 2 *",
        "--",
        "true",
    )
    never = get(kinds, "cronjob/never")
    assert never["spec"]["schedule"] == "0 0 30 2 *"  # February 30th: it never runs
    assert never["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    kinds.kubectl("create", "job", "report-now", "--from=cronjob/report", "-n", NAMESPACE)
    job = get(kinds, "job/report-now")
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "report", True)
    kinds.kubectl("delete", "job", "report-now", "-n", NAMESPACE)
