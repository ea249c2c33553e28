"""Node parity: the same pod on inplace's node agent and on the real kubelet v1.36.3, side by
side in one bed, resized the same way, must be reported in the same shape.

What is compared, once both have settled: the keys of ``status`` (recursively: the pod-level
``allocatedResources`` and ``resources``, each container status' ``user`` and
``volumeMounts``...), the condition types in the kubelet's order with the same fields, the
pod-level ``allocatedResources`` and ``resources`` values (the kubelet's rules, including the
memory request it keeps from the pod's start), and the events' types, reasons, containers
and messages. Values that name the node (pod names and UIDs, IPs, container and image IDs,
times) are left out or normalised. A memory limit decrease below what the container uses is
refused before any cgroup is written, with the kubelet's condition and message.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from testbed.images import WORKLOAD_IMAGE
from tests.poll import wait_until

from .conftest import Bed, cgroup_file, condition, down, pid_of, start_bed, wait_running
from .test_resize import HOG

NODES = {"agent": "node-1", "kubelet": "kubelet-1"}

IGNORED_EVENTS = frozenset({"MissingClusterDNS"})
"""Events that say how the bed configured the node, not how it reports a pod: the bed's
kubelets run without ``clusterDNS``, so they warn about every ``ClusterFirst`` pod
(``pkg/kubelet/network/dns/dns.go``); the agent has no DNS configuration to warn about."""


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    """One agent node and one kubelet node, 2 CPUs and 2Gi each."""
    directory = tmp_path_factory.mktemp("upstream")
    plane = start_bed(directory, nodes=1, kubelet_nodes=1, node_cpu="2", node_memory="2Gi")
    try:
        yield Bed(plane)
    finally:
        leftovers = down(directory)
    assert not leftovers, f"the test bed left behind: {leftovers}"


POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  terminationGracePeriodSeconds: 2
  securityContext: {{supplementalGroups: [4000]}}
  volumes:
  - {{name: scratch, emptyDir: {{}}}}
  - {{name: ca, configMap: {{name: kube-root-ca.crt}}}}
  initContainers:
  - name: init
    image: {image}
    imagePullPolicy: IfNotPresent
    command: ["true"]
  - name: side
    image: {image}
    imagePullPolicy: IfNotPresent
    restartPolicy: Always
    command: ["sh", "-c", "exec sleep 3600"]
  containers:
  - name: main
    image: {image}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    volumeMounts:
    - {{name: scratch, mountPath: /scratch}}
    - {{name: ca, mountPath: /ca, readOnly: true}}
    resources:
      requests: {{cpu: 100m, memory: 64Mi}}
      limits: {{cpu: 200m, memory: 128Mi}}
  - name: helper
    image: {image}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    securityContext: {{runAsUser: 1000, runAsGroup: 3000}}
"""

# -- what is compared --------------------------------------------------------------------


def shape(value: Any, path: str = "") -> set[str]:
    """Every key path of ``value``: list items are named by their ``mountPath`` (a volume's
    name may be generated: ``kube-api-access-…``), ``name`` or ``type`` (by index otherwise),
    so two statuses compare container by container and condition by condition whatever their
    values; a list of scalars is a value (``supplementalGroups`` depend on the image's, here
    the host's, ``/etc/group``)."""
    paths = {path} if path else set()
    if isinstance(value, Mapping):
        for key, item in value.items():
            paths |= shape(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, Mapping):  # a list of scalars (groups, say) is one value
                label = item.get("mountPath") or item.get("name") or item.get("type") or i
                paths |= shape(item, f"{path}[{label}]")
    return paths


def conditions(pod: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """The condition types in order, each with its fields (null ones too)."""
    return [(c["type"], sorted(c)) for c in pod["status"].get("conditions") or ()]


def normalise(text: str, pod: Mapping[str, Any]) -> str:
    """``text`` without what names this pod or its node."""
    meta = pod["metadata"]
    text = text.replace(meta["uid"], "UID").replace(meta["name"], "POD")
    return text.replace(pod["spec"]["nodeName"], "NODE")


def events(bed: Bed, pod: Mapping[str, Any]) -> set[tuple[str, str, str, str, str]]:
    """(type, reason, container, message, source) of every event about the pod."""
    return {
        (
            e["type"],
            e["reason"],
            e["involvedObject"].get("fieldPath", ""),
            normalise(e["message"], pod),
            (e.get("source") or {}).get("component", "") or e.get("reportingComponent", ""),
        )
        for e in bed.events_of(pod["metadata"]["name"])
        if e["reason"] not in IGNORED_EVENTS
    }


def both(bed: Bed, prefix: str) -> dict[str, dict[str, Any]]:
    return {kind: bed.get("pod", f"{prefix}-{kind}") for kind in NODES}


def settled(pod: Mapping[str, Any]) -> bool:
    """Every container running at what the spec asks, no resize condition, the generation
    acted on."""
    status = pod["status"]
    if status.get("observedGeneration") != pod["metadata"]["generation"]:
        return False
    if condition(dict(pod), "PodResizeInProgress") or condition(dict(pod), "PodResizePending"):
        return False
    spec = {c["name"]: c.get("resources") or {} for c in pod["spec"]["containers"]}
    for cs in status.get("containerStatuses") or ():
        if "running" not in cs["state"] or cs.get("resources", {}) != spec[cs["name"]]:
            return False
    return True


def differences(agent: Mapping[str, Any], kubelet: Mapping[str, Any]) -> dict[str, Any]:
    """How the agent's pod status differs from the kubelet's: keys, conditions, and the
    pod-level ``allocatedResources`` and ``resources`` values."""
    out: dict[str, Any] = {}
    mine, theirs = shape(agent["status"]), shape(kubelet["status"])
    if mine != theirs:
        out["keys only the agent has"] = sorted(mine - theirs)
        out["keys only the kubelet has"] = sorted(theirs - mine)
    if conditions(agent) != conditions(kubelet):
        out["conditions (agent, kubelet)"] = (conditions(agent), conditions(kubelet))
    for field in ("allocatedResources", "resources"):
        if agent["status"].get(field) != kubelet["status"].get(field):
            out[f"{field} (agent, kubelet)"] = (
                agent["status"].get(field),
                kubelet["status"].get(field),
            )
    return out


def resize(bed: Bed, name: str, containers: list[dict[str, Any]]) -> None:
    body = json.dumps({"spec": {"containers": containers}})
    bed.kubectl("patch", "pod", name, "--subresource", "resize", "-p", body)


def compare(bed: Bed, prefix: str, what: str) -> dict[str, dict[str, Any]]:
    """Wait until both pods settled and report the same shape (the kubelet rewrites the
    pod-level resources on a later sync: waited for); fail with every difference."""
    wait_until(
        lambda: all(settled(p) for p in both(bed, prefix).values()),
        timeout=90,
        what=f"{what}: both settled",
    )
    last: dict[str, dict[str, Any]] = {}

    def same() -> bool:
        last.update(both(bed, prefix))
        return not differences(last["agent"], last["kubelet"])

    with contextlib.suppress(pytest.fail.Exception):
        wait_until(same, timeout=150, what=what)
    found = differences(last["agent"], last["kubelet"])
    assert not found, f"{what}: {json.dumps(found, indent=1)}"
    return dict(last)


def wait_equal(pair: Any, *, until: Any = lambda _: True, what: str, timeout: float = 90) -> None:
    """Wait until ``pair()`` gives the agent's and the kubelet's value equal (and ``until``
    holds for them); on a timeout, fail showing the two."""
    last: list[Any] = []

    def equal() -> bool:
        last[:] = list(pair())
        return bool(last[0] == last[1] and until(last[0]))

    try:
        wait_until(equal, timeout=timeout, what=what)
    except pytest.fail.Exception:
        agent, kubelet = last
        assert agent == kubelet, what
        raise


# -- the tests ---------------------------------------------------------------------------


def test_a_pod_and_its_resize_are_reported_as_the_kubelet_reports_them(bed: Bed) -> None:
    names = {kind: f"parity-{kind}" for kind in NODES}
    for kind, node in NODES.items():
        bed.apply(POD.format(name=names[kind], node=node, image=WORKLOAD_IMAGE))
    try:
        for name in names.values():
            wait_running(bed, name)
        pods = compare(bed, "parity", "both pods running and reported")
        status = pods["agent"]["status"]
        assert status["allocatedResources"] == {"cpu": "100m", "memory": "64Mi"}
        # kubelet_pods.go convertToAPIPodLevelResourcesStatus, once Running: the pod cgroup's
        # values (v1's "no memory limit" as the number it reads; no CPU quota: the CPU limit
        # reported before, from the containers' limits)
        assert status["resources"] == {
            "limits": {"cpu": "200m", "memory": "9007199254740988Ki"},
            "requests": {"cpu": "100m", "memory": "64Mi"},
        }

        grow = {
            "requests": {"cpu": "300m", "memory": "100Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        }
        for name in names.values():
            resize(bed, name, [{"name": "main", "resources": grow}])
        pods = compare(bed, "parity", "both pods resized and reported")
        status = pods["agent"]["status"]
        assert status["allocatedResources"] == {"cpu": "300m", "memory": "100Mi"}
        # the memory request, in no cgroup, is the one the running pod reported first
        assert status["resources"] == {
            "limits": {"cpu": "200m", "memory": "9007199254740988Ki"},
            "requests": {"cpu": "300m", "memory": "64Mi"},
        }

        # events_of lists what is stored so far: the kubelet posts its events on its own
        wait_equal(
            lambda: [sorted(events(bed, pods[kind])) for kind in ("agent", "kubelet")],
            until=lambda agent: any(e[1] == "ResizeCompleted" for e in agent),
            what="the same events about both pods",
        )
    finally:
        bed.kubectl("delete", "pod", *names.values(), "--wait=false")


ERROR_SHAPE = re.compile(r"\(\d+\)")


def test_a_memory_limit_below_usage_is_refused_before_the_cgroups_as_the_kubelet_does(
    bed: Bed,
) -> None:
    """kuberuntime_manager.go validateMemoryResizeAction: no cgroup is written; the resize is
    ``PodResizeInProgress``/``Error`` with "cannot decrease memory limits: …" naming the pod's
    and the container's new limits beside the usage, and a ``ResizeError`` event."""
    names = {kind: f"hog-{kind}" for kind in NODES}
    for kind, node in NODES.items():
        bed.apply(HOG.format(name=names[kind], node=node, image=WORKLOAD_IMAGE))
    try:

        def allocated() -> bool:
            return all(
                "allocated" in bed.kubectl("logs", name, "-c", "main").stdout
                for name in names.values()
            )

        for name in names.values():
            wait_running(bed, name)
        wait_until(allocated, what="both pods allocated their memory")
        squeeze = {"requests": {"memory": "50Mi"}, "limits": {"memory": "50Mi"}}
        for name in names.values():
            resize(bed, name, [{"name": "main", "resources": squeeze}])

        def messages() -> list[str | None]:
            """Each pod's PodResizeInProgress Error message, its numbers left out."""
            out: list[str | None] = []
            for kind in ("agent", "kubelet"):
                cond = condition(bed.get("pod", names[kind]), "PodResizeInProgress") or {}
                error = cond.get("reason") == "Error"
                out.append(ERROR_SHAPE.sub("(N)", cond["message"]) if error else None)
            return out

        # the kubelet's first attempt may not know the pod's usage yet (it then names the
        # container alone); its next one names both, as the agent does at once
        wait_equal(
            messages,
            until=lambda agent: agent is not None and "pod memory limit" in agent,
            what="the same Error on both nodes",
            timeout=150,
        )
        pods = {kind: bed.get("pod", name) for kind, name in names.items()}
        found = {kind: condition(pod, "PodResizeInProgress") or {} for kind, pod in pods.items()}
        message = found["agent"]["message"]
        assert ERROR_SHAPE.sub("(N)", message) == (
            "cannot decrease memory limits: [attempting to set pod memory limit (N) below "
            'current usage (N), attempting to set container "main" memory limit (N) below '
            "current usage (N)]"
        )
        # the pod's new limit is 50Mi + 32Mi, the container's 50Mi (as asked, not page-rounded)
        assert "limit (85983232)" in message and "limit (52428800)" in message
        assert sorted(found["agent"]) == sorted(found["kubelet"])
        assert found["agent"]["observedGeneration"] == found["kubelet"]["observedGeneration"]
        for pod in pods.values():  # untouched, the process running on
            limit = cgroup_file(pid_of(pod, "main"), "memory", "memory.limit_in_bytes")
            assert limit == str(200 * 2**20)

        def resize_errors() -> list[list[str]]:
            return [
                sorted(
                    ERROR_SHAPE.sub("(N)", str(e["message"]))
                    for e in bed.events_of(names[kind])
                    if e["reason"] == "ResizeError" and "pod memory limit" in e["message"]
                )[:1]
                for kind in ("agent", "kubelet")
            ]

        wait_equal(resize_errors, until=bool, what="the same ResizeError on both nodes")
    finally:
        bed.kubectl("delete", "pod", *names.values(), "--wait=false")
