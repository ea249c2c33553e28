"""Durability: every write acknowledged before a SIGKILL is there after reopening."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import inplace
from inplace.store import Store

WRITER = Path(__file__).with_name("crash_writer.py")
ACKS_BEFORE_KILL = 400


def run_and_kill(path: Path, round_: int) -> tuple[set[str], int]:
    """Start the writer, read acks, SIGKILL it mid-stream; return (acked keys, acked counter)."""
    env = dict(os.environ)
    src = str(Path(inplace.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    child = subprocess.Popen(
        [sys.executable, str(WRITER), str(path), str(round_)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    keys: set[str] = set()
    counter = 0
    assert child.stdout is not None
    try:
        for _ in range(ACKS_BEFORE_KILL):
            line = child.stdout.readline()
            assert line, f"writer exited early: {child.stderr.read() if child.stderr else ''}"
            kind, _, payload = line.strip().partition(" ")
            if kind == "K":
                keys.add(payload)
            else:
                counter = max(counter, int(payload))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # Lines already in the pipe were acknowledged before the kill: they count too.
    for line in child.stdout:
        kind, _, payload = line.strip().partition(" ")
        if kind == "K" and payload.startswith("/crash/"):
            keys.add(payload)
        elif kind == "C" and payload.isdigit():
            counter = max(counter, int(payload))
    child.stdout.close()
    if child.stderr is not None:
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    return keys, counter


async def check(path: Path, keys: set[str], counter: int) -> int:
    store = await Store.open(path)
    try:
        stored = {e.key for e in (await store.list("/crash/r")).items}
        missing = keys - stored
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:3]}"
        entry = await store.get("/crash/counter")
        assert entry is not None and entry.value["n"] >= counter
        # The log is intact: revisions are dense and the store still takes writes.
        revision, entries = await store.snapshot()
        assert revision == store.current_revision
        assert (await store.create("/after/crash", {})).revision == revision + 1
        await store.delete("/after/crash")
        return len(entries)
    finally:
        await store.close()


def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    all_keys: set[str] = set()
    for round_ in range(2):
        keys, counter = run_and_kill(path, round_)
        assert len(keys) > 100
        all_keys |= keys
        asyncio.run(check(path, all_keys, counter))
