"""A container's environment, as kubelet's ``makeEnvironmentVariables`` builds it.

In order: every ``envFrom`` source (a ConfigMap's or a Secret's keys, with the source's
``prefix``; later sources win), then each ``env`` entry, which overrides them: a ``value``
with ``$(VAR)`` references expanded from what is defined so far (``$$`` is a literal ``$``,
an unknown reference is left as written), or a ``valueFrom``:

* ``configMapKeyRef`` / ``secretKeyRef``: one key; a missing object or key is an error unless
  the reference is ``optional``;
* ``fieldRef``: upstream's fields for env (``metadata.name``, ``metadata.namespace``,
  ``metadata.uid``, ``metadata.labels['k']``, ``metadata.annotations['k']``,
  ``spec.nodeName``, ``spec.serviceAccountName``, ``status.hostIP(s)``, ``status.podIP(s)``);
* ``resourceFieldRef``: a request or limit divided by the divisor, rounded up, read from what
  the node has *allocated* to the container, so a process started after an in-place resize
  (a restart, an exec) sees the new value; an unset limit is the node's allocatable.

A failure is a :class:`EnvError` with kubelet's words (``configmap "app" not found``,
``couldn't find key mode in ConfigMap default/app``), which the lifecycle reports as
``CreateContainerConfigError`` and retries.

Like kubelet, every container also gets the ``kubernetes`` Service's variables
(``KUBERNETES_SERVICE_HOST``, ``KUBERNETES_SERVICE_PORT``, ``KUBERNETES_PORT_*``), which the
client libraries' in-cluster configuration reads; what the container defines itself wins, and
``$(VAR)`` may name them. Since no Service routes traffic here (see docs/user-guide.md), they
name the API server's own address (the one the node agent reaches it at), not the Service's
cluster IP. Service links for the namespace's other Services are not set.

Objects are read through the node's :class:`~inplace.node.volumes.payload.ObjectReader`
(one watch per referenced object, which the Node authorizer allows for the node's own pods).

That is kubelet's part, what ``subPathExpr`` is expanded with. The container runtime then
completes it (:func:`runtime_env`), as containerd's CRI builds a container's spec
(``internal/cri/server/container_create.go``): the default ``PATH``
(:data:`DEFAULT_PATH`, ``oci.WithDefaultPathEnv``) and ``HOSTNAME`` (the sandbox's hostname,
:func:`pod_hostname`; the host's for a ``hostNetwork`` pod), under the image's variables (an
image here has none) and kubelet's, which win. ``HOME`` is runc's, set just before ``execve``
inside the sandbox, where the container's ``/etc/passwd`` is the one it sees
(:func:`inplace.node.shim.prepare_env`).
"""

from __future__ import annotations

import base64
import binascii
import socket
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from inplace.api.quantity import Quantity

from .security import ConfigError
from .volumes.payload import ObjectReader, Projection, SourceError, field_value, resource_value

__all__ = [
    "CLUSTER_DOMAIN",
    "DEFAULT_PATH",
    "EnvError",
    "PodAddresses",
    "api_server_env",
    "container_env",
    "expand",
    "expand_command",
    "kubernetes_service_env",
    "pod_hostname",
    "runtime_env",
]

DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""containerd's ``defaultUnixEnv`` (``pkg/oci/spec.go``)."""

CLUSTER_DOMAIN: Final = "cluster.local"
"""The cluster domain a ``setHostnameAsFQDN`` hostname ends with (kubelet's
``--cluster-domain`` as clusters set it; the API server's service-account issuer names it)."""

_HOSTNAME_MAX: Final = 63
_FQDN_MAX: Final = 64


class EnvError(ConfigError):
    """The environment cannot be built (``CreateContainerConfigError``)."""


class PodAddresses:
    """What ``status.podIP(s)`` / ``status.hostIP(s)`` resolve to: the node's address (pods
    share the host's network here)."""

    def __init__(self, host_ips: list[str], pod_ips: list[str]) -> None:
        self.host_ips = host_ips
        self.pod_ips = pod_ips


LOCAL: Final = PodAddresses(["127.0.0.1"], ["127.0.0.1"])


def kubernetes_service_env(host: str, port: int) -> dict[str, str]:
    """kubelet's ``envvars.FromServices`` for the ``kubernetes`` Service (its one port is
    named ``https``), at `host`:`port`."""
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    url = f"tcp://{address}"
    prefix = f"KUBERNETES_PORT_{port}_TCP"
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": str(port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
        "KUBERNETES_PORT": url,
        prefix: url,
        f"{prefix}_PROTO": "tcp",
        f"{prefix}_PORT": str(port),
        f"{prefix}_ADDR": host,
    }


def api_server_env(server: str) -> dict[str, str]:
    """:func:`kubernetes_service_env` for the API server at URL `server` (empty if it names
    no host)."""
    url = urlsplit(server)
    if not url.hostname:
        return {}
    return kubernetes_service_env(url.hostname, url.port or (443 if url.scheme == "https" else 80))


def expand(text: str, *contexts: Mapping[str, str]) -> str:
    """Upstream's ``expansion.Expand`` with ``MappingFuncFor(contexts...)``."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1 :]
            if rest[0] == "$":
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close == -1:
                    out.append("$(")
                    advance = 1
                else:
                    name = rest[1:close]
                    out.append(_lookup(name, contexts))
                    advance = close + 1
            else:
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def _lookup(name: str, contexts: tuple[Mapping[str, str], ...]) -> str:
    for context in contexts:
        if name in context:
            return context[name]
    return f"$({name})"


async def _get(
    objects: ObjectReader | None, resource: str, namespace: str, name: str
) -> dict[str, Any] | None:
    kind = "configMap" if resource == "configmaps" else "secret"
    if objects is None:
        raise EnvError(f"couldn't get {kind} {namespace}/{name}, no kubeClient defined")
    return await objects.get(resource, namespace, name)


def _secret_values(obj: Mapping[str, Any]) -> dict[str, str]:
    values = {}
    for key, raw in (obj.get("data") or {}).items():
        try:
            values[str(key)] = base64.b64decode(str(raw)).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            continue
    return values


def _field(pod: Mapping[str, Any], path: str, addresses: PodAddresses) -> str:
    """Upstream ``podFieldSelectorRuntimeValue``."""
    spec = pod.get("spec") or {}
    special = {
        "spec.nodeName": str(spec.get("nodeName") or ""),
        "spec.serviceAccountName": str(spec.get("serviceAccountName") or ""),
        "status.hostIP": addresses.host_ips[0] if addresses.host_ips else "",
        "status.hostIPs": ",".join(addresses.host_ips),
        "status.podIP": addresses.pod_ips[0] if addresses.pod_ips else "",
        "status.podIPs": ",".join(addresses.pod_ips),
    }
    if path in special:
        return special[path]
    if path in ("metadata.labels", "metadata.annotations"):
        raise EnvError(f"unsupported fieldPath: {path}")
    try:
        return field_value(pod, path)
    except SourceError as exc:
        raise EnvError(str(exc)) from None


async def container_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    objects: ObjectReader | None,
    node_allocatable: Mapping[str, Quantity],
    addresses: PodAddresses = LOCAL,
    service_env: Mapping[str, str] | None = None,
    lenient: bool = False,
) -> dict[str, str]:
    """The environment of `container` of `pod` (whose containers carry the resources the
    node allocated them), with `service_env` (:func:`kubernetes_service_env`) under what the
    container defines. `lenient` skips what cannot be resolved instead of raising (for
    expanding volume ``subPathExpr`` before the container's own attempt reports it)."""
    services: Mapping[str, str] = service_env or {}
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    defined: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        try:
            defined.update(await _env_from(source, namespace, objects))
        except EnvError:
            if not lenient:
                raise
    for item in container.get("env") or ():
        name = item.get("name")
        if not name:
            continue
        try:
            value = await _env_value(
                item,
                pod,
                container,
                namespace,
                objects,
                node_allocatable,
                addresses,
                defined,
                services,
            )
        except EnvError:
            if not lenient:
                raise
            continue
        if value is not None:
            defined[str(name)] = value
    return {**services, **defined}


def _truncate_hostname(hostname: str) -> str:
    """kubelet's ``truncatePodHostnameIfNeeded``: 63 characters, no trailing ``-`` or ``.``."""
    if len(hostname) <= _HOSTNAME_MAX:
        return hostname
    return hostname[:_HOSTNAME_MAX].rstrip("-.")


def pod_hostname(pod: Mapping[str, Any], *, host_hostname: str | None = None) -> str:
    """The hostname of `pod`'s sandbox, which containerd gives its containers as ``HOSTNAME``.

    kubelet (``kuberuntime_sandbox.go`` ``generatePodSandboxConfig``,
    ``kubelet_pods.go`` ``GeneratePodHostNameAndDomain``, ``util.GetNodenameForKernel``):
    ``spec.hostnameOverride`` (the ``HostnameOverride`` gate, on since 1.35), else
    ``spec.hostname`` (an Indexed Job's ``JOB-INDEX``), else the pod's name, cut to 63
    characters; with ``setHostnameAsFQDN`` and a ``subdomain``,
    ``HOST.SUBDOMAIN.NAMESPACE.svc.``:data:`CLUSTER_DOMAIN` (at most 64 characters, else
    kubelet's message as an :class:`EnvError`, where kubelet fails the sandbox). A
    ``hostNetwork`` pod's sandbox gets no hostname and containerd uses the host's
    (`host_hostname`, default the agent's)."""
    spec = pod.get("spec") or {}
    if spec.get("hostNetwork") is True:
        return host_hostname if host_hostname is not None else socket.gethostname()
    meta = pod.get("metadata") or {}
    override = spec.get("hostnameOverride")
    if override:
        return _truncate_hostname(str(override))
    hostname = _truncate_hostname(str(spec.get("hostname") or meta.get("name") or ""))
    subdomain = spec.get("subdomain")
    if subdomain and spec.get("setHostnameAsFQDN") is True:
        namespace = meta.get("namespace") or "default"
        fqdn = f"{hostname}.{subdomain}.{namespace}.svc.{CLUSTER_DOMAIN}"
        if len(fqdn) > _FQDN_MAX:
            raise EnvError(
                f"failed to construct FQDN from pod hostname and cluster domain, FQDN {fqdn} "
                f"is too long ({_FQDN_MAX} characters is the max, {len(fqdn)} characters "
                "requested)"
            )
        return fqdn
    return hostname


def expand_command(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """kubelet's ``ExpandContainerCommandAndArgs``: the container's ``command`` then ``args``,
    each with ``$(VAR)`` expanded from `env`, kubelet's environment (:func:`container_env`, not
    the runtime's ``PATH`` or ``HOSTNAME``), so ``--name=$(POD_NAME)`` gets the downward API's
    value."""
    words = [*(container.get("command") or ()), *(container.get("args") or ())]
    return [expand(str(word), env) for word in words]


def runtime_env(
    pod: Mapping[str, Any], env: Mapping[str, str], *, host_hostname: str | None = None
) -> dict[str, str]:
    """`env` (kubelet's, :func:`container_env`) as containerd's CRI completes it: the default
    ``PATH`` and ``HOSTNAME`` (:func:`pod_hostname`) first, then `env`, which wins
    (``oci.WithEnv`` replaces a variable it sets again). ``HOME`` comes later, from the shim."""
    return {
        "PATH": DEFAULT_PATH,
        "HOSTNAME": pod_hostname(pod, host_hostname=host_hostname),
        **env,
    }


async def _env_from(
    source: Mapping[str, Any], namespace: str, objects: ObjectReader | None
) -> dict[str, str]:
    prefix = str(source.get("prefix") or "")
    for key, resource, kind in (
        ("configMapRef", "configmaps", "configmap"),
        ("secretRef", "secrets", "secret"),
    ):
        ref = source.get(key)
        if ref is None:
            continue
        name = str(ref.get("name") or "")
        obj = await _get(objects, resource, namespace, name)
        if obj is None:
            if ref.get("optional"):
                return {}
            raise EnvError(f'{kind} "{name}" not found')
        if resource == "secrets":
            values = _secret_values(obj)
        else:
            values = {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
        # With relaxed names (v1.32+) any key is a name but for one with "=" in it.
        return {prefix + k: v for k, v in values.items() if "=" not in prefix + k}
    return {}


async def _env_value(
    item: Mapping[str, Any],
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    namespace: str,
    objects: ObjectReader | None,
    node_allocatable: Mapping[str, Quantity],
    addresses: PodAddresses,
    defined: Mapping[str, str],
    services: Mapping[str, str],
) -> str | None:
    """One ``env`` entry's value; None when an optional reference is absent."""
    value_from = item.get("valueFrom")
    if not value_from:
        return expand(str(item.get("value") or ""), defined, services)
    field_ref = value_from.get("fieldRef")
    if field_ref:
        return _field(pod, str(field_ref.get("fieldPath") or ""), addresses)
    resource_ref = value_from.get("resourceFieldRef")
    if resource_ref:
        target = str(resource_ref.get("containerName") or container.get("name") or "")
        try:
            return resource_value(
                Projection(pod, _NoObjects(), node_allocatable), resource_ref, target
            )
        except SourceError as exc:
            raise EnvError(str(exc)) from None
    for key, resource, kind in (
        ("configMapKeyRef", "configmaps", "ConfigMap"),
        ("secretKeyRef", "secrets", "Secret"),
    ):
        ref = value_from.get(key)
        if ref is None:
            continue
        name, wanted = str(ref.get("name") or ""), str(ref.get("key") or "")
        optional = bool(ref.get("optional"))
        obj = await _get(objects, resource, namespace, name)
        if obj is None:
            if optional:
                return None
            raise EnvError(f'{kind.lower()} "{name}" not found')
        if resource == "secrets":
            values = _secret_values(obj)
        else:
            values = {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
        if wanted not in values:
            if optional:
                return None
            raise EnvError(f"couldn't find key {wanted} in {kind} {namespace}/{name}")
        return values[wanted]
    return None


class _NoObjects:
    """A resource value reads no objects."""

    async def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return None
