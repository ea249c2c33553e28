"""End to end: pods run as the user they ask for, in a mount namespace of their own, with
their volumes (real `inplace up`, real kubectl, real processes, /proc read directly).

One cluster for the module; every test deletes its pods, and the module checks at the end
that no mount and no directory of a pod is left on the host.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import Cluster, reap_mounts, start_cluster
from tests.e2e.test_node_agent import (
    NODE,
    _kill_cgroup_tree,
    apply,
    cgroup_root_of,
    delete,
    get_pod,
    node_ready,
    pid_of,
    running,
    status_of,
)
from tests.poll import wait_until

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory").is_dir(),
    reason="needs root (mount namespaces, other users) and cgroup v1",
)

DEFAULT_CAPS = 0xA80425FB
"""containerd's default set: CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID
SETFCAP SETPCAP NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE."""


@pytest.fixture(scope="module")
def sandbox_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("sandbox") / "data"
    cluster = start_cluster(
        data_dir, None, "--nodes", "1", "--node-cpu", "1", "--node-memory", "1Gi"
    )
    try:
        wait_until(lambda: node_ready(cluster), what="node-1 Ready")
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.kubectl(
                "delete", "pods", "--all", "--wait=true", "--timeout=30s", check=False, timeout=40
            )
        cluster.stop()
        _kill_cgroup_tree(cgroup_root_of(data_dir))
        reap_mounts(data_dir)  # even when a test failed


def proc_status(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def logs(cluster: Cluster, name: str, container: str = "main") -> str:
    return cluster.kubectl("logs", name, "-c", container, check=False).stdout


def pod_manifest(name: str, spec: dict[str, Any]) -> str:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 2, **spec},
    }
    return json.dumps(body)


def sleeper(name: str = "main", script: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": "busybox",
        "command": ["sh", "-c", f"{script}\nexec sleep 3600"],
        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}},
        **extra,
    }


def host_mounts_under(path: Path) -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split(" ")[4]
        if point.startswith(str(path)):
            points.append(point)
    return points


def test_hamster_runs_as_nobody_with_reduced_privileges(sandbox_cluster: Cluster) -> None:
    spec = {
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "fsGroup": 2000,
            "supplementalGroups": [3000],
        },
        "containers": [
            sleeper(
                script="id; pwd",
                securityContext={
                    "allowPrivilegeEscalation": False,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
            )
        ],
    }
    apply(sandbox_cluster, pod_manifest("hamster", spec))
    try:
        pod = wait_until(lambda: running(sandbox_cluster, "hamster"), what="hamster Running")
        status = proc_status(pid_of(pod))
        assert status["Uid"].split() == ["65534"] * 4
        assert status["Gid"].split() == ["65534"] * 4
        assert sorted(int(g) for g in status["Groups"].split()) == [2000, 3000, 65534]
        assert int(status["CapEff"], 16) == 0  # a non-root user gets nothing effective
        assert int(status["CapPrm"], 16) == 0
        assert int(status["CapBnd"], 16) == DEFAULT_CAPS
        assert status["NoNewPrivs"] == "1"
        assert status["Seccomp"] == "2"  # filter mode
        out = wait_until(
            lambda: "\n/" in logs(sandbox_cluster, "hamster") and logs(sandbox_cluster, "hamster")
        )
        assert out.startswith("uid=65534")
        # its own mount namespace, in which the cluster's data dir is empty
        pid = pid_of(pod)
        assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        assert os.listdir(f"/proc/{pid}/root{sandbox_cluster.data_dir}") == []
    finally:
        delete(sandbox_cluster, "hamster")


def test_run_as_non_root_without_a_user_fails_with_upstream_reason(
    sandbox_cluster: Cluster,
) -> None:
    spec = {"securityContext": {"runAsNonRoot": True}, "containers": [sleeper()]}
    apply(sandbox_cluster, pod_manifest("rootless", spec))
    try:

        def config_error() -> dict[str, Any] | None:
            pod = get_pod(sandbox_cluster, "rootless")
            statuses = pod["status"].get("containerStatuses") or []
            waiting = statuses[0]["state"].get("waiting") if statuses else None
            if waiting and waiting.get("reason") == "CreateContainerConfigError":
                return pod
            return None

        pod = wait_until(config_error, what="CreateContainerConfigError")
        uid = pod["metadata"]["uid"]
        assert status_of(pod, "main")["state"]["waiting"]["message"] == (
            "container has runAsNonRoot and image will run as root "
            f'(pod: "rootless_default({uid})", container: main)'
        )
        assert pod["status"]["phase"] == "Pending"
        events = sandbox_cluster.kubectl(
            "get", "events", "--field-selector", "involvedObject.name=rootless", "-o", "json"
        ).stdout
        assert "Error: container has runAsNonRoot and image will run as root" in events
    finally:
        delete(sandbox_cluster, "rootless")


def test_capabilities_add_drop_and_privileged(sandbox_cluster: Cluster) -> None:
    spec = {
        "containers": [
            sleeper(
                "narrow",
                securityContext={"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}},
            ),
            sleeper("wide", securityContext={"privileged": True}),
            sleeper("default"),
        ]
    }
    apply(sandbox_cluster, pod_manifest("caps", spec))
    try:
        pod = wait_until(lambda: running(sandbox_cluster, "caps"), what="caps Running")
        narrow = proc_status(pid_of(pod, "narrow"))
        assert int(narrow["CapEff"], 16) == 1 << 10  # root keeps what its bounding set allows
        assert int(narrow["CapBnd"], 16) == 1 << 10
        wide = proc_status(pid_of(pod, "wide"))  # everything the agent (root) holds
        assert wide["CapEff"] == wide["CapBnd"] == proc_status(os.getpid())["CapBnd"]
        assert wide["Seccomp"] == "0"
        default = proc_status(pid_of(pod, "default"))
        assert int(default["CapEff"], 16) == DEFAULT_CAPS
        assert default["Uid"].split()[0] == "0" and default["NoNewPrivs"] == "0"
    finally:
        delete(sandbox_cluster, "caps")


def test_volumes_shared_private_and_cleaned_up(sandbox_cluster: Cluster, tmp_path: Path) -> None:
    host_dir = tmp_path / "host-data"
    host_dir.mkdir()
    (host_dir / "greeting").write_text("hello from the host\n")
    spec = {
        "securityContext": {"fsGroup": 2000},
        "volumes": [
            {"name": "shared", "emptyDir": {}},
            {"name": "memory", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
            {"name": "host", "hostPath": {"path": str(host_dir), "type": "Directory"}},
            {
                "name": "info",
                "downwardAPI": {
                    "items": [
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                        {
                            "path": "cpu",
                            "resourceFieldRef": {
                                "containerName": "writer",
                                "resource": "requests.cpu",
                                "divisor": "1m",
                            },
                        },
                    ]
                },
            },
        ],
        "containers": [
            sleeper(
                "writer",
                script="echo written > /shared/note; echo mem > /mem/note",
                volumeMounts=[
                    {"name": "shared", "mountPath": "/shared"},
                    {"name": "memory", "mountPath": "/mem"},
                    {"name": "host", "mountPath": "/etc/host-data", "readOnly": True},
                    {"name": "info", "mountPath": "/etc/podinfo"},
                ],
            ),
            sleeper(
                "reader",
                volumeMounts=[
                    {"name": "shared", "mountPath": "/shared"},
                    {"name": "memory", "mountPath": "/mem"},
                    {"name": "shared", "mountPath": "/sub", "subPath": "nested/dir"},
                ],
            ),
        ],
    }
    apply(sandbox_cluster, pod_manifest("vols", spec))
    apply(sandbox_cluster, pod_manifest("other", {"containers": [sleeper()]}))
    node_dir = sandbox_cluster.data_dir / "nodes" / NODE
    try:
        pod = wait_until(lambda: running(sandbox_cluster, "vols"), what="vols Running")
        other = wait_until(lambda: running(sandbox_cluster, "other"), what="other Running")
        reader = f"/proc/{pid_of(pod, 'reader')}/root"
        writer = f"/proc/{pid_of(pod, 'writer')}/root"
        assert wait_until(lambda: Path(f"{reader}/shared/note").exists(), what="shared note")
        assert Path(f"{reader}/shared/note").read_text() == "written\n"
        assert Path(f"{reader}/mem/note").read_text() == "mem\n"  # one tmpfs for both
        assert Path(f"{writer}/etc/host-data/greeting").read_text() == "hello from the host\n"
        assert Path(f"{reader}/sub").is_dir()
        assert os.stat(f"{reader}/shared").st_gid == 2000
        assert Path(f"{writer}/etc/podinfo/cpu").read_text() == "50"
        with pytest.raises(OSError):  # readOnly
            Path(f"{writer}/etc/host-data/new").write_text("x")
        # the mounts exist only in the pod's namespace, not on the host nor in another pod
        assert not Path("/etc/host-data").exists() and not Path("/shared").exists()
        assert not Path(f"/proc/{pid_of(other)}/root/shared").exists()
        assert host_mounts_under(node_dir / "pods") == []
        # the downward API file follows the pod's labels, swapped atomically
        sandbox_cluster.kubectl("label", "pod", "vols", "tier=gold")
        labels = Path(f"{writer}/etc/podinfo/labels")
        wait_until(lambda: 'tier="gold"' in labels.read_text(), what="labels file updated")
        assert os.path.islink(f"{writer}/etc/podinfo/..data")
        uid = pod["metadata"]["uid"]
    finally:
        delete(sandbox_cluster, "vols")
        delete(sandbox_cluster, "other")
    assert not (node_dir / "pods" / uid).exists()
    assert host_mounts_under(node_dir / "sandboxes" / uid) == []
    assert host_mounts_under(node_dir / "pods") == []
    assert (host_dir / "greeting").exists()  # a hostPath is the host's: it stays


def test_agent_sigkill_keeps_the_pod_namespace(sandbox_cluster: Cluster) -> None:
    spec = {
        "volumes": [{"name": "scratch", "emptyDir": {"medium": "Memory"}}],
        "containers": [
            sleeper(
                script="echo kept > /scratch/note",
                volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}],
            )
        ],
    }
    apply(sandbox_cluster, pod_manifest("steady", spec))
    pid_file = sandbox_cluster.data_dir / "nodes" / NODE / "agent.pid"
    try:
        pod = wait_until(lambda: running(sandbox_cluster, "steady"), what="steady Running")
        pid = pid_of(pod)
        namespace = os.readlink(f"/proc/{pid}/ns/mnt")
        note = Path(f"/proc/{pid}/root/scratch/note")
        wait_until(note.exists, what="note written")
        agent = int(pid_file.read_text())
        os.kill(agent, signal.SIGKILL)

        def restarted() -> int | None:
            with contextlib.suppress(OSError, ValueError):
                new = int(pid_file.read_text())
                if new != agent and psutil.pid_exists(new):
                    return new
            return None

        wait_until(restarted, what="the supervisor restarted the agent")
        assert psutil.Process(pid).is_running()
        assert note.read_text() == "kept\n"
        assert os.readlink(f"/proc/{pid}/ns/mnt") == namespace
        # the new agent re-adopted the pod: it reports it running with the same process
        wait_until(
            lambda: (
                pid_of(get_pod(sandbox_cluster, "steady")) == pid
                and running(sandbox_cluster, "steady")
            ),
            what="steady re-adopted",
        )
        uid = pod["metadata"]["uid"]
    finally:
        delete(sandbox_cluster, "steady")
    node_dir = sandbox_cluster.data_dir / "nodes" / NODE
    assert host_mounts_under(node_dir / "sandboxes" / uid) == []
    assert not (node_dir / "pods" / uid).exists()


def test_bad_volume_input_is_a_422_naming_the_field(sandbox_cluster: Cluster) -> None:
    cases = [
        (
            {
                "volumes": [{"name": "v", "emptyDir": {}}],
                "containers": [
                    sleeper(volumeMounts=[{"name": "v", "mountPath": "/v", "subPath": "../x"}])
                ],
            },
            'spec.containers[0].volumeMounts.subPath: Invalid value: "../x": must not '
            "contain '..'",
        ),
        (
            {"containers": [sleeper(volumeMounts=[{"name": "nope", "mountPath": "/v"}])]},
            'spec.containers[0].volumeMounts[0].name: Not found: "nope"',
        ),
        (
            {
                "volumes": [
                    {"name": "keys", "hostPath": {"path": str(sandbox_cluster.data_dir / "pki")}}
                ],
                "containers": [sleeper()],
            },
            f'spec.volumes[0].hostPath.path: Invalid value: "{sandbox_cluster.data_dir}/pki": '
            "must not be the cluster's data directory",
        ),
    ]
    for spec, message in cases:
        out = sandbox_cluster.kubectl(
            "apply", "-f", "-", input=pod_manifest("bad", spec), check=False
        )
        assert out.returncode != 0
        assert "is invalid" in out.stderr and message in out.stderr, out.stderr
