"""The node agent's container logs: kubelet's ``GET /containerLogs/{namespace}/{pod}/{container}``.

Upstream's kube-apiserver answers ``kubectl logs`` (``pods/log``) by calling the kubelet of the
pod's node there, with the ``PodLogOptions`` as the query (``follow``, ``previous``,
``timestamps``, ``sinceSeconds``, ``sinceTime``, ``tailLines``, ``limitBytes``; kubelet also
takes the old ``tail``, ``all`` meaning every line), and relays the body, the log's raw
text. This route answers on the agent's endpoint (:mod:`.stats`), reading the files the agent
writes in kubelet's layout with the code ``inplace up``'s API server reads them with
(:mod:`inplace.api.containerlogs`, which says what the raw file format means for
``timestamps`` and ``since…``). The pod, its uid and its containers' states come from the
agent's own pod workers (a pod bound here but not admitted yet: from its informer).

**Who may call**: the API server only (:func:`.stats.authenticated`: on HTTPS its client
certificate, on plain HTTP the node's bearer token); anything else is a 401.

**Answers** are kubelet's (``pkg/kubelet/server/server.go``, ``getContainerLogs``), plain
text: a query that does not decode is a 400 ``{"message": "Unable to decode query."}``,
options that fail validation a 422 ``{"message": "Invalid request."}``, a ``stream`` other
than ``All`` a 400 (kubelet without its ``PodLogsQuerySplitStreams`` feature gate); an
unknown pod a 404 ``pod "NAME" does not exist``, an unknown container a 404
``container "C" not found in pod "NAME"``; a log there is none of yet (a container waiting to
start, no previous run) a 400 with kubelet's message, which kube-apiserver relays as a 400
``BadRequest`` with that text. Otherwise a 200, chunked, flushed as the log grows when
following.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from inplace.api.containerlogs import (
    LogError,
    container_log_dir,
    log_file,
    log_options_errors,
    parse_log_options,
    read_log,
)

from .stats import authenticated

__all__ = ["ContainerLogServer", "PodLogs", "PodLogsLookup"]


@dataclass(frozen=True)
class PodLogs:
    """What the route needs of one pod on this node."""

    uid: str
    containers: frozenset[str]
    """Every container of its spec (init containers and sidecars included)."""
    status: Callable[[str], Mapping[str, Any] | None]
    """A container's ``containerStatuses[]`` entry as the agent knows it now (None: none
    yet); asked again while following, so it must reflect the container's current run."""


PodLogsLookup = Callable[[str, str], PodLogs | None]
"""``(namespace, name)`` → the pod bound to this node, or None."""


def _text(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/plain")


class ContainerLogServer:
    """``/containerLogs/…`` on the agent's endpoint (see the module docstring)."""

    def __init__(
        self, log_root: Path, lookup: PodLogsLookup, token: Callable[[], str | None]
    ) -> None:
        self.log_root = log_root
        self.lookup = lookup
        self.token = token

    def routes(self) -> list[tuple[str, str, Callable[[web.Request], Any]]]:
        return [("GET", "/containerLogs/{namespace}/{pod}/{container}", self.serve)]

    async def serve(self, request: web.Request) -> web.StreamResponse:
        if not authenticated(request, self.token()):
            return _text(401, "Unauthorized")
        namespace = request.match_info["namespace"]
        name = request.match_info["pod"]
        container = request.match_info["container"]
        query = dict(request.query)
        tail = query.pop("tail", None)  # kubelet's old name for tailLines; "all": every line
        if tail is not None and tail != "all":
            query["tailLines"] = tail
        elif tail == "all":
            query.pop("tailLines", None)
        try:
            options = parse_log_options(query)
        except ValueError:
            return _text(400, '{"message": "Unable to decode query."}')
        if log_options_errors(options, stream_field=True):
            return _text(422, '{"message": "Invalid request."}')
        if options.stream is not None and options.stream != "All":
            return _text(
                400,
                f'unable to return the given log stream: "{options.stream}". Please enable '
                "PodLogsQuerySplitStreams feature gate in kubelet",
            )
        pod = self.lookup(namespace, name)
        if pod is None:
            return _text(404, f'pod "{name}" does not exist')
        if container not in pod.containers:
            return _text(404, f'container "{container}" not found in pod "{name}"')
        directory = container_log_dir(self.log_root, namespace, name, pod.uid, container)
        try:
            path, run = log_file(
                directory, name, container, pod.status(container), previous=options.previous
            )
        except LogError as exc:
            return _text(exc.status, exc.message)

        async def still_running() -> bool:
            """The run being read is still the container's running one."""
            status = pod.status(container) or {}
            return (
                "running" in (status.get("state") or {})
                and int(status.get("restartCount") or 0) == run
            )

        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            async for chunk in read_log(path, options, still_running=still_running):
                await response.write(chunk)
        except (OSError, asyncio.CancelledError):  # the client left, or the file went
            pass
        return response
