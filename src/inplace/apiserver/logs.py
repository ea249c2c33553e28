"""pods/log: a container's log file, whole, its last lines, or followed while it runs.

The node agent writes each container's output in kubelet's `/var/log/pods` layout (one file
per restart) under the log root it shares with the API server, which reads the file itself:
on one host, upstream's proxy to the kubelet is a file read. The query, the choice of the file
and the reading are kubelet's, shared with the node agent's `/containerLogs` endpoint
(:mod:`inplace.api.containerlogs`); the options are validated as upstream's API server does
(422 `PodLogOptions "NAME" is invalid`, before the pod is read), and what the kubelet would
refuse is the 400 upstream's API server relays with the kubelet's message.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp import web

from inplace.api import validation
from inplace.api.containerlogs import (
    LogError,
    container_log_dir,
    log_file,
    log_options_errors,
    parse_log_options,
    read_log,
)
from inplace.apiserver.errors import StatusError, bad_request
from inplace.apiserver.rest import REST
from inplace.apiserver.routing import RequestInfo


def container_status(pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    """The container's entry in the pod's (init) container statuses, if reported."""
    status = pod.get("status") or {}
    for entry in (status.get("containerStatuses") or []) + (
        status.get("initContainerStatuses") or []
    ):
        if entry.get("name") == container:
            return dict(entry)
    return None


class Logs:
    """Serves GET pods/NAME/log (see the module docstring)."""

    def __init__(self, rest: REST, log_root: Path) -> None:
        self.rest = rest
        self.log_root = log_root

    async def serve(
        self, request: web.Request, info: RequestInfo, query: dict[str, str]
    ) -> web.StreamResponse:
        assert info.name is not None and info.namespace is not None
        rest, name = self.rest, info.name
        try:
            options = parse_log_options(query)
        except ValueError as exc:
            raise bad_request(str(exc)) from None
        errors = log_options_errors(options, stream_field=False)
        if errors:
            invalid = validation.ValidationError("PodLogOptions", name, errors)
            raise StatusError(422, invalid.message(), body=invalid.status())
        entry = await rest.get_entry(info.kind, info.namespace, name)
        pod = entry.value
        meta = pod["metadata"]
        containers = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
        container = options.container or (containers[0] if len(containers) == 1 else None)
        if container is None:
            raise bad_request(
                f"a container name must be specified for pod {name}, choose one of: {containers}"
            )
        all_names = containers + [c["name"] for c in pod.get("spec", {}).get("initContainers", [])]
        if container not in all_names:
            raise bad_request(f"container {container} is not valid for pod {name}")
        directory = container_log_dir(
            self.log_root, meta["namespace"], meta["name"], meta["uid"], container
        )
        try:
            path, run = log_file(
                directory,
                name,
                container,
                container_status(pod, container),
                previous=options.previous,
            )
        except LogError as exc:
            raise bad_request(exc.message) from None
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)

        async def still_running() -> bool:
            """The run being read is still the container's running one."""
            try:
                current = await rest.get_entry(info.kind, info.namespace, name)
            except StatusError:
                return False
            if current.value["metadata"]["uid"] != meta["uid"]:
                return False
            status = container_status(current.value, container) or {}
            return (
                "running" in (status.get("state") or {})
                and int(status.get("restartCount") or 0) == run
            )

        try:
            async for chunk in read_log(path, options, still_running=still_running):
                await response.write(chunk)
        except (OSError, asyncio.CancelledError):  # the client left, or the file went
            pass
        return response
