"""``inplace operator --vpa`` as a VPA recommender among others, under the real control plane:
upstream's VPA CRDs installed, no metrics-server (so usage comes from the node agents' Summary
API through kube-apiserver's node proxy), a Deployment whose process grows past its memory
request with a VPA naming the ``inplace`` recommender is resized in place (same UID and PID, no
restart, the CPU request in the cgroup); a VPA without ``recommenders`` (the default
recommender's) is left alone: no status, no checkpoint, its pod untouched. The memory limit's
headroom through kube-apiserver's resize validation; a quota that refuses it; an API that
forbids lowering a memory limit, as 1.33's does.

The CRDs are built from the upstream CRD the project vendors (``inplace.registry.schema.crd``,
transcribed from kubernetes/autoscaler vertical-pod-autoscaler/deploy/vpa-v1-crd-gen.yaml):
its served ``v1`` version with upstream's names, schema, status subresource and printer
columns, and upstream's API-approval annotation (``autoscaling.k8s.io`` is a protected group).

kube-apiserver's node proxy refuses a loopback node address ("address not allowed"), and the
bed's agents listen on 127.0.0.1; so the workloads run on one more agent, ``node-3``
(:mod:`.operator_bed`), listening on the host's first non-loopback IPv4 address.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from inplace.api.quantity import Quantity
from inplace.registry.schema import CRD_FILES, crd
from tests.e2e.test_vpa import UPDATE_THRESHOLD, grower, wait_grown
from tests.poll import wait_until

from .conftest import Bed, cgroup_file, pid_of, status_of
from .operator_bed import NAMESPACE, NODE, Operator, joined_node

APPROVAL = "https://github.com/kubernetes/kubernetes/pull/63797"
"""Upstream's ``api-approved.kubernetes.io`` annotation on its VPA CRDs."""


def crd_manifest(kind: str) -> dict[str, Any]:
    """The CustomResourceDefinition of ``kind`` from the vendored upstream CRD."""
    source = crd(kind)
    names = source["names"]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{names['plural']}.{source['group']}",
            "annotations": {"api-approved.kubernetes.io": APPROVAL},
        },
        "spec": {
            "group": source["group"],
            "names": names,
            "scope": source["scope"],
            "versions": [
                {
                    "name": source["version"],
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": source["openAPIV3Schema"]},
                    "subresources": source.get("subresources") or {},
                    "additionalPrinterColumns": source.get("additionalPrinterColumns") or [],
                }
            ],
        },
    }


def vpa(name: str, recommenders: list[str] | None) -> str:
    chosen = f"\n  recommenders: {json.dumps([{'name': r} for r in recommenders or ()])}"
    return f"""
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata: {{name: "{name}"}}
spec:
  targetRef: {{apiVersion: apps/v1, kind: Deployment, name: "{name}"}}
  updatePolicy: {{updateMode: InPlaceOrRecreate, minReplicas: 1}}{chosen if recommenders else ""}
"""


def on_node_3(manifest: str) -> str:
    """A workload manifest of ``grower`` with its pods placed on ``node-3``."""
    marker = "    spec:\n      containers:"
    assert marker in manifest
    return manifest.replace(
        marker,
        f"    spec:\n      nodeSelector: {{kubernetes.io/hostname: {NODE}}}\n      containers:",
    )


@pytest.fixture(scope="module")
def node_3(bed: Bed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``node-3`` joined and Ready; at the end its workloads deleted, then the agent stopped."""
    with joined_node(bed, tmp_path_factory.mktemp("node-3"), ("deployment",)):
        yield


@pytest.fixture(scope="module")
def operator(bed: Bed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    for kind in CRD_FILES:
        bed.kubectl("apply", "-f", "-", input=json.dumps(crd_manifest(kind)))
    for kind in CRD_FILES:
        name = crd_manifest(kind)["metadata"]["name"]
        bed.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    bed.kubectl("create", "namespace", NAMESPACE)
    op = Operator(
        bed,
        tmp_path_factory.mktemp("operator-vpa"),
        "vpa-operator",
        *("--vpa", "--vpa-recommender-name", "inplace"),
    )
    try:
        yield op
    finally:
        op.stop()
        bed.kubectl("delete", "mutatingwebhookconfiguration", "inplace-operator", check=False)


def the_pod(bed: Bed, app: str) -> dict[str, Any] | None:
    """The one running pod of ``app``."""
    out = bed.kubectl("get", "pods", "-l", f"app={app}", "-o", "json")
    pods = [p for p in json.loads(out.stdout)["items"] if "deletionTimestamp" not in p["metadata"]]
    if len(pods) != 1:
        return None
    statuses = pods[0]["status"].get("containerStatuses") or []
    return pods[0] if statuses and "running" in statuses[0]["state"] else None


def running(bed: Bed, app: str) -> dict[str, Any]:
    return dict(wait_until(lambda: the_pod(bed, app), timeout=90, what=f"{app} running"))


def memory_request(pod: dict[str, Any]) -> Quantity:
    return Quantity.parse(pod["spec"]["containers"][0]["resources"]["requests"]["memory"])


@pytest.mark.usefixtures("node_3")
def test_the_vpa_naming_inplace_is_resized_in_place_the_default_ones_left_alone(
    bed: Bed, operator: Operator
) -> None:
    served = bed.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/pods", check=False)
    assert served.returncode != 0, "the bed is meant to have no metrics-server"
    bed.apply(
        on_node_3(grower("grow", grow_to_mib=300))
        + "---"
        + on_node_3(grower("plain", grow_to_mib=200))
    )
    first = {app: running(bed, app) for app in ("grow", "plain")}
    pid = pid_of(first["grow"], "app")
    wait_grown(pid, 300)
    bed.apply(vpa("grow", ["inplace"]) + "---" + vpa("plain", None))

    def resized_to_target() -> dict[str, Any] | None:
        pod = the_pod(bed, "grow")
        recs = (bed.get("vpa", "grow").get("status") or {}).get("recommendation") or {}
        targets = recs.get("containerRecommendations") or []
        if pod is None or not targets or memory_request(pod) <= Quantity.parse("100Mi"):
            return None
        actual = status_of(pod, "app").get("resources") or {}
        if Quantity.parse(actual["requests"]["memory"]) != memory_request(pod):
            return None  # not yet applied by the node
        # The inplace preset's target moves by a few bytes every pass (its rise margin fades)
        # and its updater resizes only past 5% off: the target as of the resize is within that
        # band of the current one, not equal to it.
        wanted = Quantity.parse(targets[0]["target"]["memory"]).value()
        have = memory_request(pod).value()
        return pod if abs(have - wanted) <= UPDATE_THRESHOLD * wanted else None

    pod = wait_until(resized_to_target, timeout=180, interval=2, what="grow resized in place")
    assert pod["metadata"]["uid"] == first["grow"]["metadata"]["uid"]
    assert pid_of(pod, "app") == pid and psutil.pid_exists(pid)
    assert status_of(pod, "app")["restartCount"] == 0
    assert memory_request(pod) >= Quantity.parse("300Mi")
    cpu = Quantity.parse(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"])
    assert cgroup_file(pid, "cpu", "cpu.shares") == str(cpu.milli_value() * 1024 // 1000)
    reasons = {e["reason"] for e in bed.events_of(pod["metadata"]["name"])}
    assert "InPlaceResizedByVPA" in reasons
    assert bed.get("vpa", "grow")["status"]["conditions"]

    # Past the passes that recommended for "grow", "plain" (the default recommender's) has
    # neither a status nor a checkpoint, and its pod is as it started.
    assert "status" not in bed.get("vpa", "plain") or not bed.get("vpa", "plain")["status"]
    checkpoints = bed.kubectl("get", "verticalpodautoscalercheckpoints", "-o", "json")
    owners = {c["spec"]["vpaObjectName"] for c in json.loads(checkpoints.stdout)["items"]}
    assert "plain" not in owners
    plain = the_pod(bed, "plain")
    assert plain is not None and plain["metadata"]["uid"] == first["plain"]["metadata"]["uid"]
    assert memory_request(plain) == Quantity.parse("100Mi")
    assert "Summary API" in operator.log.read_text()  # usage came through the node proxy


@pytest.mark.usefixtures("node_3")
def test_the_memory_limit_gets_its_headroom_through_kube_apiserver(
    bed: Bed, operator: Operator
) -> None:
    """A Burstable pod written with ``limit = request`` (100Mi) using ~30Mi: the inplace
    preset resizes it to its target with the memory limit at twice the new request, a
    ``pods/resize`` that kube-apiserver's own validation accepts (same QoS class), applied by
    the agent to the container's cgroup, the process untouched."""
    bed.apply(on_node_3(grower("tight", grow_to_mib=20, limit="100Mi")))
    first = running(bed, "tight")
    pid = pid_of(first, "app")
    bed.apply(vpa("tight", ["inplace"]))

    def resized() -> dict[str, Any] | None:
        pod = the_pod(bed, "tight")
        if pod is None or memory_request(pod) == Quantity.parse("100Mi"):
            return None
        actual = status_of(pod, "app").get("resources") or {}
        spec = pod["spec"]["containers"][0]["resources"]
        return pod if actual.get("limits", {}).get("memory") == spec["limits"]["memory"] else None

    pod = wait_until(resized, timeout=120, interval=2, what="tight resized in place")
    limit = Quantity.parse(pod["spec"]["containers"][0]["resources"]["limits"]["memory"])
    assert limit.value() == 2 * memory_request(pod).value()
    assert pod["status"]["qosClass"] == "Burstable"
    assert pod["metadata"]["uid"] == first["metadata"]["uid"]
    assert pid_of(pod, "app") == pid and status_of(pod, "app")["restartCount"] == 0
    assert int(cgroup_file(pid, "memory", "memory.limit_in_bytes")) == limit.value()


def namespaced(name: str, namespace: str, limit: str) -> tuple[str, str]:
    """A grower of 20 MiB on ``node-3`` requesting 100Mi with ``limit``, and its VPA naming
    the ``inplace`` recommender, both in ``namespace``."""
    workload = on_node_3(grower(name, grow_to_mib=20, limit=limit)).replace(
        f'metadata:\n  name: "{name}"', f'metadata:\n  name: "{name}"\n  namespace: {namespace}'
    )
    autoscaler = vpa(name, ["inplace"]).replace(
        f'metadata: {{name: "{name}"}}', f'metadata: {{name: "{name}", namespace: {namespace}}}'
    )
    return workload, autoscaler


def the_pod_in(bed: Bed, namespace: str) -> dict[str, Any] | None:
    """The one running pod of ``namespace``."""
    out = bed.kubectl("get", "pods", "-n", namespace, "-o", "json")
    pods = json.loads(out.stdout)["items"]
    statuses = pods[0]["status"].get("containerStatuses") or [] if len(pods) == 1 else []
    return pods[0] if statuses and "running" in statuses[0]["state"] else None


def resized_off_100mi(bed: Bed, namespace: str) -> dict[str, Any] | None:
    """That pod once its memory request left the 100Mi it started at, and its node reports
    the resize."""
    pod = the_pod_in(bed, namespace)
    if pod is None or memory_request(pod) == Quantity.parse("100Mi"):
        return None
    actual = status_of(pod, "app").get("resources") or {}
    return pod if actual.get("requests", {}).get("memory") else None


QUOTA_NAMESPACE = "quota"


@pytest.mark.usefixtures("node_3")
def test_a_quota_that_refuses_the_headroom_gets_upstreams_limits(
    bed: Bed, operator: Operator
) -> None:
    """In a namespace whose ResourceQuota caps ``limits.memory`` at 120Mi, the same pod at
    ``limit = request = 100Mi``: kube-apiserver's quota admission refuses the resize with
    the headroom (a 128Mi limit), so the updater sends it again with the limit as upstream
    writes it (equal to the new request), and the pod is resized in place all the same."""
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "memory", "namespace": QUOTA_NAMESPACE},
        "spec": {"hard": {"limits.memory": "120Mi"}},
    }
    workload, autoscaler = namespaced("capped", QUOTA_NAMESPACE, "100Mi")
    bed.kubectl("create", "namespace", QUOTA_NAMESPACE)
    try:
        bed.apply(json.dumps(quota))
        bed.apply(workload)

        first = dict(
            wait_until(lambda: the_pod_in(bed, QUOTA_NAMESPACE), timeout=90, what="capped running")
        )
        pid = pid_of(first, "app")
        bed.apply(autoscaler)

        pod = wait_until(
            lambda: resized_off_100mi(bed, QUOTA_NAMESPACE),
            timeout=120,
            interval=2,
            what="capped resized in place",
        )
        resources = pod["spec"]["containers"][0]["resources"]
        assert Quantity.parse(resources["limits"]["memory"]) == memory_request(pod)
        assert pod["metadata"]["uid"] == first["metadata"]["uid"]
        assert pid_of(pod, "app") == pid and status_of(pod, "app")["restartCount"] == 0
        assert "headroom refused" in operator.log.read_text()
    finally:
        bed.kubectl("delete", "namespace", QUOTA_NAMESPACE, "--wait=true", timeout=120)


OLD_API_NAMESPACE = "limits-kept"

FORBID_LIMIT_DECREASE = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "memory-limits-cannot-be-decreased"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["UPDATE"],
                    "resources": ["pods/resize"],
                }
            ]
        },
        "validations": [
            {
                "expression": (
                    "object.spec.containers.all(c, !has(c.resources.limits)"
                    " || !('memory' in c.resources.limits)"
                    " || oldObject.spec.containers.all(o, o.name != c.name"
                    " || !has(o.resources.limits) || !('memory' in o.resources.limits)"
                    " || quantity(c.resources.limits['memory'])"
                    ".compareTo(quantity(o.resources.limits['memory'])) >= 0))"
                ),
                "message": (
                    "spec.containers[0].resources.limits[memory]: Forbidden: memory limits"
                    " cannot be decreased unless resizePolicy is RestartContainer"
                ),
                "reason": "Invalid",
            }
        ],
    },
}
"""Kubernetes 1.33's rule, as its API server words it (422): the bed runs 1.36, which lets a
resize lower a memory limit, so the rule is put back for one namespace by a policy."""


@pytest.mark.usefixtures("node_3")
def test_an_api_that_forbids_lowering_a_memory_limit_gets_the_limit_kept(
    bed: Bed, operator: Operator
) -> None:
    """A Burstable pod requesting 100Mi with a 300Mi limit, using ~30Mi, where the API
    refuses to lower a memory limit as 1.33's does: the shrink (the limit in the template's
    ratio to the new request, below 300Mi) is refused, the updater sends it again with the
    limit kept, and the pod is resized in place all the same (its request lowered, its
    limit and its cgroup's at 300Mi, the same PID)."""
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "memory-limits-cannot-be-decreased"},
        "spec": {
            "policyName": "memory-limits-cannot-be-decreased",
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": OLD_API_NAMESPACE}
                }
            },
        },
    }
    workload, autoscaler = namespaced("kept", OLD_API_NAMESPACE, "300Mi")
    bed.kubectl("create", "namespace", OLD_API_NAMESPACE)
    try:
        bed.apply(json.dumps(FORBID_LIMIT_DECREASE))
        bed.apply(json.dumps(binding))

        bed.apply(workload)
        first = dict(
            wait_until(lambda: the_pod_in(bed, OLD_API_NAMESPACE), timeout=90, what="kept running")
        )
        pid = pid_of(first, "app")
        # The policy is in force once a lowered limit is refused as 1.33 refuses it (a
        # server-side dry run: admission runs, nothing is written).
        shrunk = {"memory": "90Mi"}
        lowered = json.dumps(
            {
                "spec": {
                    "containers": [
                        {"name": "app", "resources": {"requests": shrunk, "limits": shrunk}}
                    ]
                }
            }
        )

        def refused() -> bool:
            out = bed.kubectl(
                *("patch", "pod", first["metadata"]["name"], "-n", OLD_API_NAMESPACE),
                *("--subresource", "resize", "--dry-run=server", "-p", lowered),
                check=False,
            )
            return "memory limits cannot be decreased" in out.stderr

        wait_until(refused, timeout=30, interval=1, what="the policy in force")
        bed.apply(autoscaler)

        pod = wait_until(
            lambda: resized_off_100mi(bed, OLD_API_NAMESPACE),
            timeout=120,
            interval=2,
            what="kept resized in place",
        )
        resources = pod["spec"]["containers"][0]["resources"]
        assert memory_request(pod) < Quantity.parse("100Mi")
        assert Quantity.parse(resources["limits"]["memory"]) == Quantity.parse("300Mi")
        assert pod["metadata"]["uid"] == first["metadata"]["uid"]
        assert pid_of(pod, "app") == pid and status_of(pod, "app")["restartCount"] == 0
        assert int(cgroup_file(pid, "memory", "memory.limit_in_bytes")) == 300 * 2**20
        assert "lowering a memory limit refused" in operator.log.read_text()
    finally:
        bed.kubectl("delete", "namespace", OLD_API_NAMESPACE, "--wait=true", timeout=120)
        bed.kubectl(
            "delete",
            "validatingadmissionpolicybinding,validatingadmissionpolicy",
            "memory-limits-cannot-be-decreased",
            check=False,
        )
