"""CronJobs end to end: a real `inplace up`, real kubectl, real processes.

One cluster for the module and about one real minute of waiting in all (a schedule of
``*/1 * * * *`` first fires at the next whole minute):

* ``kubectl create job manual-1 --from=cronjob/tick``: kubectl reads the CronJob and makes a
  Job it owns, with ``cronjob.kubernetes.io/instantiate: manual``; its pod runs and the Job
  completes;
* at the next minute the controller creates ``tick-<minutes since the epoch>``, whose pod
  runs a real command and completes; ``kubectl get cj`` shows LAST SCHEDULE,
  ``status.lastSuccessfulTime`` is set;
* ``successfulJobsHistoryLimit: 1``: the older of the two finished Jobs (the manual one) is
  deleted, its pod with it;
* a suspended CronJob, created at the start, has made nothing by then;
* deleting the CronJob deletes its Jobs and their pods.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from inplace.api.timestamps import parse_rfc3339
from inplace.cli.paths import DataDir
from inplace.cli.up import cgroup_root_of, remove_empty_cgroup_root
from tests.conftest import Cluster, reap_cgroups, start_cluster
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCHEDULED = "batch.kubernetes.io/cronjob-scheduled-timestamp"


def cronjob(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/1 * * * *",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 0,
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox",
                                    "command": ["sh", "-c", f"echo {name} ran; exit 0"],
                                }
                            ],
                        },
                    },
                }
            },
            **spec,
        },
    }


class CronJobs:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def kubectl(self, *args: str, **kw: Any) -> str:
        return self.cluster.kubectl(*args, **kw).stdout

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        result = self.cluster.kubectl("get", kind, name, "-o", "json", check=False)
        if result.returncode != 0:
            return None
        obj: dict[str, Any] = json.loads(result.stdout)
        return obj

    def jobs_of(self, owner: str) -> list[dict[str, Any]]:
        items = json.loads(self.kubectl("get", "jobs", "-o", "json"))["items"]
        return [
            j
            for j in items
            if any(r["name"] == owner for r in j["metadata"].get("ownerReferences") or ())
        ]

    def pods(self, selector: str) -> list[dict[str, Any]]:
        return list(json.loads(self.kubectl("get", "pods", "-l", selector, "-o", "json"))["items"])

    def events(self, name: str, reason: str) -> list[str]:
        items = json.loads(self.kubectl("get", "events", "-o", "json"))["items"]
        return [
            e["message"]
            for e in items
            if e["involvedObject"].get("name") == name and e["reason"] == reason
        ]


def complete(job: dict[str, Any] | None) -> bool:
    return any(
        c["type"] == "Complete" and c["status"] == "True"
        for c in ((job or {}).get("status") or {}).get("conditions") or ()
    )


@pytest.fixture(scope="module")
def cj(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CronJobs]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("cronjobs") / "data"
    cluster: Cluster = start_cluster(data_dir, None)
    try:

        def node_ready() -> bool:
            out = cluster.kubectl("get", "nodes", "--no-headers", check=False).stdout
            return " Ready " in out

        wait_until(node_ready, timeout=120, what="a node Ready")
        jobs = CronJobs(cluster)
        jobs.kubectl("apply", "-f", "-", input=json.dumps(cronjob("tick")))
        jobs.kubectl("apply", "-f", "-", input=json.dumps(cronjob("paused", suspend=True)))
        yield jobs
    finally:
        cluster.kubectl("delete", "cronjobs", "--all", "--wait=false", check=False, timeout=60)
        cluster.stop()
        reap_cgroups(data_dir)
        remove_empty_cgroup_root(cgroup_root_of(DataDir(data_dir)))


def test_create_job_from_cronjob(cj: CronJobs) -> None:
    owner = cj.get("cronjob", "tick")
    assert owner is not None
    out = cj.kubectl("create", "job", "manual-1", "--from=cronjob/tick")
    assert "job.batch/manual-1 created" in out
    job = cj.get("job", "manual-1")
    assert job is not None
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    [ref] = job["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"]) == ("CronJob", "tick", owner["metadata"]["uid"])
    assert ref["controller"] is True
    wait_until(lambda: complete(cj.get("job", "manual-1")), timeout=120, what="manual-1 complete")
    assert "tick ran" in cj.kubectl("logs", "job/manual-1")
    # Upstream's controller did not make it, and says so.
    wait_until(
        lambda: cj.events("tick", "UnexpectedJob"),
        timeout=30,
        what="UnexpectedJob event",
    )


def test_a_job_at_the_next_minute_runs_and_completes(cj: CronJobs) -> None:
    def scheduled_and_done() -> dict[str, Any] | None:
        done = [j for j in cj.jobs_of("tick") if j["metadata"]["name"] != "manual-1"]
        return done[0] if done and complete(done[0]) else None

    job = wait_until(scheduled_and_done, timeout=150, what="a scheduled job of tick complete")
    name = job["metadata"]["name"]
    scheduled = parse_rfc3339(job["metadata"]["annotations"][SCHEDULED])
    assert scheduled.second == 0
    assert name == f"tick-{int(scheduled.timestamp()) // 60}"
    assert "tick ran" in cj.kubectl("logs", f"job/{name}")

    def status() -> dict[str, Any] | None:
        found = ((cj.get("cronjob", "tick") or {}).get("status")) or {}
        return found if found.get("lastSuccessfulTime") and found.get("lastScheduleTime") else None

    found = wait_until(status, timeout=30, what="tick's status")
    assert parse_rfc3339(found["lastScheduleTime"]) == scheduled
    assert parse_rfc3339(found["lastSuccessfulTime"]) >= scheduled
    table = cj.kubectl("get", "cj", "tick")
    header, row = table.splitlines()[:2]
    assert "LAST SCHEDULE" in header
    column = header.index("LAST SCHEDULE")
    assert not row[column:].startswith("<none>")
    assert cj.events("tick", "SuccessfulCreate") == [f"Created job {name}"]


def test_the_history_limit_deletes_the_older_job_and_its_pod(cj: CronJobs) -> None:
    wait_until(lambda: cj.get("job", "manual-1") is None, timeout=60, what="manual-1 deleted")
    assert "Deleted job manual-1" in cj.events("tick", "SuccessfulDelete")
    wait_until(
        lambda: not cj.pods("batch.kubernetes.io/job-name=manual-1"),
        timeout=60,
        what="manual-1's pod gone",
    )
    assert [j["metadata"]["name"] for j in cj.jobs_of("tick") if complete(j)] != []


def test_a_suspended_cronjob_made_nothing(cj: CronJobs) -> None:
    """Created with tick, before the minute boundary tick's Job was made at."""
    assert cj.jobs_of("paused") == []
    paused = cj.get("cronjob", "paused") or {}
    assert "lastScheduleTime" not in (paused.get("status") or {})


def test_deleting_the_cronjob_deletes_its_jobs_and_their_pods(cj: CronJobs) -> None:
    assert cj.jobs_of("tick")
    cj.kubectl("delete", "cronjob", "tick", "--wait=true", timeout=90)
    wait_until(lambda: not cj.jobs_of("tick"), timeout=90, what="tick's jobs deleted")
    wait_until(lambda: not cj.pods("app=tick"), timeout=90, what="tick's pods deleted")
