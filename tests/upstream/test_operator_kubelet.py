"""The operator as a user runs it: its image, installed by its chart with only the image's
repository and tag set, on real nodes (the kubelet, containerd and runc of
``scripts/upstream up --kubelet-nodes``), the webhook reached through its Service. On them, a
resources-only change of a Deployment, StatefulSet, DaemonSet or running Job resizes the same
pods in place (same UIDs, container IDs and PIDs, restartCount 0, the new values in the
container's cgroup, written by runc); an image change and ``kubectl rollout restart`` still
roll out; and the ways a change is delivered work unchanged: ``kubectl apply`` then
``kubectl rollout status``, server-side apply by another field manager, a clean
``kubectl diff``, ``helm upgrade --wait`` of an application's chart and ``helm rollback``."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inplace.api.quantity import Quantity
from inplace.controllers.workloadresize.model import allows_memory_limit_decrease
from inplace.registry.schema import CRD_FILES
from testbed.build import RELEASES, build
from testbed.images import WORKLOAD_IMAGE
from tests.e2e.test_rescue import pod_manifest, requests
from tests.poll import wait_until

from .conftest import Bed, down, pid_of, start_bed, status_of, wait_running
from .test_operator import (
    BIG,
    BIG_ARGS,
    all_running,
    assert_in_place,
    pods_of,
    released,
    replica_sets,
    resized,
    workload,
)
from .test_operator_vpa import crd_manifest, vpa

CHART_DIR = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "inplace"

NAMESPACE = "inplace-system"
SMALL = {
    "requests": {"cpu": "50m", "memory": "32Mi"},
    "limits": {"cpu": "100m", "memory": "64Mi"},
}


@pytest.fixture(scope="module", params=["", *RELEASES], ids=lambda r: r or "pinned")
def bed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    """Two kubelet nodes, and the operator installed from its image by its chart; on the
    pinned release, the newest the module proxy serves and the oldest the operator claims."""
    directory = tmp_path_factory.mktemp("upstream")
    plane = start_bed(
        directory,
        nodes=0,
        kubelet_nodes=2,
        node_cpu="2",
        node_memory="2Gi",
        operator=True,
        release=request.param,
    )
    try:
        yield Bed(plane)
    finally:
        leftovers = down(directory)
    assert not leftovers, f"the test bed left behind: {leftovers}"


def helm(bed: Bed, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [str(build(log=False).path("helm")), "--kubeconfig", str(bed.plane.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and out.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed: {out.stderr}")
    return out


def lowers_memory_limits_in_place(bed: Bed) -> bool:
    """Whether the bed's API server lets a memory limit be lowered in place (1.34 on); on
    1.33 the operator lets such a change roll out."""
    version = json.loads(bed.kubectl("version", "-o", "json").stdout)["serverVersion"]
    return allows_memory_limit_decrease(version)


def uids(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["uid"] for p in pods]


def operator_pods(bed: Bed) -> list[dict[str, Any]]:
    out = bed.kubectl(
        "get", "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=operator", "-o", "json"
    )
    return list(json.loads(out.stdout)["items"])


def test_the_operator_runs_from_its_image_with_one_leader_and_its_webhook_service(
    bed: Bed,
) -> None:
    pods = operator_pods(bed)
    assert len(pods) == 2
    image = bed.plane.operator["image"]
    for pod in pods:
        assert pod["spec"]["nodeName"].startswith("kubelet-")
        main = pod["status"]["containerStatuses"][0]
        assert main["ready"] and "running" in main["state"]
        assert main["containerID"].startswith("containerd://")
        assert main["image"] == f"docker.io/library/{image}"
        # the chart's non-root user, on a read-only root
        assert main["user"]["linux"]["uid"] == 65532
        assert pod["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"]
    names = {pod["metadata"]["name"] for pod in pods}
    lease = bed.get("lease", "inplace", NAMESPACE)
    assert lease["spec"]["holderIdentity"] in names
    webhooks = json.loads(
        bed.kubectl("get", "mutatingwebhookconfiguration", "inplace", "-o", "json").stdout
    )["webhooks"]
    for webhook in webhooks:
        assert "url" not in webhook["clientConfig"]
        assert webhook["clientConfig"]["service"]["name"] == "inplace-webhook"
        assert webhook["clientConfig"].get("caBundle")
    slices = json.loads(
        bed.kubectl(
            "get", "endpointslices", "-n", NAMESPACE,
            "-l", "kubernetes.io/service-name=inplace-webhook", "-o", "json",
        ).stdout
    )["items"]  # fmt: skip
    addresses = {a for s in slices for e in s["endpoints"] for a in e["addresses"]}
    assert addresses == {pod["status"]["podIP"] for pod in pods}


def test_workloads_resized_in_place_by_the_kubelet_and_other_changes_roll_out(
    bed: Bed,
) -> None:
    bed.apply(
        workload("Deployment", "web", "  replicas: 3")
        + "---\n"
        + workload("StatefulSet", "db", "  replicas: 2\n  serviceName: db")
        + "---\n"
        + workload("DaemonSet", "agent")
        + "---\n"
        + workload(
            "Job",
            "crunch",
            "  parallelism: 2\n  completions: 2\n  manualSelector: true",
            api="batch/v1",
            pod_spec="      restartPolicy: Never\n",
        )
    )
    before = {
        app: wait_until(lambda app=app, n=n: all_running(bed, app, n), timeout=120, what=app)
        for app, n in (("web", 3), ("db", 2), ("agent", 2), ("crunch", 2))
    }
    sets = replica_sets(bed, "web")
    for kind, name in (("deployment", "web"), ("statefulset", "db"), ("daemonset", "agent")):
        bed.kubectl("set", "resources", f"{kind}/{name}", *BIG_ARGS)
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/resources", "value": BIG}]
    bed.kubectl("patch", "job", "crunch", "--type=json", "-p", json.dumps(patch))
    for app, pods in before.items():
        after = wait_until(
            lambda app=app, n=len(pods): resized(bed, app, n), timeout=120, what=f"{app} resized"
        )
        assert_in_place(pods, after)
        for old, new in zip(pods, after, strict=True):
            assert status_of(new, "main")["containerID"] == status_of(old, "main")["containerID"]
    assert replica_sets(bed, "web") == sets
    for kind, name in (("deployment", "web"), ("statefulset", "db"), ("daemonset", "agent")):
        wait_until(lambda k=kind, n=name: released(bed, k, n), timeout=60, what=f"{name} released")

    # anything else rolls out, on a real node as anywhere
    bed.kubectl("rollout", "restart", "deployment/web")
    wait_until(lambda: len(replica_sets(bed, "web")) == 2, timeout=60, what="a restart rollout")
    out = bed.kubectl("rollout", "status", "deployment/web", "--timeout=120s")
    assert "successfully rolled out" in out.stdout
    uids = {p["metadata"]["uid"] for p in before["web"]}
    assert not uids & {p["metadata"]["uid"] for p in pods_of(bed, "web")}
    bed.kubectl("set", "image", "statefulset/db", f"main={WORKLOAD_IMAGE}-renamed")
    wait_until(
        lambda: (
            bed.get("statefulset", "db")["status"].get("updateRevision")
            != bed.get("statefulset", "db")["status"].get("currentRevision")
        ),
        timeout=60,
        what="an image change starts a StatefulSet rollout",
    )
    for kind, name in (
        ("deployment", "web"),
        ("statefulset", "db"),
        ("daemonset", "agent"),
        ("job", "crunch"),
    ):
        bed.kubectl("delete", kind, name, "--wait=false")


MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: shop}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: shop}}}}
  template:
    metadata: {{labels: {{app: shop}}}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: {image}
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "exec sleep 3600"]
        resources:
          requests: {{cpu: {cpu}, memory: {memory}}}
          limits: {{cpu: {cpu_limit}, memory: {memory_limit}}}
"""


def shop(cpu: str, memory: str, cpu_limit: str, memory_limit: str) -> str:
    return MANIFEST.format(
        image=WORKLOAD_IMAGE, cpu=cpu, memory=memory, cpu_limit=cpu_limit, memory_limit=memory_limit
    )


def at(bed: Bed, app: str, count: int, resources: dict[str, Any]) -> list[dict[str, Any]] | None:
    pods = all_running(bed, app, count)
    if pods is None:
        return None
    for pod in pods:
        if status_of(pod, "main").get("resources") != resources:
            return None
    return pods


def test_apply_rollout_status_server_side_apply_and_diff(bed: Bed, tmp_path: Path) -> None:
    manifest = tmp_path / "shop.yaml"
    manifest.write_text(shop("50m", "32Mi", "100m", "64Mi"))
    bed.kubectl("apply", "-f", str(manifest))
    before = wait_until(lambda: at(bed, "shop", 2, SMALL), timeout=120, what="shop running")

    # the manifest edited in Git, applied by a pipeline that then waits for the rollout
    manifest.write_text(shop("100m", "64Mi", "200m", "128Mi"))
    bed.kubectl("apply", "-f", str(manifest))
    out = bed.kubectl("rollout", "status", "deployment/shop", "--timeout=120s", check=False)
    assert out.returncode == 0, out.stderr
    assert_in_place(before, wait_until(lambda: at(bed, "shop", 2, BIG), timeout=120, what="big"))
    wait_until(lambda: released(bed, "deployment", "shop"), timeout=60, what="released")
    diff = bed.kubectl("diff", "-f", str(manifest), check=False)
    assert diff.returncode == 0, diff.stdout

    # another field manager's server-side apply of the resources alone
    partial = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "shop"},
        "spec": {
            "selector": {"matchLabels": {"app": "shop"}},
            "template": {
                "metadata": {"labels": {"app": "shop"}},
                "spec": {"containers": [{"name": "main", "resources": SMALL}]},
            },
        },
    }
    bed.kubectl(
        "apply", "--server-side", "--field-manager=autoscaler", "--force-conflicts", "-f", "-",
        input=json.dumps(partial),
    )  # fmt: skip
    after = wait_until(lambda: at(bed, "shop", 2, SMALL), timeout=120, what="small again")
    if lowers_memory_limits_in_place(bed):
        assert uids(after) == uids(before)
        assert all(status_of(p, "main")["restartCount"] == 0 for p in after)
    else:  # 1.33: a memory limit cannot be lowered in place, so the change rolled out
        assert not set(uids(after)) & set(uids(before))
    out = bed.kubectl("rollout", "status", "deployment/shop", "--timeout=120s", check=False)
    assert out.returncode == 0, out.stderr
    bed.kubectl("delete", "deployment", "shop", "--wait=false")


CHART = {
    "Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
    "values.yaml": "memory: 32Mi\n",
    "templates/deployment.yaml": MANIFEST.format(
        image=WORKLOAD_IMAGE,
        cpu="50m",
        memory="{{ .Values.memory }}",
        cpu_limit="100m",
        memory_limit="{{ .Values.memory }}",
    )
    .replace("{name: shop}", "{name: cart}")
    .replace("app: shop", "app: cart"),
}


def test_helm_upgrade_of_resources_waits_for_pods_resized_in_place_and_rolls_back(
    bed: Bed, tmp_path: Path
) -> None:
    chart = tmp_path / "cart"
    for name, text in CHART.items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text(text)
    small, big = (
        {"requests": {"cpu": "50m", "memory": m}, "limits": {"cpu": "100m", "memory": m}}
        for m in ("32Mi", "96Mi")
    )
    helm(bed, "install", "cart", str(chart), "--wait", "--timeout=120s")
    before = wait_until(lambda: at(bed, "cart", 2, small), timeout=60, what="cart running")
    helm(bed, "upgrade", "cart", str(chart), "--set", "memory=96Mi", "--wait", "--timeout=120s")
    grown = wait_until(lambda: at(bed, "cart", 2, big), timeout=120, what="cart at 96Mi")
    assert uids(grown) == uids(before)
    helm(bed, "rollback", "cart", "1", "--wait", "--timeout=120s")
    back = wait_until(lambda: at(bed, "cart", 2, small), timeout=120, what="cart back at 32Mi")
    if lowers_memory_limits_in_place(bed):
        assert uids(back) == uids(before)
        assert all(status_of(p, "main")["restartCount"] == 0 for p in back)
    else:  # 1.33: the rollback lowers the memory limit, which rolls out
        assert not set(uids(back)) & set(uids(grown))
    helm(bed, "uninstall", "cart")


def kubelet_pod(name: str, node: str, cpu: str, memory: str, *, shrinkable: bool = False) -> str:
    """The rescue tests' pod (``tests/e2e/test_rescue.py``) on a kubelet node, with an image
    that node has."""
    manifest = pod_manifest(name, cpu, memory, shrinkable=shrinkable)
    manifest["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    container = manifest["spec"]["containers"][0]
    container["image"], container["imagePullPolicy"] = WORKLOAD_IMAGE, "IfNotPresent"
    return json.dumps(manifest)


GROWER = f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: grow}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: grow}}}}
  template:
    metadata: {{labels: {{app: grow}}}}
    spec:
      nodeSelector: {{kubernetes.io/hostname: kubelet-2}}
      terminationGracePeriodSeconds: 2
      volumes: [{{name: scratch, emptyDir: {{medium: Memory}}}}]
      containers:
      - name: app
        image: {WORKLOAD_IMAGE}
        imagePullPolicy: IfNotPresent
        # 300 MiB written to a memory-backed emptyDir, 10 MiB at a time, is charged to this
        # container's memory cgroup: the kubelet's Summary API reports it as its working set
        command:
        - sh
        - -c
        - for i in $(seq 1 30); do dd if=/dev/zero of=/scratch/$i bs=1M count=10 2>/dev/null;
          sleep 0.1; done; echo grown; exec sleep 3600
        volumeMounts: [{{name: scratch, mountPath: /scratch}}]
        resources:
          requests: {{cpu: 50m, memory: 100Mi}}
"""


def test_the_vpa_resizes_in_place_and_the_rescuer_makes_room_on_kubelet_nodes(bed: Bed) -> None:
    """The chart's VPA and rescuer turned on by ``helm upgrade``, usage read from the kubelets'
    Summary API through kube-apiserver's node proxy (no metrics-server): a pod growing past
    its request under a VPA naming the ``inplace`` recommender is resized in place; a pod
    Unschedulable for memory gets room from a shrinkable donor shrunk in place, and the real
    scheduler places it."""
    for kind in CRD_FILES:
        bed.kubectl("apply", "-f", "-", input=json.dumps(crd_manifest(kind)))
        name = crd_manifest(kind)["metadata"]["name"]
        bed.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    helm(
        bed, "upgrade", "inplace", str(CHART_DIR), "-n", NAMESPACE, "--reuse-values",
        "--set", "vpa.enabled=true", "--set", "rescue.enabled=true", "--set", "nodeProxy=true",
        "--wait", "--timeout=180s",
    )  # fmt: skip

    bed.apply(GROWER)
    grower = wait_until(lambda: all_running(bed, "grow", 1), timeout=90, what="grow running")[0]
    wait_until(
        lambda: "grown" in bed.kubectl("logs", grower["metadata"]["name"]).stdout,
        timeout=60,
        what="the grower holding 300 MiB",
    )
    pid = pid_of(grower, "app")
    bed.apply(vpa("grow", ["inplace"]))

    def grown() -> dict[str, Any] | None:
        pods = all_running(bed, "grow", 1)
        if not pods:
            return None
        actual = status_of(pods[0], "app").get("resources") or {}
        memory = actual.get("requests", {}).get("memory")
        return pods[0] if memory and Quantity.parse(memory) >= Quantity.parse("300Mi") else None

    pod = wait_until(grown, timeout=240, interval=2, what="grow resized in place by the VPA")
    assert pod["metadata"]["uid"] == grower["metadata"]["uid"]
    assert pid_of(pod, "app") == pid
    assert status_of(pod, "app")["restartCount"] == 0
    assert "InPlaceResizedByVPA" in {e["reason"] for e in bed.events_of(pod["metadata"]["name"])}

    bed.apply(kubelet_pod("donor", "kubelet-1", "100m", "1536Mi", shrinkable=True))
    donor = wait_running(bed, "donor")
    donor_pid = pid_of(donor)
    bed.apply(kubelet_pod("pending", "kubelet-1", "100m", "1Gi"))
    placed = wait_running(bed, "pending", timeout=180)
    assert placed["spec"]["nodeName"] == "kubelet-1"
    donor = bed.get("pod", "donor")
    assert requests(donor)[1] < 1536 * 2**20
    assert pid_of(donor) == donor_pid
    assert status_of(donor, "main")["restartCount"] == 0
    bed.kubectl("delete", "pod", "donor", "pending", "--wait=false")
    bed.kubectl("delete", "deployment", "grow", "--wait=false")
