"""End to end: `kubectl exec` and `kubectl cp` against `inplace up` (real kubectl of several
versions, the official Python client, real processes in real cgroups, /proc read directly).

One cluster and one long-running pod for the module. kubectl ≥ 1.30 speaks WebSocket
``v5.channel.k8s.io``; kubectl 1.27-1.29 speak SPDY/3.1 (and newer ones fall back to it): both
paths run here. The terminal test drives kubectl under a real pseudo-terminal.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pwd
import select
import shutil
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.conftest import Cluster, start_cluster
from tests.e2e.test_node_agent import (
    _kill_cgroup_tree,
    apply,
    cgroup_root_of,
    delete,
    node_ready,
    pid_of,
    running,
)
from tests.poll import wait_until

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory").is_dir(),
    reason="needs root and cgroup v1 (the command's cgroups are checked)",
)

SDK_BIN = Path(shutil.which("kubectl") or "/nonexistent").resolve().parent
POD = "box"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MANIFEST = f"""
apiVersion: v1
kind: Pod
metadata: {{name: {POD}}}
spec:
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo pid $$$$; exec sleep 3600"]
    workingDir: /tmp
    env: [{{name: GREETING, value: hello from box}}]
    resources:
      requests: {{cpu: 100m, memory: 64Mi}}
      limits: {{cpu: 500m, memory: 64Mi}}
"""


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("exec") / "data"
    cluster = start_cluster(
        data_dir, None, "--nodes", "1", "--node-cpu", "1", "--node-memory", "1Gi"
    )
    try:
        wait_until(lambda: node_ready(cluster), what="node-1 Ready")
        apply(cluster, MANIFEST)
        wait_until(lambda: running(cluster, POD), what=f"{POD} running")
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            delete(cluster, POD)
        cluster.stop()
        _kill_cgroup_tree(cgroup_root_of(data_dir))


def old_kubectl(version: str) -> str:
    path = SDK_BIN / f"kubectl.{version}"
    if not path.exists():
        pytest.fail(f"{path} is required (the SDK installs kubectl.1.27 … kubectl.1.33)")
    return str(path)


def run(
    cluster: Cluster, argv: list[str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=cluster.env(), timeout=60
    )


def cgroups(text: str) -> dict[str, str]:
    """controllers → path, from /proc/PID/cgroup lines."""
    out = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[1]:
            out[parts[1]] = parts[2]
    return out


def test_exec_runs_in_the_containers_cgroups_environment_and_directory(box: Cluster) -> None:
    main = pid_of(running(box, POD) or {})
    result = box.kubectl("exec", POD, "--", "sh", "-c", "echo $$; cat /proc/self/cgroup")
    pid_line, _, cgroup_text = result.stdout.partition("\n")
    assert int(pid_line) != main
    mine = cgroups(cgroup_text)
    theirs = cgroups(Path(f"/proc/{main}/cgroup").read_text())
    assert mine == theirs
    root = cgroup_root_of(box.data_dir)
    assert mine["memory"].startswith(f"/{root}/node-1/pod") and mine["memory"].endswith("/main")
    env = box.kubectl("exec", POD, "--", "sh", "-c", 'echo "$GREETING"; pwd').stdout
    assert env.splitlines() == ["hello from box", "/tmp"]


def test_the_commands_memory_counts_against_the_containers_limit(box: Cluster) -> None:
    """64Mi for the container: a command that touches 200Mi is OOM-killed there, and the
    container itself keeps running."""
    before = pid_of(running(box, POD) or {})
    result = box.kubectl(
        "exec", POD, "--", "python3", "-c", "b = bytearray(200 * 2**20)", check=False
    )
    assert result.returncode == 137, result.stderr
    assert "command terminated with exit code 137" in result.stderr
    assert pid_of(running(box, POD) or {}) == before


def test_stdin_and_exit_codes(box: Cluster) -> None:
    piped = box.kubectl("exec", "-i", POD, "--", "sh", "-c", "cat; echo end", input="one\ntwo\n")
    assert piped.stdout == "one\ntwo\nend\n"
    failed = box.kubectl(
        "exec", POD, "--", "sh", "-c", "echo out; echo err >&2; exit 7", check=False
    )
    assert failed.returncode == 7
    assert failed.stdout == "out\n"
    assert failed.stderr == "err\ncommand terminated with exit code 7\n"


@pytest.mark.parametrize("version", ["1.27", "1.29"])
def test_kubectl_before_1_30_speaks_spdy(box: Cluster, version: str) -> None:
    result = run(
        box,
        [old_kubectl(version), "exec", "-i", POD, "--", "sh", "-c", "cat; exit 4"],
        stdin="through spdy\n",
    )
    assert result.returncode == 4, result.stderr
    assert result.stdout == "through spdy\n"
    assert "command terminated with exit code 4" in result.stderr


def test_a_terminal_with_its_size(box: Cluster) -> None:
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 111, 0, 0))
    process = subprocess.Popen(
        ["kubectl", "exec", "-it", POD, "--", "sh"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=box.env(),
        start_new_session=True,
    )
    os.close(slave)
    output = bytearray()

    def read_until(marker: bytes) -> None:
        deadline = time.monotonic() + 30  # a hang guard
        while marker not in output and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                with contextlib.suppress(OSError):
                    output.extend(os.read(master, 4096))

    try:
        os.write(master, b"stty size; tty; echo TERM=$TERM; echo first-done\n")
        read_until(b"\nfirst-done")
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 44, 122, 0, 0))
        process.send_signal(signal.SIGWINCH)
        time.sleep(0.5)  # kubectl forwards the new size; nothing is asserted on time
        os.write(master, b"stty size; exit 5\n")
        read_until(b"44 122")
        assert process.wait(30) == 5
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    text = output.decode(errors="replace").replace("\r\n", "\n")
    assert "33 111" in text
    assert "/dev/pts/" in text
    assert "TERM=xterm" in text
    assert "44 122" in text


def test_kubectl_cp_both_ways(box: Cluster, tmp_path: Path) -> None:
    payload = os.urandom(1_500_000)
    local = tmp_path / "payload.bin"
    local.write_bytes(payload)
    box.kubectl("cp", str(local), f"{POD}:/tmp/inplace-cp-test.bin")
    remote = box.kubectl("exec", POD, "--", "sha256sum", "/tmp/inplace-cp-test.bin").stdout
    assert remote.split()[0] == hashlib.sha256(payload).hexdigest()
    back = tmp_path / "back.bin"
    box.kubectl("cp", f"{POD}:/tmp/inplace-cp-test.bin", str(back))
    assert back.read_bytes() == payload
    box.kubectl("exec", POD, "--", "rm", "/tmp/inplace-cp-test.bin")


def test_the_official_python_client(box: Cluster) -> None:
    from kubernetes import client, config
    from kubernetes.stream import stream

    api = client.CoreV1Api(config.new_client_from_config(str(box.kubeconfig)))
    out = stream(
        api.connect_get_namespaced_pod_exec,
        POD,
        "default",
        command=["sh", "-c", "echo hi; echo oops >&2"],
        stdout=True,
        stderr=True,
    )
    assert out == "hi\noops\n"
    session = stream(
        api.connect_get_namespaced_pod_exec,
        POD,
        "default",
        command=["sh", "-c", "read x; echo got $x; exit 3"],
        stdin=True,
        stdout=True,
        stderr=True,
        _preload_content=False,
    )
    session.write_stdin("value\n")
    session.run_forever(timeout=30)
    assert session.read_stdout() == "got value\n"
    assert session.returncode == 3
    session.close()


def test_refusals(box: Cluster) -> None:
    missing = box.kubectl("exec", POD, "-c", "nope", "--", "true", check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        f"Error from server (BadRequest): container nope is not valid for pod {POD}"
    )
    node_config = box.data_dir / "components" / "node-node-1.kubeconfig"
    as_node = subprocess.run(
        ["kubectl", "--kubeconfig", str(node_config), "exec", POD, "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
    )
    assert as_node.returncode == 1
    assert (
        f'pods "{POD}" is forbidden: User "system:node:node-1" cannot create resource '
        '"pods/exec"' in as_node.stderr
    )
    raw = box.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/{POD}/exec", check=False)
    assert "Upgrade request required" in raw.stderr
    discovery = json.loads(box.kubectl("get", "--raw", "/api/v1").stdout)
    assert "pods/exec" in {r["name"] for r in discovery["resources"]}


def test_kubectl_attach_follows_the_container_until_it_exits(box: Cluster) -> None:
    apply(
        box,
        """
apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "i=0; while :; do echo line $i; i=$((i+1)); sleep 0.2; done"]
""",
    )
    try:
        pod = wait_until(lambda: running(box, "talker"), what="talker running")
        attach = subprocess.Popen(
            ["kubectl", "attach", "talker"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=box.env(),
        )
        assert attach.stdout is not None
        first = attach.stdout.readline()
        second = attach.stdout.readline()
        assert first.startswith("line ") and second.startswith("line ")
        assert int(second.split()[1]) == int(first.split()[1]) + 1
        os.kill(pid_of(pod), signal.SIGTERM)  # the container ends: so does the attach
        assert attach.wait(30) == 0, attach.stderr.read() if attach.stderr else ""
    finally:
        delete(box, "talker")


def test_exec_enters_the_containers_sandbox(box: Cluster) -> None:
    """Its user, no_new_privs and mount namespace (a volume the host does not have)."""
    apply(
        box,
        """
apiVersion: v1
kind: Pod
metadata: {name: guarded}
spec:
  securityContext: {runAsUser: 65534, runAsGroup: 65534}
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    securityContext: {allowPrivilegeEscalation: false}
    volumeMounts: [{name: scratch, mountPath: /inplace-exec-volume}]
  volumes: [{name: scratch, emptyDir: {}}]
""",
    )
    try:
        wait_until(lambda: running(box, "guarded"), what="guarded running")
        out = box.kubectl(
            "exec",
            "guarded",
            "--",
            "sh",
            "-c",
            "id -u; grep NoNewPrivs /proc/self/status; ls -d /inplace-exec-volume",
        ).stdout.splitlines()
        assert out == ["65534", "NoNewPrivs:\t1", "/inplace-exec-volume"]
        assert not Path("/inplace-exec-volume").exists()
    finally:
        delete(box, "guarded")


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_home_path_and_hostname_as_the_runtime_sets_them(box: Cluster) -> None:
    """HOME as runc sets it from the /etc/passwd the container sees (root's /root; `/` for a
    uid without an entry; the home of a passwd mounted over the host's), PATH and HOSTNAME as
    containerd's CRI sets them, and the pod's own values win; ``kubectl exec`` gets the same."""
    assert 12345 not in {entry.pw_uid for entry in pwd.getpwall()}
    out = box.kubectl("exec", POD, "--", "sh", "-c", 'echo "$HOME|$PATH|$HOSTNAME"').stdout
    assert out.strip() == f"/root|{DEFAULT_PATH}|{POD}"
    apply(
        box,
        """
apiVersion: v1
kind: Pod
metadata: {name: stranger}
spec:
  hostname: far
  securityContext: {runAsUser: 12345, runAsGroup: 12345}
  containers:
  - {name: main, image: busybox, command: ["sleep", "3600"]}
  - name: own
    image: busybox
    command: ["sleep", "3600"]
    env: [{name: HOME, value: /data}, {name: HOSTNAME, value: mine}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: known-passwd}
data: {passwd: "known:x:12345:12345::/home/known:/bin/sh\\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: known}
spec:
  securityContext: {runAsUser: 12345, runAsGroup: 12345}
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    volumeMounts: [{name: passwd, mountPath: /etc/passwd, subPath: passwd}]
  volumes: [{name: passwd, configMap: {name: known-passwd}}]
""",
    )
    try:
        for pod_name, container, home, hostname in [
            ("stranger", "main", "/", "far"),
            ("stranger", "own", "/data", "mine"),
            ("known", "main", "/home/known", "known"),  # the passwd its sandbox shows
        ]:
            pod = wait_until(partial(running, box, pod_name), what=f"{pod_name} running")
            env = _environ(pid_of(pod, container))
            assert (env["HOME"], env["HOSTNAME"], env["PATH"]) == (home, hostname, DEFAULT_PATH)
            # Nothing else but kubelet's (no LC_CTYPE from the shim's Python, for one).
            assert {k for k in env if not k.startswith("KUBERNETES_")} == {
                "HOME",
                "HOSTNAME",
                "PATH",
            }, env
            out = box.kubectl(
                "exec", pod_name, "-c", container, "--", "sh", "-c", 'id -u; echo "$HOME"'
            ).stdout
            assert out.splitlines() == ["12345", home], (pod_name, container)
    finally:
        delete(box, "stranger")
        delete(box, "known")
        box.kubectl("delete", "configmap", "known-passwd", "--ignore-not-found")
