"""`inplace up` as a user meets it: clear one-line errors, progress, and where it keeps state."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from inplace.cli.paths import default_data_dir
from inplace.cli.up import host_warnings


def run_up(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inplace", "up", *args], capture_output=True, text=True, timeout=60
    )


def test_a_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_up("--data-dir", str(tmp_path / "data"), "--port", str(port))
    assert result.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_busy_dashboard_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_up("--data-dir", str(tmp_path / "data"), "--port", "0",
                        "--dashboard-port", str(port))  # fmt: skip
    assert result.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "choose another with --dashboard-port" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unusable_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data dir should be")
    result = run_up("--data-dir", str(blocker / "data"), "--port", "0")
    assert result.returncode == 1
    assert f"data dir {blocker / 'data'} is not usable" in result.stderr
    assert "Traceback" not in result.stderr


def test_default_data_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_data_dir() == tmp_path / "inplace"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "inplace"


def test_progress_and_next_steps_are_printed(tmp_path: Path) -> None:
    from tests.conftest import start_cluster

    cluster = start_cluster(tmp_path / "data")
    try:
        output = cluster.output.read_text()
    finally:
        cluster.stop()
    assert "✓ API server on https://127.0.0.1:" in output
    assert "✓ dashboard on http://127.0.0.1:" in output and "/?token=" in output
    assert f"export KUBECONFIG={tmp_path / 'data' / 'kubeconfig.yaml'}" in output
    assert "kubectl get --raw /readyz" in output
    assert cluster.process.returncode == 0


def test_nodes_larger_than_the_host_are_a_warning(tmp_path: Path) -> None:
    cpus = os.cpu_count() or 1
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_up(
            "--data-dir",
            str(tmp_path / "data"),
            "--port",
            str(port),
            "--node-cpu",
            str(cpus + 1),
            "--node-memory",
            "64Ti",
        )
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"inplace up: warning: 1 node(s) of {cpus + 1} CPU exceed this host's {cpus} CPU(s); "
        "pods that fit the nodes may not get the CPU they request"
    )
    assert lines[1].startswith("inplace up: warning: 1 node(s) of 64Ti memory exceed this host's")
    assert "already in use" in lines[2]


def test_host_warnings() -> None:
    cpus = os.cpu_count() or 1
    memory = psutil.virtual_memory().total
    assert host_warnings(1, str(cpus), f"{memory // 2**20}Mi") == []
    assert host_warnings(2, f"{cpus * 500}m", f"{memory // 2 // 2**20}Mi") == []
    [cpu] = host_warnings(2, f"{cpus * 500 + 1}m", "1Mi")
    assert cpu.startswith(f"inplace up: warning: 2 node(s) of {cpus * 500 + 1}m CPU exceed")
    [mem] = host_warnings(3, "1m", f"{memory // 3 + 2**20}")
    assert "3 node(s) of" in mem and "memory exceed this host's" in mem
