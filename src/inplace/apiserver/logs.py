"""pods/log: a container's log file, whole, its last lines, or followed while it runs.

The node agent writes each container's output in kubelet's `/var/log/pods` layout (one file
per restart) under the log root it shares with the API server, which reads the file itself:
on one host, upstream's proxy to the kubelet is a file read.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from inplace.apiserver.errors import StatusError, bad_request
from inplace.apiserver.httputil import int_param
from inplace.apiserver.rest import REST
from inplace.apiserver.routing import RequestInfo


def log_path(log_root: Path, pod: dict[str, Any], container: str, *, previous: bool) -> Path:
    """Where the node agent writes a container's log: kubelet's /var/log/pods layout."""
    meta = pod["metadata"]
    directory = log_root / f"{meta['namespace']}_{meta['name']}_{meta['uid']}" / container
    restarts = 0
    for status in (pod.get("status", {}).get("containerStatuses") or []) + (
        pod.get("status", {}).get("initContainerStatuses") or []
    ):
        if status.get("name") == container:
            restarts = int(status.get("restartCount", 0))
    index = restarts - 1 if previous else restarts
    if index < 0:
        raise bad_request(
            f'previous terminated container "{container}" in pod "{meta["name"]}" not found'
        )
    return directory / f"{index}.log"


async def follow_file(
    path: Path, *, tail: int | None, follow: bool, still_running: Callable[[], Awaitable[bool]]
) -> AsyncIterator[bytes]:
    """Yield the file's lines (the last `tail` if given), then new ones while `follow`."""

    def read_initial() -> tuple[bytes, int]:
        with open(path, "rb") as handle:
            data = handle.read()
        return data, len(data)

    data, offset = await asyncio.to_thread(read_initial)
    if tail is not None:
        lines = data.splitlines(keepends=True)
        data = b"".join(lines[-tail:]) if tail > 0 else b""
    if data:
        yield data
    while follow:
        await asyncio.sleep(0.2)
        size = os.stat(path).st_size
        if size > offset:
            with open(path, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read(size - offset)
            offset = size
            yield chunk
        elif not await still_running():
            return


class Logs:
    """Serves GET pods/NAME/log (`container`, `previous`, `follow`, `tailLines`)."""

    def __init__(self, rest: REST, log_root: Path) -> None:
        self.rest = rest
        self.log_root = log_root

    async def serve(
        self, request: web.Request, info: RequestInfo, query: dict[str, str]
    ) -> web.StreamResponse:
        assert info.name is not None and info.namespace is not None
        rest, name = self.rest, info.name
        entry = await rest.get_entry(info.kind, info.namespace, name)
        pod = entry.value
        containers = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
        container = query.get("container") or (containers[0] if len(containers) == 1 else None)
        if container is None:
            raise bad_request(
                f"a container name must be specified for pod {name}, choose one of: {containers}"
            )
        all_names = containers + [c["name"] for c in pod.get("spec", {}).get("initContainers", [])]
        if container not in all_names:
            raise bad_request(f"container {container} is not valid for pod {name}")
        path = log_path(self.log_root, pod, container, previous=query.get("previous") == "true")
        if not path.exists():
            raise bad_request(
                f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
            )
        follow = query.get("follow") == "true"
        tail = int_param(query, "tailLines")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)

        async def still_running() -> bool:
            try:
                current = await rest.get_entry(info.kind, info.namespace, name)
            except StatusError:
                return False
            return current.value["metadata"]["uid"] == pod["metadata"]["uid"] and current.value.get(
                "status", {}
            ).get("phase") not in ("Succeeded", "Failed")

        try:
            async for chunk in follow_file(
                path, tail=tail, follow=follow, still_running=still_running
            ):
                await response.write(chunk)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response
