"""What the files of a configMap, secret, downwardAPI or projected volume hold: upstream's
``MakePayload`` functions, given the objects they read.

Every source is one async function of a :class:`Projection` and its JSON body, returning
``path → FileProjection``; :data:`PROJECTED_SOURCES` maps a projected volume's source names to
them (``serviceAccountToken`` asks a :class:`TokenSource` for the pod's token).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from inplace.api.quantity import Quantity, QuantityError

from .writer import FileProjection

__all__ = [
    "DEFAULT_MODE",
    "PROJECTED_SOURCES",
    "ObjectReader",
    "Projection",
    "SourceError",
    "TokenSource",
    "configmap_payload",
    "downward_api_payload",
    "field_value",
    "projected_payload",
    "resource_value",
    "secret_payload",
    "service_account_token_payload",
    "volume_payload",
]

DEFAULT_MODE: Final = 0o644
"""Upstream's ``DefaultMode`` of configMap, secret, downwardAPI and projected volumes."""


class SourceError(Exception):
    """The volume cannot be set up (yet): a missing object or key, a bad field path. The
    message is upstream's, as the FailedMount event shows it."""


class ObjectReader(Protocol):
    """Reads the objects volumes project (``configmaps``, ``secrets``); None when absent."""

    async def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None: ...


class TokenSource(Protocol):
    """Service account tokens bound to a pod (:class:`inplace.node.tokens.TokenManager`)."""

    async def token(
        self, pod: Mapping[str, Any], account: str, audience: str, lifetime: int
    ) -> str: ...


@dataclass(frozen=True)
class Projection:
    """What a source function may use."""

    pod: Mapping[str, Any]
    objects: ObjectReader
    node_allocatable: Mapping[str, Quantity]
    """Allocatable of the node: the value of a resource limit that is not set."""
    default_mode: int = DEFAULT_MODE
    tokens: TokenSource | None = None
    """Where ``serviceAccountToken`` sources get their tokens; None: not supported."""

    @property
    def namespace(self) -> str:
        return str((self.pod.get("metadata") or {}).get("namespace", ""))


Source = Callable[[Projection, Mapping[str, Any]], Awaitable[dict[str, FileProjection]]]


def _keyed_payload(
    kind: str,
    name: str,
    values: Mapping[str, bytes],
    items: Any,
    default_mode: int,
    optional: bool,
) -> dict[str, FileProjection]:
    if not items:
        return {key: FileProjection(data, default_mode) for key, data in values.items()}
    out: dict[str, FileProjection] = {}
    for item in items:
        key = str(item.get("key", ""))
        if key not in values:
            if optional:
                continue
            raise SourceError(f"configmap references non-existent config key: {key}")
        mode = item.get("mode")
        out[str(item.get("path", key))] = FileProjection(
            values[key], int(mode) if mode is not None else default_mode
        )
    return out


async def configmap_payload(p: Projection, source: Mapping[str, Any]) -> dict[str, FileProjection]:
    name = str(source.get("name", ""))
    optional = bool(source.get("optional"))
    obj = await p.objects.get("configmaps", p.namespace, name)
    if obj is None:
        if optional:
            return {}
        raise SourceError(f'configmap "{name}" not found')
    values = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
    values.update({k: base64.b64decode(str(v)) for k, v in (obj.get("binaryData") or {}).items()})
    mode = source.get("defaultMode")
    return _keyed_payload(
        "configmap",
        name,
        values,
        source.get("items"),
        int(mode) if mode is not None else p.default_mode,
        optional,
    )


async def secret_payload(p: Projection, source: Mapping[str, Any]) -> dict[str, FileProjection]:
    name = str(source.get("secretName", source.get("name", "")))
    optional = bool(source.get("optional"))
    obj = await p.objects.get("secrets", p.namespace, name)
    if obj is None:
        if optional:
            return {}
        raise SourceError(f'secret "{name}" not found')
    values = {k: base64.b64decode(str(v)) for k, v in (obj.get("data") or {}).items()}
    mode = source.get("defaultMode")
    try:
        return _keyed_payload(
            "secret",
            name,
            values,
            source.get("items"),
            int(mode) if mode is not None else p.default_mode,
            optional,
        )
    except SourceError as exc:
        raise SourceError(str(exc).replace("configmap references", "references")) from None


def format_map(values: Mapping[str, Any]) -> str:
    """Upstream's ``fieldpath.FormatMap``: ``key="value"`` lines, keys sorted."""
    return "\n".join(f"{k}={json.dumps(str(values[k]))}" for k in sorted(values))


def field_value(pod: Mapping[str, Any], path: str) -> str:
    """A downward API field of the pod's metadata (volumes; env adds spec and status ones)."""
    meta = pod.get("metadata") or {}
    for prefix, field in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path == prefix:
            return format_map(meta.get(field) or {})
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str((meta.get(field) or {}).get(path[len(prefix) + 2 : -2], ""))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
    }
    if path in simple:
        return str(simple[path] or "")
    raise SourceError(f"unsupported fieldPath: {path}")


def resource_value(p: Projection, ref: Mapping[str, Any], container_name: str) -> str:
    """Upstream's ``ExtractContainerResourceValue``: the request or limit divided by the
    divisor, rounded up; a limit that is not set is the node's allocatable."""
    resource = str(ref.get("resource", ""))
    containers = [
        *((p.pod.get("spec") or {}).get("initContainers") or ()),
        *((p.pod.get("spec") or {}).get("containers") or ()),
    ]
    container = next((c for c in containers if c.get("name") == container_name), None)
    if container is None:
        raise SourceError(f"container {container_name} not found")
    kind, _, name = resource.partition(".")
    values = (container.get("resources") or {}).get(kind) or {}
    try:
        divisor = Quantity.parse(str(ref.get("divisor") or "1"))
        raw = values.get(name)
        if raw is not None:
            quantity = Quantity.parse(str(raw))
        elif kind == "limits" and name in p.node_allocatable:
            quantity = p.node_allocatable[name]
        else:
            quantity = Quantity.parse("0")
    except QuantityError as exc:
        raise SourceError(f"invalid quantity in resourceFieldRef: {exc}") from None
    if divisor.is_zero():
        raise SourceError("divisor must not be zero")
    if name == "cpu":
        return str(-(-quantity.milli_value() // divisor.milli_value()))
    return str(-(-quantity.value() // divisor.value()))


async def downward_api_payload(
    p: Projection, source: Mapping[str, Any]
) -> dict[str, FileProjection]:
    mode = source.get("defaultMode")
    default_mode = int(mode) if mode is not None else p.default_mode
    out: dict[str, FileProjection] = {}
    for item in source.get("items") or ():
        if item.get("fieldRef"):
            value = field_value(p.pod, str(item["fieldRef"].get("fieldPath", "")))
        elif item.get("resourceFieldRef"):
            ref = item["resourceFieldRef"]
            value = resource_value(p, ref, str(ref.get("containerName", "")))
        else:
            continue
        item_mode = item.get("mode")
        out[str(item.get("path"))] = FileProjection(
            value.encode(), int(item_mode) if item_mode is not None else default_mode
        )
    return out


#: Upstream's default lifetime of a projected token.
DEFAULT_TOKEN_SECONDS: Final = 3600


async def service_account_token_payload(
    p: Projection, source: Mapping[str, Any]
) -> dict[str, FileProjection]:
    """Upstream's ``serviceAccountToken`` projection: a token of the pod's service account,
    bound to the pod, for the source's ``audience`` and ``expirationSeconds``. The file is
    0600 when the pod has an ``fsGroup`` (whose ownership then makes it group-readable), else
    the volume's mode."""
    if p.tokens is None:
        raise SourceError("projected source serviceAccountToken is not supported by this node")
    spec = p.pod.get("spec") or {}
    account = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")
    lifetime = source.get("expirationSeconds")
    token = await p.tokens.token(
        p.pod,
        account,
        str(source.get("audience") or ""),
        int(lifetime) if lifetime is not None else DEFAULT_TOKEN_SECONDS,
    )
    fs_group = (spec.get("securityContext") or {}).get("fsGroup")
    mode = 0o600 if fs_group is not None else p.default_mode
    return {str(source.get("path", "token")): FileProjection(token.encode(), mode)}


PROJECTED_SOURCES: dict[str, Source] = {
    "configMap": configmap_payload,
    "secret": secret_payload,
    "downwardAPI": downward_api_payload,
    "serviceAccountToken": service_account_token_payload,
}
"""A projected volume's source kinds → their payload functions (add one entry per kind)."""


async def projected_payload(p: Projection, source: Mapping[str, Any]) -> dict[str, FileProjection]:
    mode = source.get("defaultMode")
    inner = Projection(
        p.pod,
        p.objects,
        p.node_allocatable,
        int(mode) if mode is not None else p.default_mode,
        p.tokens,
    )
    out: dict[str, FileProjection] = {}
    for item in source.get("sources") or ():
        for kind, body in item.items():
            fn = PROJECTED_SOURCES.get(kind)
            if fn is None:
                raise SourceError(f"projected source {kind} is not supported by this node")
            out.update(await fn(inner, body or {}))
    return out


VOLUME_SOURCES: Final[Mapping[str, Source]] = {
    "configMap": configmap_payload,
    "secret": secret_payload,
    "downwardAPI": downward_api_payload,
    "projected": projected_payload,
}
"""Volume types whose files the agent writes with the atomic writer."""


async def volume_payload(
    p: Projection, volume: Mapping[str, Any]
) -> tuple[str, dict[str, FileProjection]] | None:
    """``(type, payload)`` of a volume written by the atomic writer, None for other types."""
    for kind, fn in VOLUME_SOURCES.items():
        body = volume.get(kind)
        if body is not None:
            return kind, await fn(p, body)
    return None
