"""The async Kubernetes API client: one HTTP connection pool, plain JSON dicts in and out.

Design:

* Objects are the dicts the API sends (decoded with orjson); nothing is re-modelled on the way,
  so the client works unchanged against any Kubernetes API server, ours or upstream's.
* A resource type is addressed by a small frozen :class:`Resource` (group, version, plural,
  namespaced, kind); module constants cover the types this project uses, and any other
  type is one ``Resource(...)`` away. No discovery round-trips.
* :meth:`Client.request` is the one lowest layer: every verb goes through it, and every non-2xx
  answer is turned into the :mod:`~inplace.client.errors` tree from the ``kind: Status`` body.
  Transport failures become :class:`~inplace.client.errors.APIConnectionError`.
* :meth:`Client.watch` decodes the newline-delimited JSON event stream incrementally (no line
  length limit) and raises an ``ERROR`` event's Status as the mapped exception, so a watch
  from a compacted resourceVersion surfaces as :class:`~inplace.client.errors.APIGoneError`.
  It is an async generator: close it (``contextlib.aclosing``) to release the connection early.
* Namespaces are explicit. For a namespaced type, single-object calls take ``namespace=`` or
  the body's ``metadata.namespace``; list and watch without a namespace span all namespaces.
  ``client.namespace`` holds the configuration's default for callers that want it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import quote

import aiohttp
import orjson

from inplace import __version__

from .config import ClusterConfig
from .errors import APIConnectionError, APIError, APIGoneError, error_from_status

__all__ = [
    "CONFIGMAPS",
    "DEPLOYMENTS",
    "ENDPOINTS",
    "ENDPOINTSLICES",
    "EVENTS",
    "JOBS",
    "LEASES",
    "MUTATINGWEBHOOKCONFIGURATIONS",
    "NAMESPACES",
    "NODEMETRICS",
    "NODES",
    "PERSISTENTVOLUMECLAIMS",
    "PERSISTENTVOLUMES",
    "PODDISRUPTIONBUDGETS",
    "PODMETRICS",
    "PODS",
    "PRIORITYCLASSES",
    "REPLICASETS",
    "SECRETS",
    "SERVICEACCOUNTS",
    "SERVICES",
    "STORAGECLASSES",
    "VERTICALPODAUTOSCALERCHECKPOINTS",
    "VERTICALPODAUTOSCALERS",
    "Client",
    "PatchType",
    "Resource",
    "WatchEvent",
    "WatchEventType",
]

PatchType = Literal["merge", "strategic", "json", "apply"]
WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
"""Patch type → Content-Type header the API server dispatches on."""

USER_AGENT = f"inplace/{__version__}"

_WATCH_GRACE_SECONDS = 30.0  # client-side slack on top of the server-side watch timeout


@dataclasses.dataclass(frozen=True, slots=True)
class Resource:
    """One API resource type, e.g. ``Resource("apps", "v1", "deployments", True, "Deployment")``.

    ``group`` is ``""`` for the core (``/api/v1``) group.
    """

    group: str
    version: str
    plural: str
    namespaced: bool
    kind: str

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` of objects of this type: ``v1`` or ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self,
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """URL path of the collection, an object, or an object's subresource."""
        if namespace is not None and not self.namespaced:
            raise ValueError(f"{self.plural} is cluster-scoped; namespace must not be given")
        if subresource is not None and name is None:
            raise ValueError("a subresource needs an object name")
        parts = [self.base_path]
        if namespace is not None:
            parts.append(f"namespaces/{_seg(namespace)}")
        parts.append(self.plural)
        if name is not None:
            parts.append(_seg(name))
        if subresource is not None:
            parts.append(subresource)
        return "/".join(parts)


def _seg(value: str) -> str:
    if not value:
        raise ValueError("empty name or namespace")
    return quote(value, safe="")


PODS = Resource("", "v1", "pods", True, "Pod")
NODES = Resource("", "v1", "nodes", False, "Node")
NAMESPACES = Resource("", "v1", "namespaces", False, "Namespace")
EVENTS = Resource("", "v1", "events", True, "Event")
CONFIGMAPS = Resource("", "v1", "configmaps", True, "ConfigMap")
SECRETS = Resource("", "v1", "secrets", True, "Secret")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", True, "ServiceAccount")
SERVICES = Resource("", "v1", "services", True, "Service")
ENDPOINTS = Resource("", "v1", "endpoints", True, "Endpoints")
ENDPOINTSLICES = Resource("discovery.k8s.io", "v1", "endpointslices", True, "EndpointSlice")
LEASES = Resource("coordination.k8s.io", "v1", "leases", True, "Lease")
DEPLOYMENTS = Resource("apps", "v1", "deployments", True, "Deployment")
REPLICASETS = Resource("apps", "v1", "replicasets", True, "ReplicaSet")
STATEFULSETS = Resource("apps", "v1", "statefulsets", True, "StatefulSet")
DAEMONSETS = Resource("apps", "v1", "daemonsets", True, "DaemonSet")
CONTROLLERREVISIONS = Resource("apps", "v1", "controllerrevisions", True, "ControllerRevision")
JOBS = Resource("batch", "v1", "jobs", True, "Job")
CRONJOBS = Resource("batch", "v1", "cronjobs", True, "CronJob")
PODDISRUPTIONBUDGETS = Resource("policy", "v1", "poddisruptionbudgets", True, "PodDisruptionBudget")
PERSISTENTVOLUMES = Resource("", "v1", "persistentvolumes", False, "PersistentVolume")
PERSISTENTVOLUMECLAIMS = Resource("", "v1", "persistentvolumeclaims", True, "PersistentVolumeClaim")
STORAGECLASSES = Resource("storage.k8s.io", "v1", "storageclasses", False, "StorageClass")
PRIORITYCLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", False, "PriorityClass")
MUTATINGWEBHOOKCONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    False,
    "MutatingWebhookConfiguration",
)
CUSTOMRESOURCEDEFINITIONS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    False,
    "CustomResourceDefinition",
)
VERTICALPODAUTOSCALERS = Resource(
    "autoscaling.k8s.io", "v1", "verticalpodautoscalers", True, "VerticalPodAutoscaler"
)
VERTICALPODAUTOSCALERCHECKPOINTS = Resource(
    "autoscaling.k8s.io",
    "v1",
    "verticalpodautoscalercheckpoints",
    True,
    "VerticalPodAutoscalerCheckpoint",
)
WORKLOAD_RESOURCES: Mapping[str, Resource] = {
    "Deployment": DEPLOYMENTS,
    "ReplicaSet": REPLICASETS,
    "StatefulSet": STATEFULSETS,
    "DaemonSet": DAEMONSETS,
    "Job": JOBS,
    "CronJob": CRONJOBS,
}
"""The workload kinds by name: the owners a pod's controller chain walks through and the
targets a VerticalPodAutoscaler may name (``inplace.api.vpa_targets.SELECTOR_KINDS``)."""
PODMETRICS = Resource("metrics.k8s.io", "v1beta1", "pods", True, "PodMetrics")
NODEMETRICS = Resource("metrics.k8s.io", "v1beta1", "nodes", False, "NodeMetrics")


@dataclasses.dataclass(frozen=True, slots=True)
class WatchEvent:
    """One event of a watch stream. ``object`` is the object (a Status for ERROR); for
    BOOKMARK only its ``metadata.resourceVersion`` is meaningful."""

    type: WatchEventType
    object: dict[str, Any]

    @property
    def resource_version(self) -> str | None:
        rv = (self.object.get("metadata") or {}).get("resourceVersion")
        return rv if isinstance(rv, str) and rv else None


def _params(**kwargs: Any) -> dict[str, str]:
    """Query parameters with Kubernetes spelling: None dropped, booleans lower-case."""
    out: dict[str, str] = {}
    for key, value in kwargs.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = str(value)
    return out


class Client:
    """Async Kubernetes API client. Use as ``async with Client(config) as client:``.

    One :class:`aiohttp.ClientSession` (a keep-alive connection pool of ``connection_limit``)
    serves every request, including long-running watches.
    """

    def __init__(
        self,
        config: ClusterConfig,
        *,
        user_agent: str | None = None,
        timeout: float = 60.0,
        connection_limit: int = 100,
    ) -> None:
        self.config = config
        self.namespace = config.namespace
        self.user_agent = user_agent or USER_AGENT
        self._timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=min(timeout, 10.0))
        self._connection_limit = connection_limit
        self._ssl = config.ssl_context()
        self._session: aiohttp.ClientSession | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        self._ensure_session()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection pool (and any watch still open on it)."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._connection_limit,
                ssl=self._ssl if self._ssl is not None else True,
            )
            auth = None
            if self.config.username is not None and not self.config.bearer_token():
                auth = aiohttp.BasicAuth(self.config.username, self.config.password or "")
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                auth=auth,
                headers={"User-Agent": self.user_agent, "Accept": "application/json, */*"},
            )
        return self._session

    # -- lowest layer ----------------------------------------------------------------------

    def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        token = self.config.bearer_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if extra:
            headers.update(extra)
        return headers

    def _encode(self, body: Any, content_type: str | None) -> tuple[bytes | None, str | None]:
        if body is None:
            return None, content_type
        if isinstance(body, bytes):
            return body, content_type or "application/json"
        if isinstance(body, str):
            return body.encode(), content_type or "application/json"
        return orjson.dumps(body), content_type or "application/json"

    async def _open(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None,
        body: Any,
        content_type: str | None,
        headers: Mapping[str, str] | None,
        timeout: aiohttp.ClientTimeout | None = None,
    ) -> aiohttp.ClientResponse:
        """Send a request; return the 2xx response (unread) or raise the mapped error."""
        session = self._ensure_session()
        data, ctype = self._encode(body, content_type)
        hdrs = self._headers(headers)
        if ctype is not None:
            hdrs["Content-Type"] = ctype
        try:
            resp = await session.request(
                method,
                self.config.server + path,
                params=params or None,
                data=data,
                headers=hdrs,
                timeout=timeout or self._timeout,
                server_hostname=self.config.server_hostname(),
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise APIConnectionError(f"{method} {path}: {exc or type(exc).__name__}") from exc
        if resp.status >= 300:
            try:
                raw = await resp.read()
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raw = b""
                cause: BaseException | None = exc
            else:
                cause = None
            finally:
                resp.release()
            raise _error(resp, raw) from cause
        return resp

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request to ``path`` (e.g. ``/api/v1/pods``) and return the decoded answer.

        ``body`` is JSON-encoded unless it is ``bytes``/``str``. A JSON answer is decoded; any
        other answer is returned as text. Non-2xx raises the mapped :class:`APIError`.
        """
        resp = await self._open(
            method, path, params=params, body=body, content_type=content_type, headers=headers
        )
        try:
            raw = await resp.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise APIConnectionError(f"{method} {path}: {exc or type(exc).__name__}") from exc
        finally:
            resp.release()
        if not raw:
            return None
        if "json" in (resp.content_type or ""):
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass
        return raw.decode("utf-8", errors="replace")

    async def stream(
        self,
        path: str,
        *,
        method: str = "GET",
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> AsyncGenerator[str, None]:
        """Yield a text response line by line as it arrives (e.g. ``pods/NAME/log?follow=true``).

        Lines keep their ``\\n``; a final unterminated line is yielded at the end.
        """
        ct = aiohttp.ClientTimeout(total=timeout, sock_connect=10.0)
        resp = await self._open(
            method, path, params=params, body=None, content_type=None, headers=headers, timeout=ct
        )
        try:
            async for line in _lines(resp, f"{method} {path}"):
                yield line.decode("utf-8", errors="replace")
        finally:
            _finish(resp)

    # -- verbs -----------------------------------------------------------------------------

    async def get(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """GET one object (or one of its subresources, e.g. ``status``)."""
        path = res.path(namespace=_ns(res, namespace, None), name=name, subresource=subresource)
        result: dict[str, Any] = await self.request("GET", path)
        return result

    async def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        """LIST one page; returns the List object (``items``, ``metadata.resourceVersion``,
        ``metadata.continue``). ``namespace`` None lists across all namespaces."""
        params = _params(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
        )
        if continue_:
            params["continue"] = continue_
        result: dict[str, Any] = await self.request(
            "GET", res.path(namespace=namespace), params=params
        )
        return result

    async def list_all(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int | None = 500,
    ) -> dict[str, Any]:
        """LIST every page, following ``continue`` tokens; returns one List object.

        All pages are read at the first page's resourceVersion (the server encodes it in the
        token), so the result is one consistent snapshot. If a token expires mid-way (410), the
        whole list is read again without paging, as client-go's pager does.
        """
        items: list[dict[str, Any]] = []
        first: dict[str, Any] | None = None
        token: str | None = None
        limit = page_size
        while True:
            try:
                page = await self.list(
                    res,
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    limit=limit,
                    continue_=token,
                )
            except APIGoneError:
                if token is None:
                    raise
                items, first, token, limit = [], None, None, None
                continue
            if first is None:
                first = page
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                break
        meta = dict(first.get("metadata") or {})
        meta.pop("continue", None)
        meta.pop("remainingItemCount", None)
        return {
            "apiVersion": first.get("apiVersion", res.api_version),
            "kind": first.get("kind", f"{res.kind}List"),
            "metadata": meta,
            "items": items,
        }

    async def create(
        self,
        res: Resource,
        body: dict[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """POST a new object. With ``subresource`` (e.g. ``eviction``, ``binding``) the object
        named by ``body.metadata.name`` is the parent."""
        ns = _ns(res, namespace, body)
        name = _name(body) if subresource is not None else None
        path = res.path(namespace=ns, name=name, subresource=subresource)
        params = _params(fieldManager=field_manager, dryRun="All" if dry_run else None)
        result: dict[str, Any] = await self.request("POST", path, params=params, body=body)
        return result

    async def update(
        self,
        res: Resource,
        body: dict[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PUT a whole object (named by ``body.metadata.name``); its
        ``metadata.resourceVersion`` makes it a compare-and-swap (409 on mismatch)."""
        ns = _ns(res, namespace, body)
        path = res.path(namespace=ns, name=_name(body), subresource=subresource)
        params = _params(fieldManager=field_manager, dryRun="All" if dry_run else None)
        result: dict[str, Any] = await self.request("PUT", path, params=params, body=body)
        return result

    async def patch(
        self,
        res: Resource,
        name: str,
        body: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PATCH an object: ``merge`` (RFC 7386), ``strategic``, ``json`` (RFC 6902; ``body`` is
        a list of operations) or ``apply`` (server-side apply; ``field_manager`` defaults to
        ``inplace``). E.g. ``patch(PODS, name, {...}, subresource="resize")``."""
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"unknown patch type {patch_type!r}") from None
        if patch_type == "apply" and field_manager is None:
            field_manager = "inplace"
        path = res.path(namespace=_ns(res, namespace, None), name=name, subresource=subresource)
        params = _params(fieldManager=field_manager, force=force, dryRun="All" if dry_run else None)
        result: dict[str, Any] = await self.request(
            "PATCH", path, params=params, body=body, content_type=content_type
        )
        return result

    async def resize_pod(
        self, namespace: str, name: str, body: Any, *, dry_run: bool = False
    ) -> dict[str, Any]:
        """Ask for a resize: a strategic-merge PATCH of ``pods/<name>/resize`` (Kubernetes ≥ 1.33),
        the one call every component that resizes a pod makes. Returns the patched pod."""
        return await self.patch(
            PODS,
            name,
            body,
            patch_type="strategic",
            namespace=namespace,
            subresource="resize",
            dry_run=dry_run,
        )

    async def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """DELETE an object; returns what the server answers (the object while it finalizes,
        or a Status). ``preconditions`` is ``{"uid": ..., "resourceVersion": ...}``."""
        path = res.path(namespace=_ns(res, namespace, None), name=name)
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if dry_run:
            options["dryRun"] = ["All"]
        result: dict[str, Any] = await self.request("DELETE", path, body=options)
        return result

    async def watch(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        resource_version: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Stream changes after ``resource_version`` (None/"" = from "now", upstream semantics).

        Yields ADDED/MODIFIED/DELETED/BOOKMARK events; an ERROR event raises the mapped error
        (410 → :class:`APIGoneError`: relist). Ends when the server closes the stream (e.g.
        after ``timeout_seconds``); a broken stream raises :class:`APIConnectionError`.
        """
        params = _params(
            watch=True,
            resourceVersion=resource_version or None,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            allowWatchBookmarks=allow_bookmarks or None,
            timeoutSeconds=timeout_seconds,
        )
        total = None if timeout_seconds is None else timeout_seconds + _WATCH_GRACE_SECONDS
        ct = aiohttp.ClientTimeout(total=total, sock_connect=10.0)
        path = res.path(namespace=namespace)
        resp = await self._open(
            "GET", path, params=params, body=None, content_type=None, headers=None, timeout=ct
        )
        try:
            async for line in _lines(resp, f"watch {path}"):
                line = line.strip()
                if not line:
                    continue
                try:
                    raw = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise APIConnectionError(f"watch {path}: undecodable event: {exc}") from exc
                event_type = raw.get("type") if isinstance(raw, dict) else None
                obj = raw.get("object") if isinstance(raw, dict) else None
                if not isinstance(obj, dict) or event_type not in _EVENT_TYPES:
                    raise APIConnectionError(f"watch {path}: malformed event {line[:200]!r}")
                if event_type == "ERROR":
                    code = obj.get("code")
                    raise error_from_status(code if isinstance(code, int) else 500, obj)
                yield WatchEvent(event_type, obj)
        finally:
            _finish(resp)


_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})


async def _lines(resp: aiohttp.ClientResponse, what: str) -> AsyncIterator[bytes]:
    """Split a streamed body on ``\\n`` without aiohttp's readline size limit."""
    buf = bytearray()
    try:
        async for chunk in resp.content.iter_any():
            buf.extend(chunk)
            start = 0
            while (end := buf.find(b"\n", start)) >= 0:
                yield bytes(buf[start : end + 1])
                start = end + 1
            del buf[:start]
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise APIConnectionError(f"{what}: stream broke: {exc or type(exc).__name__}") from exc
    except asyncio.CancelledError:
        raise
    if buf:
        yield bytes(buf)


def _finish(resp: aiohttp.ClientResponse) -> None:
    """Return a fully read stream's connection to the pool; close one abandoned mid-way."""
    if resp.content.at_eof():
        resp.release()
    else:
        resp.close()


def _error(resp: aiohttp.ClientResponse, raw: bytes) -> APIError:
    body: dict[str, Any] | None = None
    if raw:
        try:
            decoded = orjson.loads(raw)
        except orjson.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict):
            body = decoded
    retry_after: float | None = None
    header = resp.headers.get("Retry-After")
    if header:
        try:
            retry_after = float(header)
        except ValueError:
            retry_after = None
    err = error_from_status(resp.status, body, retry_after=retry_after)
    if not err.message:
        text = raw.decode("utf-8", errors="replace").strip()[:500]
        err.message = text or (resp.reason or "")
    return err


def _ns(res: Resource, namespace: str | None, body: dict[str, Any] | None) -> str | None:
    """The namespace of a single-object request: explicit, else the body's, else an error."""
    if not res.namespaced:
        return namespace  # None, or an explicit one that Resource.path rejects
    if namespace is None and body is not None:
        namespace = (body.get("metadata") or {}).get("namespace") or None
    if namespace is None:
        raise ValueError(f"{res.plural} is namespaced: pass namespace= or set metadata.namespace")
    return namespace


def _name(body: dict[str, Any]) -> str:
    name = (body.get("metadata") or {}).get("name")
    if not name or not isinstance(name, str):
        raise ValueError("body.metadata.name is required")
    return name
