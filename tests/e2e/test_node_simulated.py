"""End to end: `inplace up --nodes 0 --simulated-nodes 2` and real kubectl."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest

from tests.conftest import Cluster, start_cluster
from tests.e2e.test_node_agent import resize, resize_settled, running, wait_until

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: simulated
  annotations:
    inplace.dev/usage-profile: '{"cpu": "250m", "memory": "64Mi"}'
spec:
  nodeName: sim-2
  containers:
  - name: main
    image: registry.example/app:1
    command: ["java", "-jar", "app.jar"]
    resources:
      requests: {cpu: 500m, memory: 256Mi}
      limits: {cpu: "1", memory: 512Mi}
"""


@pytest.fixture(scope="module")
def sim_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("simcluster") / "data"
    cluster = start_cluster(data_dir, None, "--nodes", "0", "--simulated-nodes", "2")
    try:
        yield cluster
    finally:
        cluster.stop()


def test_simulated_nodes_run_and_resize_pods(sim_cluster: Cluster) -> None:
    def nodes_ready() -> bool:
        out = sim_cluster.kubectl("get", "nodes", "-o", "json", check=False)
        if out.returncode != 0:
            return False
        names = {
            n["metadata"]["name"]
            for n in json.loads(out.stdout)["items"]
            if n["metadata"]["labels"].get("inplace.dev/simulated") == "true"
        }
        return names == {"sim-1", "sim-2"}

    wait_until(nodes_ready, what="two simulated nodes")
    sim_cluster.kubectl("apply", "-f", "-", input=POD)
    pod = wait_until(lambda: running(sim_cluster, "simulated"), what="simulated pod Running")
    assert pod["spec"]["nodeName"] == "sim-2"
    assert (
        "simulated container: java -jar app.jar" in sim_cluster.kubectl("logs", "simulated").stdout
    )
    want = {
        "requests": {"cpu": "750m", "memory": "256Mi"},
        "limits": {"cpu": "1500m", "memory": "512Mi"},
    }
    resize(sim_cluster, "simulated", [{"name": "main", "resources": want}])
    resize_settled(sim_cluster, "simulated", "main", want)

    def top() -> str | None:
        out = sim_cluster.kubectl("top", "pod", "simulated", check=False)
        return out.stdout if out.returncode == 0 and "250m" in out.stdout else None

    assert "64Mi" in wait_until(top, what="kubectl top shows the profile")
    sim_cluster.kubectl("delete", "pod", "simulated", "--wait=true")
