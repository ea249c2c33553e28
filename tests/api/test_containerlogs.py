"""Container logs as kubelet serves them: the query, upstream's validation, which run's file,
and reading it (tail, byte limit, since, follow)."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from inplace.api.containerlogs import (
    LogError,
    LogOptions,
    container_log_dir,
    log_file,
    log_options_errors,
    parse_log_options,
    read_log,
)


def test_the_layout_is_kubelets() -> None:
    path = container_log_dir(Path("/logs"), "ns", "p", "u-1", "main")
    assert path == Path("/logs/ns_p_u-1/main")


def test_the_query_decodes_as_upstreams_parameter_codec() -> None:
    options = parse_log_options(
        {
            "container": "main",
            "follow": "true",
            "previous": "1",
            "timestamps": "",
            "tailLines": "5",
            "limitBytes": "100",
            "sinceTime": "2026-01-02T03:04:05Z",
        }
    )
    assert options == LogOptions(
        container="main",
        follow=True,
        previous=True,
        timestamps=True,  # present, empty: true, as Convert_Slice_string_To_bool reads it
        tail_lines=5,
        limit_bytes=100,
        since_time=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    assert parse_log_options({"follow": "False", "previous": "0"}) == LogOptions()
    with pytest.raises(ValueError, match="tailLines: invalid value 'x': must be an integer"):
        parse_log_options({"tailLines": "x"})
    with pytest.raises(ValueError, match="sinceTime"):
        parse_log_options({"sinceTime": "yesterday"})


def test_since_is_the_later_of_since_seconds_and_since_time() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    assert LogOptions(since_seconds=10).since(1000.0) == 990.0
    assert LogOptions(since_time=at).since(0.0) == at.timestamp()
    assert LogOptions().since(1000.0) is None


@pytest.mark.parametrize(
    ("options", "messages"),
    [
        (
            LogOptions(tail_lines=-1),
            ["tailLines: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (LogOptions(limit_bytes=0), ["limitBytes: Invalid value: 0: must be greater than 0"]),
        (LogOptions(since_seconds=0), ["sinceSeconds: Invalid value: 0: must be greater than 0"]),
        (
            LogOptions(since_seconds=5, since_time=datetime(2026, 1, 1, tzinfo=UTC)),
            [": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"],
        ),
        (LogOptions(tail_lines=0, limit_bytes=1, since_seconds=1), []),
    ],
)
def test_validation_is_upstreams(options: LogOptions, messages: list[str]) -> None:
    assert [e.message() for e in log_options_errors(options, stream_field=True)] == messages


def test_a_stream_is_forbidden_at_the_api_server_and_checked_at_the_kubelet() -> None:
    errors = log_options_errors(LogOptions(stream="All"), stream_field=False)
    assert [e.message() for e in errors] == ["stream: Forbidden: may not be specified"]
    assert log_options_errors(LogOptions(stream="Stdout"), stream_field=True) == []
    assert [e.message() for e in log_options_errors(LogOptions(stream="x"), stream_field=True)] == [
        'stream: Unsupported value: "x": supported values: "All", "Stdout", "Stderr"'
    ]
    errors = log_options_errors(LogOptions(stream="Stderr", tail_lines=1), stream_field=True)
    assert [e.message() for e in errors] == [
        ": Forbidden: `tailLines` and specific `stream` are mutually exclusive for now"
    ]


# -- which run ----------------------------------------------------------------------------------


def runs(directory: Path, *indexes: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for index in indexes:
        (directory / f"{index}.log").write_text(f"run {index}\n")
    return directory


TERMINATED = {"terminated": {"exitCode": 3, "reason": "Error"}}


def status(state: dict[str, Any], restarts: int, last: dict[str, Any] | None = None) -> Any:
    return {"name": "main", "state": state, "restartCount": restarts, "lastState": last or {}}


def test_a_running_container_reads_its_run_and_previous_the_one_before(tmp_path: Path) -> None:
    d = runs(tmp_path, 0, 1, 2)
    running = status({"running": {}}, 2, TERMINATED)
    assert log_file(d, "p", "main", running, previous=False) == (d / "2.log", 2)
    assert log_file(d, "p", "main", running, previous=True) == (d / "1.log", 1)


def test_a_container_backing_off_reads_the_run_that_ended_both_ways(tmp_path: Path) -> None:
    """As kubelet: while a crashed container waits to restart, its logs and its previous
    logs are both those of the run that ended (``lastState``)."""
    d = runs(tmp_path, 0, 1)
    waiting = status({"waiting": {"reason": "CrashLoopBackOff"}}, 1, TERMINATED)
    assert log_file(d, "p", "main", waiting, previous=False) == (d / "1.log", 1)
    assert log_file(d, "p", "main", waiting, previous=True) == (d / "1.log", 1)
    # Restarted for a resize: the count moved on before the new run started.
    restarting = status({"waiting": {"reason": "ContainerCreating"}}, 2, TERMINATED)
    assert log_file(d, "p", "main", restarting, previous=False) == (d / "1.log", 1)


def test_a_terminated_container_reads_its_last_run(tmp_path: Path) -> None:
    d = runs(tmp_path, 0)
    done = status(TERMINATED, 0)
    assert log_file(d, "p", "main", done, previous=False) == (d / "0.log", 0)


def test_kubelets_refusals(tmp_path: Path) -> None:
    d = runs(tmp_path)
    cases = [
        (None, False, 'container "main" in pod "p" is waiting to start: ContainerCreating'),
        (
            status({"waiting": {"reason": "ErrImagePull"}}, 0),
            False,
            'container "main" in pod "p" is waiting to start: image can\'t be pulled',
        ),
        (
            status({"running": {}}, 0),
            True,
            'previous terminated container "main" in pod "p" not found',
        ),
        (status(TERMINATED, 0), False, 'container "main" in pod "p" is terminated'),
    ]
    for entry, previous, message in cases:
        with pytest.raises(LogError) as caught:
            log_file(d, "p", "main", entry, previous=previous)
        assert (caught.value.status, caught.value.message) == (400, message)


def test_a_run_whose_status_lags_is_read_all_the_same(tmp_path: Path) -> None:
    d = runs(tmp_path, 0)
    assert log_file(d, "p", "main", None, previous=False) == (d / "0.log", 0)


# -- reading ------------------------------------------------------------------------------------


async def collect(path: Path, options: LogOptions, *, running: bool = False) -> bytes:
    async def still_running() -> bool:
        return running

    return b"".join([chunk async for chunk in read_log(path, options, still_running=still_running)])


async def test_tail_lines_and_limit_bytes(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(b"one\ntwo\nthree\n")
    assert await collect(path, LogOptions()) == b"one\ntwo\nthree\n"
    assert await collect(path, LogOptions(tail_lines=2)) == b"two\nthree\n"
    assert await collect(path, LogOptions(tail_lines=0)) == b""
    assert await collect(path, LogOptions(tail_lines=9)) == b"one\ntwo\nthree\n"
    assert await collect(path, LogOptions(limit_bytes=5)) == b"one\nt"
    assert await collect(path, LogOptions(tail_lines=1, limit_bytes=3)) == b"thr"
    path.write_bytes(b"one\ntwo")  # a last line without its newline is a line
    assert await collect(path, LogOptions(tail_lines=1)) == b"two"


async def test_tail_of_a_log_larger_than_a_block(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    lines = [f"line {i:06d} {'x' * 100}\n".encode() for i in range(2000)]
    path.write_bytes(b"".join(lines))
    assert await collect(path, LogOptions(tail_lines=1500)) == b"".join(lines[-1500:])


async def test_since_a_moment_after_the_last_write_shows_nothing(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(b"old\n")
    os.utime(path, (1000.0, 1000.0))
    assert await collect(path, LogOptions(since_seconds=60)) == b""
    assert await collect(path, LogOptions(since_time=datetime(1970, 1, 1, tzinfo=UTC))) == b"old\n"


async def test_follow_reads_what_is_appended_until_the_run_ends(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(b"first\n")
    running = True

    async def still_running() -> bool:
        return running

    seen: list[bytes] = []

    async def follow() -> None:
        async for chunk in read_log(path, LogOptions(follow=True), still_running=still_running):
            seen.append(chunk)

    task = asyncio.create_task(follow())
    await asyncio.sleep(0.3)
    with open(path, "ab") as handle:
        handle.write(b"second\n")
    await asyncio.sleep(0.5)
    assert b"".join(seen) == b"first\nsecond\n"
    with open(path, "ab") as handle:
        handle.write(b"last words\n")  # written just before the run ended: drained
    running = False
    await asyncio.wait_for(task, 5)
    assert b"".join(seen) == b"first\nsecond\nlast words\n"
    # Following a run that has ended reads it whole and stops.
    assert await collect(path, LogOptions(follow=True, tail_lines=1)) == b"last words\n"
