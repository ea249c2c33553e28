"""CustomResourceDefinitions end to end: real `inplace up`, real kubectl, the official client.

A CRD with status and scale subresources and printer columns is applied, then an instance:
`kubectl get` shows the columns, `kubectl explain` the schema, `kubectl api-resources` lists
the kind, `kubectl scale` and a status write work, an invalid instance gets a 422 naming the
field, and the `kubernetes` client's `DynamicClient` creates, lists and patches the kind.
Upstream's VPA CRDs are accepted while the built-in VPA stays served. Deleting the CRD
deletes its objects.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from kubernetes import config, dynamic
from kubernetes.client import api_client

from inplace.registry.schema import vpa_crd
from tests.conftest import Cluster
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: databases.e2e.example.com
spec:
  group: e2e.example.com
  scope: Namespaced
  names:
    plural: databases
    singular: database
    kind: Database
    shortNames: [db]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Engine
      type: string
      jsonPath: .spec.engine
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Phase
      type: string
      jsonPath: .status.phase
    schema:
      openAPIV3Schema:
        type: object
        description: A database the operator runs.
        properties:
          spec:
            type: object
            required: [engine]
            properties:
              engine:
                type: string
                description: Which database engine runs.
                enum: [postgres, mysql]
              replicas:
                type: integer
                minimum: 0
                default: 1
          status:
            type: object
            properties:
              phase: {type: string}
              replicas: {type: integer}
"""

DATABASE = """
apiVersion: e2e.example.com/v1
kind: Database
metadata:
  name: orders
spec:
  engine: postgres
"""


def _run(
    cluster: Cluster, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl(*args, input=input, check=False)


def test_a_crd_is_served_to_kubectl_and_the_dynamic_client(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=CRD)
    try:
        cluster.kubectl(
            "wait", "--for=condition=Established", "crd/databases.e2e.example.com", "--timeout=60s"
        )
        resources = cluster.kubectl("api-resources", "--api-group=e2e.example.com").stdout
        assert "databases" in resources and "db" in resources and "Database" in resources
        # kubectl's discovery cache may predate the CRD: apply retries until it maps the kind.
        wait_until(
            lambda: _run(cluster, "apply", "-f", "-", input=DATABASE).returncode == 0,
            what="the Database instance applied",
        )

        table = cluster.kubectl("get", "databases").stdout.splitlines()
        assert table[0].split() == ["NAME", "ENGINE", "REPLICAS", "PHASE"]
        assert table[1].split() == ["orders", "postgres", "1"]  # no phase yet: empty cell

        explained = cluster.kubectl("explain", "databases.spec").stdout
        assert "engine" in explained and "Which database engine runs." in explained
        assert "replicas" in explained

        cluster.kubectl("scale", "database/orders", "--replicas=3")
        cluster.kubectl(
            "patch",
            "database/orders",
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"phase": "Running", "replicas": 3}}),
        )
        got = json.loads(cluster.kubectl("get", "database/orders", "-o", "json").stdout)
        assert got["spec"]["replicas"] == 3 and got["status"]["phase"] == "Running"
        assert cluster.kubectl("get", "databases", "--no-headers").stdout.split() == [
            "orders",
            "postgres",
            "3",
            "Running",
        ]

        bad = _run(
            cluster,
            "apply",
            "-f",
            "-",
            input=DATABASE.replace("orders", "broken").replace("postgres", "oracle"),
        )
        assert bad.returncode != 0
        assert 'spec.engine: Unsupported value: "oracle"' in bad.stderr
        assert 'supported values: "postgres", "mysql"' in bad.stderr

        # A changed CRD, applied again (kubectl's strategic merge patch): served at once.
        wider = CRD.replace(
            "    - name: Phase\n",
            "    - name: Size\n      type: string\n      jsonPath: .spec.engine\n"
            "      priority: 1\n    - name: Phase\n",
        )
        cluster.kubectl("apply", "-f", "-", input=wider)
        wait_until(
            lambda: "SIZE" in cluster.kubectl("get", "databases", "-o", "wide").stdout,
            what="the new printer column",
        )
        crds = cluster.kubectl("get", "crd", "databases.e2e.example.com").stdout.splitlines()
        assert crds[0].split() == ["NAME", "CREATED", "AT"]

        _dynamic_client(cluster)
    finally:
        cluster.kubectl("delete", "crd", "databases.e2e.example.com", "--timeout=60s", check=False)
    assert _run(cluster, "get", "crd", "databases.e2e.example.com").returncode != 0
    gone = _run(cluster, "get", "--raw", "/apis/e2e.example.com/v1/namespaces/default/databases")
    assert gone.returncode != 0


def _dynamic_client(cluster: Cluster) -> None:
    client = dynamic.DynamicClient(api_client.ApiClient(configuration=_configuration(cluster)))
    databases = client.resources.get(api_version="e2e.example.com/v1", kind="Database")
    created = databases.create(
        body={
            "apiVersion": "e2e.example.com/v1",
            "kind": "Database",
            "metadata": {"name": "billing"},
            "spec": {"engine": "mysql"},
        },
        namespace="default",
    )
    assert created.spec.replicas == 1
    names = sorted(item.metadata.name for item in databases.get(namespace="default").items)
    assert names == ["billing", "orders"]
    patched = databases.patch(
        name="billing",
        namespace="default",
        body={"spec": {"replicas": 2}},
        content_type="application/merge-patch+json",
    )
    assert patched.spec.replicas == 2 and patched.metadata.generation == 2


def _configuration(cluster: Cluster) -> Any:
    from kubernetes.client import Configuration

    configuration = Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)
    return configuration


def test_upstreams_vpa_crd_is_accepted_and_the_built_in_vpa_stays(cluster: Cluster) -> None:
    stored = vpa_crd()
    manifest = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "verticalpodautoscalers.autoscaling.k8s.io"},
        "spec": {
            "group": "autoscaling.k8s.io",
            "scope": "Namespaced",
            "names": {
                "plural": "verticalpodautoscalers",
                "singular": "verticalpodautoscaler",
                "kind": "VerticalPodAutoscaler",
                "listKind": "VerticalPodAutoscalerList",
                "shortNames": ["vpa"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": stored["openAPIV3Schema"]},
                }
            ],
        },
    }
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(manifest))
    try:
        cluster.kubectl(
            "wait",
            "--for=condition=Established",
            "crd/verticalpodautoscalers.autoscaling.k8s.io",
            "--timeout=60s",
        )
        crd = json.loads(
            cluster.kubectl(
                "get", "crd", "verticalpodautoscalers.autoscaling.k8s.io", "-o", "json"
            ).stdout
        )
        established = [c for c in crd["status"]["conditions"] if c["type"] == "Established"]
        assert "built into this API server" in established[0]["message"]
        assert cluster.kubectl("get", "vpa", "-A").returncode == 0
    finally:
        cluster.kubectl(
            "delete", "crd", "verticalpodautoscalers.autoscaling.k8s.io", "--timeout=60s"
        )
    assert cluster.kubectl("get", "vpa", "-A").returncode == 0  # still served


def test_a_custom_resources_dependents_are_collected_with_it(cluster: Cluster) -> None:
    """An operator's child (a ConfigMap owned by its Database) goes when the Database goes,
    as upstream's garbage collector does for every served kind."""
    cluster.kubectl("apply", "-f", "-", input=CRD)
    try:
        cluster.kubectl(
            "wait", "--for=condition=Established", "crd/databases.e2e.example.com", "--timeout=60s"
        )
        wait_until(
            lambda: _run(cluster, "apply", "-f", "-", input=DATABASE).returncode == 0,
            what="the Database instance applied",
        )
        owner = json.loads(cluster.kubectl("get", "database", "orders", "-o", "json").stdout)
        child = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "orders-config",
                "ownerReferences": [
                    {
                        "apiVersion": "e2e.example.com/v1",
                        "kind": "Database",
                        "name": "orders",
                        "uid": owner["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "data": {"engine": "postgres"},
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(child))
        cluster.kubectl("delete", "database", "orders", "--wait=true")
        wait_until(
            lambda: _run(cluster, "get", "configmap", "orders-config").returncode != 0,
            timeout=60,
            what="the Database's ConfigMap collected",
        )
    finally:
        _run(cluster, "delete", "crd", "databases.e2e.example.com", "--wait=true")
