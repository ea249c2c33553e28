"""Shared fixtures: an in-process API server, and a real `inplace up` driven by real kubectl."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import hypothesis
import pytest

from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.server import APIServer, APIServerConfig
from inplace.cli.paths import DataDir
from inplace.cli.up import cgroup_root_of

# Hypothesis's health checks on time are timing assertions: on a shared 2-core machine a
# strategy that draws in milliseconds can take a second. Every test gets the same profile.
hypothesis.settings.register_profile(
    "shared-machine",
    deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow],
)
hypothesis.settings.load_profile("shared-machine")


@dataclass
class InProcessServer:
    server: APIServer
    url: str
    token: str
    tokens: TokenFile

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}


@pytest.fixture
async def apiserver(tmp_path: Path) -> AsyncIterator[InProcessServer]:
    """An API server in this event loop on an ephemeral port (plain HTTP, token auth on)."""
    tokens = TokenFile(tmp_path / "tokens.csv")
    admin = tokens.token_for("admin", (MASTERS_GROUP,))
    server = APIServer(
        APIServerConfig(
            data_dir=tmp_path / "apiserver", port=0, tokens=tokens, log_root=tmp_path / "logs"
        )
    )
    await server.start()
    try:
        yield InProcessServer(server, f"http://127.0.0.1:{server.port}", admin, tokens)
    finally:
        await server.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Cluster:
    """A running `inplace up` and how to reach it."""

    data_dir: Path
    port: int
    process: subprocess.Popen[bytes]
    output: Path

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig.yaml"

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["kubectl", *args],
            input=input,
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
            )
        return result

    def stop(self, sig: int = signal.SIGTERM, *, clean: bool = True) -> None:
        """Stop `inplace up`. Workloads outlive their cluster by design, so a clean stop first
        deletes every pod (the node agents stop their processes), and afterwards anything
        still in this cluster's cgroups is killed and the cgroups removed."""
        if self.process.poll() is None:
            if clean and sig == signal.SIGTERM:
                deleted = self.kubectl(
                    "delete",
                    "pods",
                    "--all",
                    "-A",
                    "--wait=true",
                    "--timeout=60s",
                    check=False,
                    timeout=90,
                )
                if deleted.returncode != 0:
                    self.warn_stuck_pods()
            self.process.send_signal(sig)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if clean and sig == signal.SIGTERM and self.process.poll() is not None:
            reap_cgroups(self.data_dir)
            reap_mounts(self.data_dir)

    def warn_stuck_pods(self) -> None:
        """Name the pods a clean stop's delete waited for in vain (a pod stuck
        ``Terminating`` is a bug, in a test that leaves it or in the cluster)."""
        left = self.kubectl(
            "get",
            "pods",
            "-A",
            "-o",
            "custom-columns=POD:.metadata.name,NS:.metadata.namespace,NODE:.spec.nodeName,"
            "DELETED:.metadata.deletionTimestamp,FINALIZERS:.metadata.finalizers",
            "--no-headers",
            check=False,
        )
        warnings.warn(
            f"pods still there after the teardown's 60 s delete:\n{left.stdout}{left.stderr}",
            stacklevel=3,
        )


def reap_mounts(directory: Path) -> None:
    """Lazily unmount whatever is mounted under ``directory`` (pod namespace pins and their
    directory), deepest first: pods' sandboxes outlive their agent by design."""
    prefix = str(directory.resolve())
    points = [
        line.split(" ")[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split(" ")[4] == prefix or line.split(" ")[4].startswith(prefix + "/")
    ]
    for point in sorted(set(points), key=lambda p: -p.count("/")):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


def reap_cgroups(data_dir: Path) -> None:
    """Kill every process left in a cluster's cgroups and remove them, leaf first."""
    root = cgroup_root_of(DataDir(data_dir.resolve()))
    for hierarchy in Path("/sys/fs/cgroup").glob("*"):
        top = hierarchy / root
        if not top.is_dir():
            continue
        directories = sorted(
            (p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
        )
        for directory in [*directories, top]:
            with contextlib.suppress(OSError):
                for pid in (directory / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
        for directory in [*directories, top]:
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # the kernel frees a cgroup once its killed tasks exit
        with contextlib.suppress(OSError):
            top.parent.rmdir()  # the shared `inplace` level, unless another cluster uses it


def start_cluster(
    data_dir: Path, port: int | None = None, *extra: str, env: dict[str, str] | None = None
) -> Cluster:
    """Start `inplace up` as a user would and wait until kubectl sees /readyz ok. ``env``
    adds to the environment `inplace up` (and so every component) runs with."""
    port = port or free_port()
    output = data_dir.parent / f"{data_dir.name}-up-{port}.log"
    with open(output, "ab") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inplace",
                "up",
                "--data-dir",
                str(data_dir),
                "--port",
                str(port),
                *extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    cluster = Cluster(data_dir, port, process, output)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"inplace up exited early:\n{output.read_text()}")
        if cluster.kubeconfig.exists() and "ready in" in output.read_text():
            result = cluster.kubectl("get", "--raw", "/readyz", check=False, timeout=10)
            if result.stdout.strip() == "ok":
                return cluster
        time.sleep(0.2)
    cluster.stop(signal.SIGKILL)
    raise AssertionError(f"inplace up did not become ready:\n{output.read_text()}")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One `inplace up` shared by the end-to-end tests of a session."""
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("cluster") / "data"
    running = start_cluster(data_dir)
    try:
        yield running
    finally:
        running.stop()
