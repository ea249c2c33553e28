"""Calling a webhook: where it is (a URL, or a Service resolved to a ready endpoint), TLS
verified against its ``caBundle``, and a deadline.

Upstream's webhook client (``apiserver/pkg/util/webhook/client.go``) posts to
``https://<service>.<namespace>.svc:<port><path>?timeout=<N>s`` and, with the endpoint
resolver, dials an address from the Service's endpoints while verifying the certificate for
``<service>.<namespace>.svc``. Nothing maintains Endpoints here, so the endpoints are what an
endpoints controller would compute: the ready, running pods the Service selects (their
``podIP``) at the service port's ``targetPort`` (a number, or a container port's name); a
Service without a selector uses its stored Endpoints. The errors read as upstream's
(``Post "https://x.ns.svc:443/mutate?timeout=10s": no endpoints available for service
"x"``), inside the ``failed calling webhook`` the dispatcher adds.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import aiohttp
import orjson

from inplace.api.validation.meta import selector_matches
from inplace.apiserver.webhooks.review import CallFailed

#: Upstream's limit on a webhook's response (``maxRespBodyLength``, 3 MiB).
MAX_RESPONSE_BYTES: Final = 3 * 1024 * 1024


class ClusterObjects(Protocol):
    """Where Services, their Endpoints and pods are read (the watch cache)."""

    def get(
        self, group: str, kind: str, name: str, namespace: str | None = None
    ) -> Mapping[str, Any] | None: ...

    def list_in(self, group: str, kind: str, namespace: str) -> Iterable[Mapping[str, Any]]: ...


class ResolveError(Exception):
    """The Service has no address to call (upstream's resolver's error text)."""


@dataclass(frozen=True)
class Target:
    """Where a call goes: the URL shown in messages, the address dialled, the TLS name."""

    url: str
    connect_url: str
    server_name: str | None


def _port_of(pod: Mapping[str, Any], target: Any) -> int | None:
    if isinstance(target, int):
        return target
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            if port.get("name") == target and isinstance(port.get("containerPort"), int):
                return int(port["containerPort"])
    return None


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or not status.get("podIP"):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )


def resolve_service(objects: ClusterObjects, namespace: str, name: str, port: int) -> str:
    """``host:port`` of a ready endpoint of the Service (upstream's ``ResolveEndpoint``)."""
    service = objects.get("", "Service", name, namespace)
    if service is None:
        raise ResolveError(f'service "{name}" not found')
    spec = service.get("spec") or {}
    service_type = spec.get("type") or "ClusterIP"
    if service_type not in ("ClusterIP", "NodePort", "LoadBalancer"):
        raise ResolveError(f'unsupported service type "{service_type}"')
    service_port = next(
        (p for p in spec.get("ports") or () if p.get("port") == port),
        None,
    )
    if service_port is None:
        raise ResolveError(f'no service port {port} found for service "{name}"')
    selector = spec.get("selector")
    if selector:
        target = service_port.get("targetPort") or port
        for pod in objects.list_in("", "Pod", namespace):
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if not _pod_ready(pod) or not selector_matches({"matchLabels": selector}, labels):
                continue
            pod_port = _port_of(pod, target)
            if pod_port is not None:
                return f"{pod['status']['podIP']}:{pod_port}"
    else:
        endpoints = objects.get("", "Endpoints", name, namespace) or {}
        for subset in endpoints.get("subsets") or ():
            for endpoint_port in subset.get("ports") or ():
                if (endpoint_port.get("name") or "") == (service_port.get("name") or ""):
                    for address in subset.get("addresses") or ():
                        if address.get("ip"):
                            return f"{address['ip']}:{endpoint_port.get('port')}"
    raise ResolveError(f'no endpoints available for service "{name}"')


class WebhookClient:
    """One HTTP session for every webhook, and one TLS context per ``caBundle``."""

    def __init__(self, objects: ClusterObjects) -> None:
        self._objects = objects
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[str, ssl.SSLContext] = {}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _context(self, ca_bundle: str | None) -> ssl.SSLContext:
        """Trusts the ``caBundle`` (base64 PEM) only, or the system's roots without one."""
        key = hashlib.sha256((ca_bundle or "").encode()).hexdigest()
        context = self._contexts.get(key)
        if context is None:
            if ca_bundle:
                pem = base64.b64decode(ca_bundle).decode()
                context = ssl.create_default_context(cadata=pem)
            else:
                context = ssl.create_default_context()
            self._contexts[key] = context
        return context

    def target(self, webhook: str, config: Mapping[str, Any], timeout: int) -> Target:
        query = f"?timeout={timeout}s"
        url = config.get("url")
        if isinstance(url, str):
            return Target(url + query, url + query, None)
        service = config.get("service") or {}
        name, namespace = str(service.get("name")), str(service.get("namespace"))
        port = int(service.get("port") or 443)
        path = str(service.get("path") or "")
        server_name = f"{name}.{namespace}.svc"
        shown = f"https://{server_name}:{port}{path}{query}"
        try:
            address = resolve_service(self._objects, namespace, name, port)
        except ResolveError as exc:
            raise CallFailed(webhook, f'failed to call webhook: Post "{shown}": {exc}') from None
        return Target(shown, f"https://{address}{path}{query}", server_name)

    async def post(
        self, webhook: str, config: Mapping[str, Any], timeout: int, review: Mapping[str, Any]
    ) -> bytes:
        """The response body of a 2xx answer; any failure is a `CallFailed`."""
        target = self.target(webhook, config, timeout)
        try:
            ssl_context = self._context(config.get("caBundle"))
        except (ValueError, ssl.SSLError) as exc:
            raise CallFailed(webhook, f"failed to call webhook: invalid caBundle: {exc}") from None
        if self._session is None:
            self._session = aiohttp.ClientSession()
        prefix = f'failed to call webhook: Post "{target.url}"'
        try:
            async with asyncio.timeout(timeout):
                async with self._session.post(
                    target.connect_url,
                    data=orjson.dumps(review),
                    headers={"Content-Type": "application/json", "Accept": "application/json"},
                    ssl=ssl_context,
                    server_hostname=target.server_name,
                ) as response:
                    body = await response.content.read(MAX_RESPONSE_BYTES + 1)
                    status = response.status
        except TimeoutError:
            raise CallFailed(webhook, f"{prefix}: context deadline exceeded") from None
        except aiohttp.ClientConnectorCertificateError as exc:
            reason = getattr(exc.certificate_error, "verify_message", "") or str(exc)
            raise CallFailed(
                webhook, f"{prefix}: tls: failed to verify certificate: x509: {reason}"
            ) from None
        except aiohttp.ClientConnectorError as exc:
            host = target.connect_url.split("/")[2]
            errno = exc.os_error.errno
            why = os.strerror(errno) if errno else str(exc.os_error)
            raise CallFailed(
                webhook, f"{prefix}: dial tcp {host}: connect: {why.lower()}"
            ) from None
        except (aiohttp.ClientError, ssl.SSLError, OSError) as exc:
            raise CallFailed(webhook, f"{prefix}: {exc}") from None
        if len(body) > MAX_RESPONSE_BYTES:
            raise CallFailed(
                webhook,
                f"failed to call webhook: response body too large: over {MAX_RESPONSE_BYTES} bytes",
            )
        if not 200 <= status < 300:
            text = body.decode("utf-8", "replace")[:512]
            raise CallFailed(
                webhook,
                f'failed to call webhook: an error on the server ("{text}") has prevented '
                "the request from succeeding"
                if status >= 500
                else f"failed to call webhook: the server responded with the status code {status} "
                "but did not return more information",
            )
        return body
