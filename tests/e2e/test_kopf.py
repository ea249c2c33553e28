"""An operator written with kopf (the Python operator framework) runs against `inplace up`.

The operator below is a real `kopf run` process with peering on (kopf's own `KopfPeering`
CRDs, as kopf's documentation gives them, and a peering object it keeps its heartbeat in).
It serves its own CRD, `Greeting`: a create handler whose return value kopf writes into the
status subresource, a field handler reconciling a spec change, and a delete handler, for
which kopf puts its finalizer on every Greeting; deleting one runs the handler before the
object goes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Cluster
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

NAMESPACE = "kopf-e2e"

#: kopf's peering CRDs, as its documentation gives them (docs/peering.rst, peering.yaml).
PEERING_CRDS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusterkopfpeerings.kopf.dev
spec:
  scope: Cluster
  group: kopf.dev
  names:
    kind: ClusterKopfPeering
    plural: clusterkopfpeerings
    singular: clusterkopfpeering
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: kopfpeerings.kopf.dev
spec:
  scope: Namespaced
  group: kopf.dev
  names:
    kind: KopfPeering
    plural: kopfpeerings
    singular: kopfpeering
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
"""

GREETING_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: greetings.kopf.example.com
spec:
  scope: Namespaced
  group: kopf.example.com
  names:
    kind: Greeting
    plural: greetings
    singular: greeting
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                who: {type: string}
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
"""

OPERATOR = """
import pathlib

import kopf

MARKS = pathlib.Path({marks!r})


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.watching.server_timeout = 30
    settings.persistence.finalizer = "kopf.example.com/cleanup"


@kopf.on.create("kopf.example.com", "v1", "greetings")
def create_fn(spec, name, **_):
    return {{"message": f"hello {{spec['who']}}"}}


@kopf.on.field("kopf.example.com", "v1", "greetings", field="spec.who")
def who_changed(new, name, **_):
    return {{"message": f"hello again {{new}}"}}


@kopf.on.delete("kopf.example.com", "v1", "greetings")
def delete_fn(name, **_):
    (MARKS / f"deleted-{{name}}").write_text("cleaned up")
"""


@pytest.fixture(scope="module")
def operator(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The kopf operator, running with peering against the cluster; yields where it marks."""
    tmp = tmp_path_factory.mktemp("kopf")
    cluster.kubectl("create", "namespace", NAMESPACE)
    cluster.kubectl("apply", "-f", "-", input=PEERING_CRDS + "---\n" + GREETING_CRD)
    for crd in (
        "kopfpeerings.kopf.dev",
        "clusterkopfpeerings.kopf.dev",
        "greetings.kopf.example.com",
    ):
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=60s")
    wait_until(
        lambda: (
            cluster.kubectl(
                "apply",
                "-f",
                "-",
                input=json.dumps(
                    {
                        "apiVersion": "kopf.dev/v1",
                        "kind": "KopfPeering",
                        "metadata": {"name": "e2e", "namespace": NAMESPACE},
                    }
                ),
                check=False,
            ).returncode
            == 0
        ),
        what="the KopfPeering object created",
    )
    script = tmp / "operator.py"
    script.write_text(OPERATOR.format(marks=str(tmp)))
    log = tmp / "operator.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kopf",
                "run",
                str(script),
                f"--namespace={NAMESPACE}",
                "--peering=e2e",
                "--verbose",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=cluster.env(),
        )
    try:
        yield tmp
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        cluster.kubectl("delete", "namespace", NAMESPACE, "--timeout=120s", check=False)
        cluster.kubectl(
            "delete",
            "crd",
            "greetings.kopf.example.com",
            "kopfpeerings.kopf.dev",
            "clusterkopfpeerings.kopf.dev",
            "--timeout=60s",
            check=False,
        )


def _greeting(cluster: Cluster, name: str) -> dict[str, object] | None:
    result = cluster.kubectl("get", "greeting", name, "-n", NAMESPACE, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def test_a_kopf_operator_reconciles_with_status_finalizers_and_peering(
    cluster: Cluster, operator: Path
) -> None:
    manifest = {
        "apiVersion": "kopf.example.com/v1",
        "kind": "Greeting",
        "metadata": {"name": "world", "namespace": NAMESPACE},
        "spec": {"who": "world"},
    }
    wait_until(
        lambda: (
            cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest), check=False).returncode
            == 0
        ),
        what="the Greeting applied",
    )

    def greeted(message: str) -> bool:
        obj = _greeting(cluster, "world") or {}
        status = obj.get("status") or {}
        assert isinstance(status, dict)
        handlers = [v for v in status.values() if isinstance(v, dict)]
        return any(h.get("message") == message for h in handlers)

    wait_until(lambda: greeted("hello world"), timeout=120, what="kopf's status write")
    obj = _greeting(cluster, "world")
    assert obj is not None
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    assert "kopf.example.com/cleanup" in meta["finalizers"]

    peering = json.loads(
        cluster.kubectl("get", "kopfpeering", "e2e", "-n", NAMESPACE, "-o", "json").stdout
    )
    assert peering.get("status"), "kopf keeps its heartbeat in the peering object"

    cluster.kubectl(
        "patch",
        "greeting",
        "world",
        "-n",
        NAMESPACE,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"who": "kopf"}}),
    )
    wait_until(lambda: greeted("hello again kopf"), timeout=120, what="the field handler")

    cluster.kubectl("delete", "greeting", "world", "-n", NAMESPACE, "--timeout=120s")
    assert (operator / "deleted-world").read_text() == "cleaned up"
    assert _greeting(cluster, "world") is None
