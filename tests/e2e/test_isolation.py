"""End to end: a pod cannot touch its host (issue 27). A default pod's writes land in its
container's own layer, its PID 1 is its own init, ``/proc/sys`` refuses writes; ``hostPID``
and ``privileged`` give back what they name; a resize keeps the PID the pod prints; ``kubectl
exec`` runs inside the container's namespaces; Pod Security ``baseline`` refuses the host
fields. Real ``inplace up``, real kubectl, real processes; one cluster for the module.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cluster
from tests.e2e.test_node_agent import (
    apply,
    delete,
    pid_of,
    resize,
    resize_settled,
    running,
    status_of,
)
from tests.e2e.test_sandbox import logs, pod_manifest, sandbox_cluster
from tests.poll import wait_until

__all__ = ["sandbox_cluster"]  # the module's cluster fixture (one per module)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory").is_dir(),
    reason="needs root (namespaces) and cgroup v1",
)

PROBE = "/etc/inplace-isolation-probe"
MARK = "/root/inplace-isolation-mark"
SYSCTL = "/proc/sys/kernel/printk_ratelimit"
"""Written with its own value: a no-op that only a writable ``/proc/sys`` accepts."""

PROBES = f"""
echo "pid $$$$"
echo written > {PROBE} && echo "etc $(cat {PROBE})"
if kill -0 1; then echo "pid1 $(tr '\\0' ' ' < /proc/1/cmdline)"; fi
echo "processes $(ls /proc | grep -c '^[0-9]')"
v=$(cat {SYSCTL}); if echo "$v" > {SYSCTL}; then echo sysctl-written; else echo sysctl-refused; fi
echo "hostname $(cat /proc/sys/kernel/hostname)"
"""


def box(name: str, **spec: Any) -> str:
    container = {
        "name": "main",
        "image": "busybox",
        "command": ["sh", "-c", f"{PROBES}\nexec sleep 3600"],
        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
    }
    container.update(spec.pop("container", {}))
    return pod_manifest(name, {"containers": [container], **spec})


def probed(cluster: Cluster, name: str) -> dict[str, str]:
    """What the pod's probes printed, by first word."""

    def finished() -> str | None:
        # the last probe's line (the init's command line, printed before, holds the word too)
        text = logs(cluster, name)
        return text if any(line.startswith("hostname ") for line in text.splitlines()) else None

    out = wait_until(finished, what=f"{name}'s probes")
    return {line.split(" ", 1)[0]: line.partition(" ")[2] for line in out.splitlines() if line}


def in_pod(cluster: Cluster, name: str, script: str, container: str = "main") -> str:
    return str(cluster.kubectl("exec", name, "-c", container, "--", "sh", "-c", script).stdout)


def test_a_default_pod_cannot_touch_its_host(sandbox_cluster: Cluster) -> None:
    cluster = sandbox_cluster
    apply(cluster, box("boxed"))
    try:
        pod = wait_until(lambda: running(cluster, "boxed"), what="boxed Running")
        seen = probed(cluster, "boxed")
        # the write lands in the container's own layer: visible inside, not on the host
        assert seen["etc"] == "written"
        assert not Path(PROBE).exists()
        # PID 1 is the container's own init, not the host's; few processes are visible
        assert seen["pid"] == "2"
        assert "shim" in seen["pid1"] and "systemd" not in seen["pid1"]
        assert int(seen["processes"]) <= 5  # the init, the shell, its pipeline
        host_pid = pid_of(pod)
        nspids = Path(f"/proc/{host_pid}/status").read_text().split("NSpid:")[1].split()[:2]
        assert nspids == [str(host_pid), "2"]
        assert seen["sysctl-refused"] == "" and "sysctl-written" not in seen
        assert seen["hostname"] == "boxed"
        # kubectl exec runs in the container's namespaces and layer
        inside = in_pod(cluster, "boxed", f"cat {PROBE}; ls /proc | grep -c '^[0-9]'")
        assert inside.split()[0] == "written" and int(inside.split()[1]) <= 5
        in_pod(cluster, "boxed", f"echo marked > {MARK}")
        assert in_pod(cluster, "boxed", f"cat {MARK}") == "marked\n"
        assert not Path(MARK).exists()
        # a restarted container starts from a fresh layer
        # PID 1 passes it on; once the workload ends, PID 1 ends and the kernel kills what is
        # left in the namespace, which may be this very `kill` before it exits (137), as
        # under runc
        killed = cluster.kubectl("exec", "boxed", "--", "kill", "1", check=False)
        assert killed.returncode in (0, 137), killed.stderr
        wait_until(
            lambda: (p := running(cluster, "boxed")) and status_of(p, "main")["restartCount"] == 1,
            timeout=90,
            what="boxed restarted",
        )
        assert (
            "No such file"
            in cluster.kubectl("exec", "boxed", "--", "cat", MARK, check=False).stderr
        )
    finally:
        delete(cluster, "boxed")


def test_host_pid_and_privileged_get_what_they_ask(sandbox_cluster: Cluster) -> None:
    cluster = sandbox_cluster
    apply(cluster, box("hostpid", hostPID=True))
    apply(cluster, box("privileged", container={"securityContext": {"privileged": True}}))
    try:
        host = probed(cluster, "hostpid")
        assert int(host["processes"]) > 10  # every host process
        assert host["pid"] != "2" and "shim" not in host["pid1"]
        privileged = probed(cluster, "privileged")
        assert "sysctl-written" in privileged
        assert not Path(PROBE).exists()  # privileged, but still in its own layer
    finally:
        delete(cluster, "hostpid")
        delete(cluster, "privileged")


def test_read_only_root_filesystem_writes_only_its_volumes(sandbox_cluster: Cluster) -> None:
    """A Helm chart's usual hardening: ``readOnlyRootFilesystem`` with an emptyDir at /tmp."""
    cluster = sandbox_cluster
    apply(
        cluster,
        box(
            "readonly",
            container={
                "securityContext": {"readOnlyRootFilesystem": True},
                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
            },
            volumes=[{"name": "tmp", "emptyDir": {}}],
        ),
    )
    try:
        seen = probed(cluster, "readonly")
        assert "etc" not in seen  # the write to /etc was refused
        assert not Path(PROBE).exists()
        assert seen["pid"] == "2" and "sysctl-refused" in seen
        out = in_pod(cluster, "readonly", "echo kept > /tmp/f && cat /tmp/f; touch /x || echo no")
        assert out.split() == ["kept", "no"]
    finally:
        delete(cluster, "readonly")


def test_shared_process_namespace(sandbox_cluster: Cluster) -> None:
    cluster = sandbox_cluster
    sleeper = {"image": "busybox", "command": ["sleep", "3600"]}
    spec = {
        "shareProcessNamespace": True,
        "containers": [{"name": "main", **sleeper}, {"name": "side", **sleeper}],
    }
    apply(cluster, pod_manifest("shared", spec))
    try:
        wait_until(lambda: running(cluster, "shared"), what="shared Running")
        script = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"
        seen = in_pod(cluster, "shared", script, container="side").splitlines()
        assert seen.count("sleep 3600 ") == 2  # both containers' processes, one namespace
        assert "from shim.main import" in seen[0]  # PID 1: the pod's init, the shim's
    finally:
        delete(cluster, "shared")


def test_a_resize_keeps_the_pid_the_pod_prints(sandbox_cluster: Cluster) -> None:
    cluster = sandbox_cluster
    apply(cluster, box("growing"))
    try:
        pod = wait_until(lambda: running(cluster, "growing"), what="growing Running")
        before = pid_of(pod)
        want = {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"memory": "96Mi"}}
        resize(cluster, "growing", [{"name": "main", "resources": want}])
        after = resize_settled(cluster, "growing", "main", want)
        assert pid_of(after) == before
        assert status_of(after, "main")["restartCount"] == 0
        assert in_pod(cluster, "growing", "cat /proc/1/status | grep -c shim || true")
        assert probed(cluster, "growing")["pid"] == "2"
    finally:
        delete(cluster, "growing")


def test_pod_security_baseline_refuses_the_host_fields(sandbox_cluster: Cluster) -> None:
    cluster = sandbox_cluster
    cluster.kubectl("create", "namespace", "guarded")
    cluster.kubectl("label", "namespace", "guarded", "pod-security.kubernetes.io/enforce=baseline")
    try:
        for name, spec in (
            ("hostpid", {"hostPID": True}),
            ("hostipc", {"hostIPC": True}),
            ("hostnet", {"hostNetwork": True}),
            ("priv", {"container": {"securityContext": {"privileged": True}}}),
            ("hostpath", {"volumes": [{"name": "h", "hostPath": {"path": "/etc"}}]}),
        ):
            manifest = json.loads(box(name, **spec))
            manifest["metadata"]["namespace"] = "guarded"
            out = cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest), check=False)
            assert out.returncode != 0 and "violates PodSecurity" in out.stderr, (name, out)
        assert get_pod_names(cluster, "guarded") == []
    finally:
        cluster.kubectl("delete", "namespace", "guarded", "--wait=false", check=False)


def get_pod_names(cluster: Cluster, namespace: str) -> list[str]:
    out = cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout
    return [p["metadata"]["name"] for p in json.loads(out)["items"]]
