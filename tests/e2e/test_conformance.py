"""End to end with real kubectl: the API's objects as upstream's (issue 12).

Quantities read back canonical; a manifest with a Namespace, ConfigMap, Secret,
ServiceAccount, Service, a pod and a Deployment that read their environment from them applies
and runs;
``kubectl get cm,secret,sa,svc,ep,endpointslice``, ``get all`` and ``cluster-info`` look as
upstream's; a missing key waits as ``CreateContainerConfigError``; the resize subresource
takes ``kubectl replace`` of an applied pod and refuses a reorder in upstream's words; bad
input gets upstream's codes. Everything lives in namespace ``conformance``, deleted at the
end (the node stops the pods)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Cluster
from tests.poll import wait_until

pytestmark = pytest.mark.e2e

NS = "conformance"

MANIFEST = f"""\
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: shop-config, namespace: {NS}}}
data: {{GREETING: hello, MODE: fast}}
---
apiVersion: v1
kind: Secret
metadata: {{name: shop-secret, namespace: {NS}}}
stringData: {{PASSWORD: s3cret}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: shop-sa, namespace: {NS}}}
---
apiVersion: v1
kind: Service
metadata: {{name: shop, namespace: {NS}}}
spec:
  selector: {{app: shop}}
  ports: [{{port: 80, targetPort: 8080}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: shop, namespace: {NS}, labels: {{app: shop}}}}
spec:
  serviceAccountName: shop-sa
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c"]
    args: ["echo ready $GREETING $MODE $PASSWORD $NODE $SA $CPU_MILLI $APP; exec sleep 3600"]
    envFrom: [{{configMapRef: {{name: shop-config}}}}]
    env:
    - {{name: MODE, value: "$(GREETING)-slow"}}
    - {{name: PASSWORD, valueFrom: {{secretKeyRef: {{name: shop-secret, key: PASSWORD}}}}}}
    - {{name: NODE, valueFrom: {{fieldRef: {{fieldPath: spec.nodeName}}}}}}
    - {{name: SA, valueFrom: {{fieldRef: {{fieldPath: spec.serviceAccountName}}}}}}
    - {{name: APP, valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['app']"}}}}}}
    - name: CPU_MILLI
      valueFrom: {{resourceFieldRef: {{resource: limits.cpu, divisor: 1m}}}}
    resources:
      requests: {{cpu: "0.05", memory: 32Mi}}
      limits: {{cpu: "100m", memory: 64Mi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: shop-web, namespace: {NS}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: shop-web}}}}
  template:
    metadata: {{labels: {{app: shop-web}}}}
    spec:
      serviceAccountName: shop-sa
      containers:
      - name: web
        image: busybox
        command: ["sh", "-c", "echo ready $GREETING $PASSWORD; exec sleep 3600"]
        envFrom: [{{configMapRef: {{name: shop-config}}}}, {{secretRef: {{name: shop-secret}}}}]
        resources:
          requests: {{cpu: 20m, memory: 16Mi}}
"""


@pytest.fixture(scope="module")
def shop(cluster: Cluster) -> Iterator[Cluster]:
    """The manifest, applied once; the namespace goes at the end."""
    applied = cluster.kubectl("apply", "-f", "-", input=MANIFEST)
    assert "pod/shop created" in applied.stdout, applied.stdout
    try:
        yield cluster
    finally:
        cluster.kubectl("delete", "namespace", NS, "--wait=true", "--timeout=90s", check=False)


def get_json(cluster: Cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-n", NS, "-o", "json").stdout)


def logs(cluster: Cluster, pod: str) -> str:
    return cluster.kubectl("logs", pod, "-n", NS, check=False).stdout


def header(output: str) -> str:
    return " ".join(output.splitlines()[0].split())


def test_the_manifest_applies_and_its_pod_reads_its_configuration(shop: Cluster) -> None:
    wait_until(lambda: "ready" in logs(shop, "shop"), timeout=60, what="the pod to start")
    assert logs(shop, "shop").split() == [
        "ready",
        "hello",
        "hello-slow",
        "s3cret",
        "node-1",
        "shop-sa",
        "100",
        "shop",
    ]
    # Applied again: kubectl sends "0.05" (the manifest) against "50m" (stored) and says
    # "configured", as against upstream; the value is the same, so nothing changes.
    again = shop.kubectl("apply", "-f", "-", input=MANIFEST).stdout
    assert "namespace/conformance unchanged" in again and "pod/shop configured" in again
    assert "deployment.apps/shop-web unchanged" in again
    pod = get_json(shop, "pod", "shop")
    assert pod["metadata"]["generation"] == 1
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "50m"


def web_pod_logs(cluster: Cluster) -> str:
    """The Deployment's pod's log, once its ReplicaSet made the pod."""
    pods = get_json(cluster, "pods", "-l", "app=shop-web")["items"]
    return logs(cluster, pods[0]["metadata"]["name"]) if pods else ""


def test_the_manifests_deployment_reads_its_configuration(shop: Cluster) -> None:
    wait_until(lambda: "ready" in web_pod_logs(shop), timeout=60, what="the Deployment's pod")
    assert web_pod_logs(shop).split() == ["ready", "hello", "s3cret"]
    everything = shop.kubectl("get", "all", "-n", NS).stdout
    assert "deployment.apps/shop-web   1/1" in everything, everything
    assert "replicaset.apps/shop-web-" in everything


def test_the_issue_pod_reads_back_canonical(shop: Cluster) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "canonical", "namespace": NS},
        "spec": {
            "nodeSelector": {"inplace.dev/e2e": "api-only"},  # stays unscheduled
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "1d"],
                    "resources": {
                        "requests": {"cpu": "0.5", "memory": "1.5Gi"},
                        "limits": {"cpu": "1000m", "memory": "2048Mi"},
                    },
                }
            ],
        },
    }
    shop.kubectl("apply", "-f", "-", input=json.dumps(pod))
    resources = get_json(shop, "pod", "canonical")["spec"]["containers"][0]["resources"]
    assert resources == {
        "requests": {"cpu": "500m", "memory": "1536Mi"},
        "limits": {"cpu": "1", "memory": "2Gi"},
    }
    shop.kubectl("delete", "pod", "canonical", "-n", NS, "--wait=false")


def test_get_shows_upstream_columns(shop: Cluster) -> None:
    out = shop.kubectl("get", "cm,secret,sa,svc,ep,endpointslice", "-n", NS).stdout
    blocks = [b for b in out.strip().split("\n\n") if b]
    headers = [header(b) for b in blocks]
    assert headers == [
        "NAME DATA AGE",
        "NAME TYPE DATA AGE",
        "NAME SECRETS AGE",
        "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE",
    ], out  # no Endpoints or EndpointSlices in this namespace: kubectl prints no header
    assert "configmap/shop-config" in out and "secret/shop-secret   Opaque   1" in out
    assert "serviceaccount/default" in out and "serviceaccount/shop-sa" in out
    service = get_json(shop, "svc", "shop")["spec"]
    assert service["clusterIP"].startswith("10.") and service["clusterIPs"] == [
        service["clusterIP"]
    ]
    assert f"service/shop   ClusterIP   {service['clusterIP']}   <none>        80/TCP" in out
    everything = shop.kubectl("get", "all", "-n", NS).stdout
    assert "pod/shop" in everything and "service/shop" in everything
    defaults = shop.kubectl("get", "svc,ep,endpointslice", "-n", "default").stdout
    assert "service/kubernetes" in defaults and "10.96.0.1" in defaults
    assert f"endpoints/kubernetes   127.0.0.1:{shop.port}" in defaults
    info = shop.kubectl("cluster-info").stdout
    assert f"Kubernetes control plane is running at https://127.0.0.1:{shop.port}" in info


def test_a_missing_key_waits_as_create_container_config_error(shop: Cluster) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "waiting", "namespace": NS},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sh", "-c", "echo got $LATE; exec sleep 3600"],
                    "env": [
                        {
                            "name": "LATE",
                            "valueFrom": {"configMapKeyRef": {"name": "late", "key": "value"}},
                        }
                    ],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ]
        },
    }
    shop.kubectl("apply", "-f", "-", input=json.dumps(pod))

    def waiting() -> dict[str, Any] | None:
        statuses = get_json(shop, "pod", "waiting").get("status", {}).get("containerStatuses")
        state = (statuses or [{}])[0].get("state", {}).get("waiting", {})
        return state if state.get("reason") == "CreateContainerConfigError" else None

    state = wait_until(waiting, timeout=60, what="CreateContainerConfigError")
    assert state["message"] == 'configmap "late" not found'
    events = shop.kubectl(
        "get", "events", "-n", NS, "--field-selector", "involvedObject.name=waiting"
    ).stdout
    assert 'Error: configmap "late" not found' in events
    shop.kubectl("create", "configmap", "late", "-n", NS, "--from-literal=value=at-last")
    wait_until(lambda: "got at-last" in logs(shop, "waiting"), timeout=60, what="the retry")
    shop.kubectl("delete", "pod", "waiting", "-n", NS, "--wait=false")


def test_replace_through_the_resize_subresource_of_an_applied_pod(
    shop: Cluster, tmp_path: Path
) -> None:
    """kubectl replace --subresource resize of `kubectl get -o json` output: kubectl has
    rewritten the last-applied annotation, and the resize is taken all the same."""
    wait_until(lambda: "ready" in logs(shop, "shop"), timeout=60, what="the pod to start")
    pod = get_json(shop, "pod", "shop")
    pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "48Mi"
    pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    pod["spec"]["containers"][0]["image"] = "busybox:other"  # ignored, as upstream ignores it
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(pod))
    replaced = shop.kubectl("replace", "--subresource", "resize", "-f", str(path), check=False)
    assert replaced.returncode == 0, replaced.stderr
    after = get_json(shop, "pod", "shop")
    assert after["spec"]["containers"][0]["resources"]["requests"]["memory"] == "48Mi"
    assert after["spec"]["containers"][0]["image"] == "busybox"
    assert after["metadata"]["generation"] == 2
    assert (
        after["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] != "{}"
    )


def test_a_reorder_through_resize_is_refused_in_upstreams_words(shop: Cluster) -> None:
    two = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "two", "namespace": NS},
        "spec": {
            "nodeSelector": {"inplace.dev/e2e": "api-only"},
            "containers": [
                {"name": n, "image": "busybox", "command": ["sleep", "1d"]} for n in ("a", "b")
            ],
        },
    }
    shop.kubectl("apply", "-f", "-", input=json.dumps(two))
    reorder = {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}
    refused = shop.kubectl(
        "patch",
        "pod",
        "two",
        "-n",
        NS,
        "--subresource",
        "resize",
        "-p",
        json.dumps(reorder),
        check=False,
    )
    assert refused.returncode == 1
    assert (
        'The Pod "two" is invalid: \n* spec.containers[0].name: Forbidden: containers may not be '
        "renamed or reordered on resize\n* spec.containers[1].name: Forbidden: containers may "
        "not be renamed or reordered on resize"
    ) in refused.stderr, refused.stderr
    shop.kubectl("delete", "pod", "two", "-n", NS, "--wait=false")


def test_bad_input_gets_upstreams_codes(shop: Cluster) -> None:
    def config_map(name: str, size: int) -> str:
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": NS},
                "data": {"blob": "x" * size},
            }
        )

    huge = shop.kubectl("create", "-f", "-", input=config_map("huge", 5 << 20), check=False)
    assert "Request entity too large: limit is 3145728" in huge.stderr, huge.stderr
    big = shop.kubectl("create", "-f", "-", input=config_map("big", (1 << 20) + 1), check=False)
    assert (
        'The ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes'
        in big.stderr
    ), big.stderr
    secret = shop.kubectl(
        "create",
        "-f",
        "-",
        check=False,
        input=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "bad", "namespace": NS},
                "data": {"k": "abcde"},
            }
        ),
    )
    assert "illegal base64 data at input byte 4" in secret.stderr, secret.stderr
    profile = next(d for d in yaml.safe_load_all(MANIFEST) if d["kind"] == "Pod")
    profile["metadata"] = {
        "name": "profiled",
        "namespace": NS,
        "annotations": {"inplace.dev/usage-profile": "{not json"},
    }
    refused = shop.kubectl("create", "-f", "-", input=json.dumps(profile), check=False)
    assert "metadata.annotations[inplace.dev/usage-profile]: Invalid value" in refused.stderr
    assert "must be JSON" in refused.stderr, refused.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="processes in cgroups need root")
def test_resource_env_follows_an_in_place_resize_for_new_processes(shop: Cluster) -> None:
    """A container restarted by its cpu resize policy starts with the new limit in its
    environment (kubelet builds it from the allocated resources)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "grows", "namespace": NS},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sh", "-c", "echo limit=$CPU_MILLI; exec sleep 3600"],
                    "env": [
                        {
                            "name": "CPU_MILLI",
                            "valueFrom": {
                                "resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}
                            },
                        }
                    ],
                    "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}],
                    "resources": {
                        "requests": {"cpu": "50m", "memory": "16Mi"},
                        "limits": {"cpu": "100m", "memory": "32Mi"},
                    },
                }
            ]
        },
    }
    shop.kubectl("apply", "-f", "-", input=json.dumps(pod))
    wait_until(lambda: "limit=100" in logs(shop, "grows"), timeout=60, what="first start")
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {"limits": {"cpu": "200m"}, "requests": {"cpu": "50m"}},
                }
            ]
        }
    }
    shop.kubectl(
        "patch", "pod", "grows", "-n", NS, "--subresource", "resize", "-p", json.dumps(patch)
    )
    wait_until(lambda: "limit=200" in logs(shop, "grows"), timeout=90, what="the restart")
    restarts = get_json(shop, "pod", "grows")["status"]["containerStatuses"][0]["restartCount"]
    assert restarts == 1
    shop.kubectl("delete", "pod", "grows", "-n", NS, "--wait=false")
