"""``inplace operator --rescue`` under the real control plane, without metrics-server: a pod
the real kube-scheduler marks Unschedulable for lack of memory gets room on its node by the
rescuer shrinking a shrinkable donor in place (same UID and PID, no restart, the new size in
its cgroups), and the real kube-scheduler then places it, and it runs; once it is gone the
donor grows back to its size, in place.

Usage comes from the node agents' Summary API through kube-apiserver's node proxy, so the
pods run on ``node-3``, the agent on a non-loopback address (:mod:`.operator_bed`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import psutil
import pytest

from inplace.api.quantity import Quantity
from tests.e2e.test_rescue import applied, pod_manifest, requests
from tests.poll import wait_until

from .conftest import Bed, cgroup_file, pid_of, status_of, wait_running
from .operator_bed import NAMESPACE, NODE, Operator, joined_node

MI = 1024 * 1024


@pytest.fixture(scope="module")
def node_3(bed: Bed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with joined_node(bed, tmp_path_factory.mktemp("node-3"), ("pod",)):
        yield


@pytest.fixture(scope="module")
def operator(bed: Bed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    bed.kubectl("create", "namespace", NAMESPACE)
    op = Operator(bed, tmp_path_factory.mktemp("operator-rescue"), "rescue-operator", "--rescue")
    try:
        yield op
    finally:
        op.stop()
        bed.kubectl("delete", "mutatingwebhookconfiguration", "inplace-operator", check=False)


def on_node_3(name: str, cpu: str, memory: str, *, shrinkable: bool = False) -> str:
    manifest = pod_manifest(name, cpu, memory, shrinkable=shrinkable)
    manifest["spec"]["nodeSelector"] = {"kubernetes.io/hostname": NODE}
    return json.dumps(manifest)


def events(bed: Bed, name: str, component: str) -> list[tuple[str, str]]:
    return [
        (e["reason"], e.get("message") or "")
        for e in bed.events_of(name)
        if component in ((e.get("source") or {}).get("component"), e.get("reportingComponent"))
    ]


@pytest.mark.usefixtures("node_3")
def test_a_pod_unschedulable_for_memory_gets_room_from_a_donor_shrunk_in_place(
    bed: Bed, operator: Operator
) -> None:
    served = bed.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/pods", check=False)
    assert served.returncode != 0, "the bed is meant to have no metrics-server"
    bed.apply(on_node_3("donor", "100m", "1536Mi", shrinkable=True))
    donor = wait_running(bed, "donor")
    uid, pid = donor["metadata"]["uid"], pid_of(donor, "main")
    started = psutil.Process(pid).create_time()
    node = bed.get("node", NODE, namespace="")
    free = Quantity.parse(node["status"]["allocatable"]["memory"]).value() - 1536 * MI
    assert free < 1024 * MI  # the pending pod cannot fit beside the donor as it is

    bed.apply(on_node_3("pending", "100m", "1Gi"))
    placed = wait_running(bed, "pending", timeout=120)
    assert placed["spec"]["nodeName"] == NODE
    scheduler = events(bed, "pending", "default-scheduler")
    assert any(
        reason == "FailedScheduling" and "Insufficient memory" in message
        for reason, message in scheduler
    ), scheduler
    assert any(reason == "Scheduled" for reason, _ in scheduler), scheduler
    assert ("MadeRoom", f"made room on {NODE} by shrinking donor") in events(
        bed, "pending", "rescue-controller"
    )

    donor = wait_until(
        lambda: (p := bed.get("pod", "donor")) and applied(p) == requests(p) and p,
        timeout=30,
        what="the donor's shrink applied",
    )
    cpu, memory = requests(donor)
    assert memory <= free + 1536 * MI - 1024 * MI  # shrunk enough for the pending pod
    assert donor["metadata"]["uid"] == uid
    assert pid_of(donor, "main") == pid and psutil.Process(pid).create_time() == started
    assert status_of(donor, "main")["restartCount"] == 0
    assert cgroup_file(pid, "cpu", "cpu.shares") == str(cpu * 1024 // 1000)
    original = json.loads(donor["metadata"]["annotations"]["inplace.dev/original-resources"])
    assert original == {"main": {"requests": {"cpu": "100m", "memory": "1536Mi"}}}
    assert any(
        reason == "ShrunkForPendingPod" and "shrunk to fit pending pod default/pending" in message
        for reason, message in events(bed, "donor", "rescue-controller")
    )
    assert "Summary API" in operator.log.read_text()  # usage came through the node proxy

    # Pressure gone: the donor grows back to its size, in place, and its annotation goes.
    bed.kubectl("delete", "pod", "pending", "--grace-period=1", "--wait=true")
    donor = wait_until(
        lambda: (
            (p := bed.get("pod", "donor"))
            and requests(p) == (100, 1536 * MI)
            and applied(p) == (100, 1536 * MI)
            and "inplace.dev/original-resources" not in p["metadata"]["annotations"]
            and p
        ),
        timeout=60,
        what="the donor grown back and its annotation gone",
    )
    assert pid_of(donor, "main") == pid and psutil.Process(pid).create_time() == started
    assert status_of(donor, "main")["restartCount"] == 0
