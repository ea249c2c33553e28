"""Container logs as kubelet serves them: the query, which file, and reading it.

Shared by the API server (``pods/log``, :mod:`inplace.apiserver.logs`, which reads the files
itself on one host) and the node agent (kubelet's ``/containerLogs/{ns}/{pod}/{container}``,
:mod:`inplace.node.containerlogs`, which upstream's kube-apiserver calls). Both read the files
the node agent writes, in kubelet's ``/var/log/pods`` layout: one file per run of a container,
``<log-root>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log``.

* :func:`parse_log_options` reads ``PodLogOptions`` from a query (``container``, ``follow``,
  ``previous``, ``timestamps``, ``sinceSeconds``, ``sinceTime``, ``tailLines``,
  ``limitBytes``, ``stream``), booleans as upstream's parameter codec reads them (absent,
  ``false`` or ``0`` is false; anything else true); :func:`log_options_errors` is upstream's
  ``ValidatePodLogOptions``.
* :func:`log_file` picks the run to read from a container's status as kubelet's
  ``validateContainerLogStatus`` does: the running (or last) run, or with ``previous`` the run
  ``lastState`` describes; and refuses with kubelet's messages (:class:`LogError`).
* :func:`read_log` yields the file's bytes: the last ``tailLines`` lines, at most
  ``limitBytes`` bytes, then, with ``follow``, what is appended while the run goes on, until it
  has ended and the file is drained.

**The file format differs from kubelet's.** A container's stdout and stderr go straight into
its file (the workload writes to it, with no logger process in between that could die and
take the workload with it), so the file is the raw output, which is also what kubelet answers
with after it strips the CRI format's ``<time> <stream> <tag>`` prefix. What the prefix would
have carried is not recorded: ``timestamps=true`` adds no time stamps; ``sinceSeconds`` and
``sinceTime`` compare the file's last write with the moment (a file last written before it
shows nothing but what is appended while following; otherwise every line is shown, as no
line's own time is known); ``stream`` can only be ``All`` (the streams are interleaved in
one file; kubelet without its ``PodLogsQuerySplitStreams`` feature gate refuses the others
the same way).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Final

from inplace.api.timestamps import parse_rfc3339
from inplace.api.validation.errors import FieldError, forbidden, invalid, not_supported

__all__ = [
    "LOG_STREAMS",
    "LogError",
    "LogOptions",
    "container_log_dir",
    "log_file",
    "log_options_errors",
    "parse_log_options",
    "read_log",
]

LOG_STREAMS: Final = ("All", "Stdout", "Stderr")
"""``PodLogOptions.stream``'s values."""
_CHUNK: Final = 64 * 1024
_POLL: Final = 0.2
"""Seconds between looks at a followed file."""


class LogError(Exception):
    """A log the request cannot have: the HTTP status kubelet answers with, and its message
    (which upstream's API server relays as the message of a 400 ``BadRequest``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class LogOptions:
    """Upstream's ``PodLogOptions`` (v1), as a query carries them."""

    container: str | None = None
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    since_time: datetime | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None
    stream: str | None = None

    def since(self, now: float) -> float | None:
        """The Unix time before which nothing is shown (kubelet's ``ReadLogs``: ``sinceTime``
        when it is after ``now - sinceSeconds``), or None."""
        since = None if self.since_seconds is None else now - self.since_seconds
        if self.since_time is not None:
            at = self.since_time.timestamp()
            if since is None or at > since:
                since = at
        return since


def _bool(query: Mapping[str, str], name: str) -> bool:
    """Upstream's ``Convert_Slice_string_To_bool``: absent, ``0`` or ``false`` (any case) is
    false, anything else (an empty value too) true."""
    value = query.get(name)
    return value is not None and value != "0" and value.lower() != "false"


def _int(query: Mapping[str, str], name: str) -> int | None:
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}: invalid value {value!r}: must be an integer") from None


def parse_log_options(query: Mapping[str, str]) -> LogOptions:
    """The options a query names; ValueError naming the parameter that does not decode."""
    since_time = None
    raw_time = query.get("sinceTime")
    if raw_time not in (None, "", "null"):
        try:
            since_time = parse_rfc3339(raw_time)
        except ValueError:
            raise ValueError(
                f"sinceTime: invalid value {raw_time!r}: must be an RFC 3339 time"
            ) from None
    return LogOptions(
        container=query.get("container") or None,
        follow=_bool(query, "follow"),
        previous=_bool(query, "previous"),
        timestamps=_bool(query, "timestamps"),
        since_seconds=_int(query, "sinceSeconds"),
        since_time=since_time,
        tail_lines=_int(query, "tailLines"),
        limit_bytes=_int(query, "limitBytes"),
        stream=query.get("stream"),
    )


def log_options_errors(options: LogOptions, *, stream_field: bool) -> list[FieldError]:
    """Upstream's ``ValidatePodLogOptions``. ``stream_field``: kubelet's check of the v1
    options (a ``stream``, when given, must be one of :data:`LOG_STREAMS`, and a specific one
    excludes ``tailLines``); without it, the API server's with the ``PodLogsQuerySplitStreams``
    feature gate off (its default in 1.36), where ``stream`` may not be given at all."""
    errors: list[FieldError] = []
    if options.tail_lines is not None and options.tail_lines < 0:
        errors.append(
            invalid("tailLines", options.tail_lines, "must be greater than or equal to 0")
        )
    if options.limit_bytes is not None and options.limit_bytes < 1:
        errors.append(invalid("limitBytes", options.limit_bytes, "must be greater than 0"))
    if options.since_seconds is not None and options.since_time is not None:
        errors.append(
            forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified")
        )
    elif options.since_seconds is not None and options.since_seconds < 1:
        errors.append(invalid("sinceSeconds", options.since_seconds, "must be greater than 0"))
    if options.stream is not None:
        if not stream_field:
            errors.append(forbidden("stream", "may not be specified"))
        elif options.stream not in LOG_STREAMS:
            errors.append(not_supported("stream", options.stream, LOG_STREAMS))
        elif options.stream != "All" and options.tail_lines is not None:
            errors.append(
                forbidden("", "`tailLines` and specific `stream` are mutually exclusive for now")
            )
    return errors


def container_log_dir(log_root: Path, namespace: str, pod: str, uid: str, container: str) -> Path:
    """Where a container's runs write: ``<log-root>/<namespace>_<pod>_<uid>/<container>``."""
    return log_root / f"{namespace}_{pod}_{uid}" / container


_WAITING_MESSAGES: Final = {
    "ErrImagePull": "image can't be pulled",
    "ImagePullBackOff": "trying and failing to pull image",
}


def log_file(
    directory: Path,
    pod: str,
    container: str,
    status: Mapping[str, Any] | None,
    *,
    previous: bool,
) -> tuple[Path, int]:
    """The file to read and the run it is (its restart count), from the container's
    ``containerStatuses[]`` entry (None: not reported yet), as kubelet picks the container:
    with ``previous``, the run ``lastState.terminated`` describes; otherwise the running run,
    else the last one that ran. :class:`LogError` (400) with kubelet's message otherwise.

    A run's number is its restart count. The run ``lastState`` describes is the one before the
    current, except while the container waits to be restarted after it ended (crash back-off),
    when the current count is still the ended run's and its file exists."""
    status = status or {}
    state: Mapping[str, Any] = status.get("state") or {}
    restarts = int(status.get("restartCount") or 0)
    last = (status.get("lastState") or {}).get("terminated")

    def run(index: int) -> Path:
        return directory / f"{index}.log"

    def last_run() -> int:
        return restarts if "waiting" in state and run(restarts).exists() else restarts - 1

    if previous:
        index = last_run() if last else -1
        if index < 0 or not run(index).exists():
            raise LogError(
                400, f'previous terminated container "{container}" in pod "{pod}" not found'
            )
        return run(index), index
    if "running" in state or ("terminated" in state and run(restarts).exists()):
        index = restarts
    elif last:
        index = last_run()
    elif "terminated" in state:
        raise LogError(400, f'container "{container}" in pod "{pod}" is terminated')
    else:
        # Waiting for its first run. The file of a run that started before its status said
        # so (the API server's view lags the node's) is read all the same.
        index = restarts
        if not run(index).exists():
            reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
            why = _WAITING_MESSAGES.get(reason, reason)
            raise LogError(
                400, f'container "{container}" in pod "{pod}" is waiting to start: {why}'
            )
    if index < 0 or not run(index).exists():
        raise LogError(
            400, f'container "{container}" in pod "{pod}" is waiting to start - no logs yet'
        )
    return run(index), index


def _tail_start(handle: IO[bytes], size: int, lines: int) -> int:
    """The offset of the last ``lines`` lines (a last line without its newline counts), read
    backwards in blocks as kubelet's ``findTailLineStartIndex`` does."""
    if lines == 0:
        return size
    end = size
    if size:
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            end = size - 1
    found = 0
    while end > 0:
        start = max(0, end - _CHUNK)
        handle.seek(start)
        block = handle.read(end - start)
        at = len(block)
        while (at := block.rfind(b"\n", 0, at)) >= 0:
            found += 1
            if found == lines:
                return start + at + 1
        end = start
    return 0


def _start(handle: IO[bytes], options: LogOptions, since: float | None) -> int:
    stat = os.fstat(handle.fileno())
    if since is not None and stat.st_mtime < since:
        return stat.st_size
    if options.tail_lines is not None:
        return _tail_start(handle, stat.st_size, options.tail_lines)
    return 0


def _read(handle: IO[bytes], offset: int, size: int) -> bytes:
    handle.seek(offset)
    return handle.read(size)


async def read_log(
    path: Path,
    options: LogOptions,
    *,
    still_running: Callable[[], Awaitable[bool]],
    now: Callable[[], float] = time.time,
) -> AsyncIterator[bytes]:
    """The file's bytes as ``options`` ask (see the module docstring); with ``follow``, what
    is appended until ``still_running()`` is false, then what is left. The file is read in a
    thread, a block at a time, so a large log costs neither the loop nor memory."""
    handle = await asyncio.to_thread(open, path, "rb")
    try:
        offset = await asyncio.to_thread(_start, handle, options, options.since(now()))
        remain = options.limit_bytes
        draining = False
        while remain is None or remain > 0:
            size = _CHUNK if remain is None else min(_CHUNK, remain)
            chunk = await asyncio.to_thread(_read, handle, offset, size)
            if chunk:
                offset += len(chunk)
                if remain is not None:
                    remain -= len(chunk)
                yield chunk
                continue
            if not options.follow or draining:
                return
            if not await still_running():
                draining = True  # what the run wrote before it ended, then stop
                continue
            await asyncio.sleep(_POLL)
    finally:
        handle.close()
