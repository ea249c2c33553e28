"""The data dir's lock: who holds it (from /proc/locks), a second taker refused by name, the
store's lock counting too, and an API server named by the `inplace up` that started it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from inplace.cli.lock import DataDirLock, LockHeld, holder_of, lock_holder
from inplace.cli.paths import DataDir

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)
"""


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def hold(path: Path, holders: list[subprocess.Popen[str]], *argv: str) -> subprocess.Popen[str]:
    """A process (whose command line ends with ``argv``) holding ``path`` locked."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), *argv], stdout=subprocess.PIPE, text=True
    )
    holders.append(process)
    assert process.stdout is not None and process.stdout.readline() == "locked\n"
    return process


def test_nobody_holds_a_missing_or_free_lock(tmp_path: Path) -> None:
    assert lock_holder(tmp_path / "none") is None
    (tmp_path / "free").write_text("123\n")
    assert lock_holder(tmp_path / "free") is None
    assert (tmp_path / "free").read_text() == "123\n"  # looking writes nothing


def test_the_holder_is_named_with_its_command(
    tmp_path: Path, holders: list[subprocess.Popen[str]]
) -> None:
    process = hold(tmp_path / "up.lock", holders, "--marker")
    holder = lock_holder(tmp_path / "up.lock")
    assert holder is not None and holder.pid == process.pid
    assert holder.command.endswith("--marker")
    assert str(holder) == f"process {process.pid} ({holder.command})"


def test_a_second_taker_is_refused_by_name(tmp_path: Path) -> None:
    data = DataDir(tmp_path)
    first = DataDirLock(data)
    first.acquire()
    try:
        lines = data.up_lock.read_text().splitlines()
        assert lines[0] == str(os.getpid())
        with pytest.raises(LockHeld) as refused:
            DataDirLock(data).acquire()
        assert refused.value.holder.pid == os.getpid()
        assert holder_of(data) == refused.value.holder
    finally:
        first.release()
    assert holder_of(data) is None
    again = DataDirLock(data)
    again.acquire()  # free again once released (or once the holder died)
    again.release()


def test_an_api_server_on_the_store_holds_the_data_dir(
    tmp_path: Path, holders: list[subprocess.Popen[str]]
) -> None:
    data = DataDir(tmp_path)
    data.apiserver.mkdir()
    server = hold(data.store_lock, holders, "apiserver")
    holder = holder_of(data)
    assert holder is not None and holder.pid == server.pid
    assert holder.command.endswith("apiserver")


def test_an_api_server_is_named_by_its_inplace_up(
    tmp_path: Path, holders: list[subprocess.Popen[str]]
) -> None:
    """Stopping the API server alone would only get it restarted by its supervisor."""
    data = DataDir(tmp_path)
    data.apiserver.mkdir()
    code = (
        "import subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, '-c', {HOLD!r}, {str(data.store_lock)!r}])\n"
        "child.wait()\n"
    )
    supervisor = subprocess.Popen(
        [sys.executable, "-c", code, "inplace", "up", "--data-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    holders.append(supervisor)
    assert supervisor.stdout is not None and supervisor.stdout.readline() == "locked\n"
    holder = holder_of(data)
    assert holder is not None and holder.pid == supervisor.pid
    assert "inplace up --data-dir" in holder.command
    for child in psutil.Process(supervisor.pid).children():
        child.kill()
