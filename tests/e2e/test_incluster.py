"""End to end: a pod's own credentials. The official Python client's `load_incluster_config()`
inside a pod (a host process in its mount namespace) finds the API server and the pod's bound
token, is refused until a RoleBinding lets its service account list pods, and the token stops
working once the pod is deleted."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import Cluster
from tests.poll import wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="volumes need a mount namespace (root)"),
]

NAMESPACE = "incluster-e2e"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"

PROGRAM = textwrap.dedent(
    """
    import time
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    config.load_incluster_config()
    namespace = open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read()
    api = client.CoreV1Api()
    while True:
        try:
            names = [p.metadata.name for p in api.list_namespaced_pod(namespace).items]
            print("200", namespace, *names, flush=True)
        except ApiException as exc:
            print(exc.status, namespace, flush=True)
        time.sleep(0.3)
    """
)


def reader_pod() -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "reader", "namespace": NAMESPACE},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "reader",
                    "image": "python",
                    "command": [sys.executable, "-c", PROGRAM],
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                }
            ],
        },
    }


def last_line(cluster: Cluster) -> str:
    logs = cluster.kubectl("logs", "reader", "-n", NAMESPACE, check=False).stdout
    lines = logs.strip().splitlines()
    return lines[-1] if lines else ""


def test_a_pod_lists_pods_with_its_own_token_until_it_is_deleted(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", NAMESPACE)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(reader_pod()))
    pod = json.loads(cluster.kubectl("get", "pod", "reader", "-n", NAMESPACE, "-o", "json").stdout)
    volume = next(v for v in pod["spec"]["volumes"] if v["name"].startswith("kube-api-access-"))
    mount = pod["spec"]["containers"][0]["volumeMounts"][0]
    assert (mount["name"], mount["mountPath"], mount["readOnly"]) == (volume["name"], MOUNT, True)

    assert wait_until(lambda: last_line(cluster) == f"403 {NAMESPACE}", what="403 before")
    cluster.kubectl(
        "create",
        "rolebinding",
        "reader",
        "--clusterrole=view",
        f"--serviceaccount={NAMESPACE}:default",
        "-n",
        NAMESPACE,
    )
    wait_until(lambda: last_line(cluster) == f"200 {NAMESPACE} reader", what="200 after binding")

    uid = pod["metadata"]["uid"]
    token_files = list(Path(cluster.data_dir).rglob(f"{uid}/volumes/*/{volume['name']}/token"))
    assert token_files, "the projected token is on the host"
    token = token_files[0].read_text()
    as_pod = ("--token", token, "--kubeconfig", os.devnull, "--server", server(cluster))
    ca = ("--certificate-authority", str(cluster.data_dir / "pki" / "ca.crt"))
    whoami = cluster.kubectl("auth", "whoami", "-o", "json", *as_pod, *ca).stdout
    assert json.loads(whoami)["status"]["userInfo"]["username"] == (
        f"system:serviceaccount:{NAMESPACE}:default"
    )

    created = cluster.kubectl("create", "token", "default", "-n", NAMESPACE).stdout.strip()
    listed = cluster.kubectl(
        "get",
        "pods",
        "-n",
        NAMESPACE,
        "--token",
        created,
        "--kubeconfig",
        os.devnull,
        "--server",
        server(cluster),
        *ca,
        "-o",
        "name",
    )
    assert listed.stdout.split() == ["pod/reader"]

    cluster.kubectl("delete", "pod", "reader", "-n", NAMESPACE, "--wait=true", timeout=90)
    refused = cluster.kubectl("get", "pods", "-n", NAMESPACE, *as_pod, *ca, check=False)
    assert refused.returncode != 0
    assert "Unauthorized" in refused.stderr
    cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def server(cluster: Cluster) -> str:
    return f"https://127.0.0.1:{cluster.port}"
