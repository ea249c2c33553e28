"""Who a container runs as and with which privileges: upstream's kubelet and a CRI runtime's
decisions, pure and table-tested.

A container here has no image: it runs the host's programs, so the "image" user is the
host's default, root, and its ``/etc/passwd`` and ``/etc/group`` are the host's (read
through a :class:`UserDatabase`). From the pod's and the container's ``securityContext``
(the container's wins for the fields both carry, as upstream's
``DetermineEffectiveSecurityContext``) this computes what the shim applies:

* **identity** — ``runAsUser`` (default the image's, root), ``runAsGroup`` (default the
  user's primary group from ``/etc/passwd``, else 0, as containerd's ``WithUserID``), and
  the groups containerd gives: the gid, the user's groups in ``/etc/group``, then the pod's
  ``fsGroup`` and ``supplementalGroups`` (kubelet's order);
* **runAsNonRoot** — upstream's ``verifyRunAsNonRoot``, with its exact messages; a violation
  is a :class:`ConfigError` (``CreateContainerConfigError``);
* **capabilities** — containerd's default set (:data:`DEFAULT_CAPABILITIES`), then ``add``
  (``ALL`` first: every capability), then ``drop`` (``ALL`` first: none), into the bounding,
  effective and permitted sets; inheritable and ambient stay empty (containerd ≥ 1.6.18).
  The kernel then gives a non-root user nothing effective at ``execve`` while the bounding
  set still limits what a setuid program could gain: exactly what runc yields.
  ``privileged`` (and ``add: [ALL]``) gets every capability the agent itself holds, as
  containerd's ``WithAllCurrentCapabilities``;
* **no_new_privs** — set only when ``allowPrivilegeEscalation`` is explicitly false
  (kubelet's ``AddNoNewPrivileges``);
* **seccomp** — ``Unconfined`` unless ``seccompProfile`` says ``RuntimeDefault`` or
  ``Localhost``; a privileged container is never filtered (containerd).

``readOnlyRootFilesystem`` is honoured by the container's root (the shim binds the host's
directories read-only, with no layer). What cannot be honoured here (an unknown capability,
an unmasked ``/proc``, a Localhost profile that is missing) is a :class:`ConfigError` with the
reason: the container never runs with more privilege than it asked for.
"""

from __future__ import annotations

import grp
import pwd
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

__all__ = [
    "CAPABILITIES",
    "DEFAULT_CAPABILITIES",
    "CapabilitySets",
    "ConfigError",
    "ContainerSecurity",
    "HostUsers",
    "Seccomp",
    "UserDatabase",
    "capability_sets",
    "effective_context",
    "format_pod",
    "resolve_security",
]

CAPABILITIES: Final[Mapping[str, int]] = {
    name: number
    for number, name in enumerate(
        [
            "CHOWN",
            "DAC_OVERRIDE",
            "DAC_READ_SEARCH",
            "FOWNER",
            "FSETID",
            "KILL",
            "SETGID",
            "SETUID",
            "SETPCAP",
            "LINUX_IMMUTABLE",
            "NET_BIND_SERVICE",
            "NET_BROADCAST",
            "NET_ADMIN",
            "NET_RAW",
            "IPC_LOCK",
            "IPC_OWNER",
            "SYS_MODULE",
            "SYS_RAWIO",
            "SYS_CHROOT",
            "SYS_PTRACE",
            "SYS_PACCT",
            "SYS_ADMIN",
            "SYS_BOOT",
            "SYS_NICE",
            "SYS_RESOURCE",
            "SYS_TIME",
            "SYS_TTY_CONFIG",
            "MKNOD",
            "LEASE",
            "AUDIT_WRITE",
            "AUDIT_CONTROL",
            "SETFCAP",
            "MAC_OVERRIDE",
            "MAC_ADMIN",
            "SYSLOG",
            "WAKE_ALARM",
            "BLOCK_SUSPEND",
            "AUDIT_READ",
            "PERFMON",
            "BPF",
            "CHECKPOINT_RESTORE",
        ]
    )
}
"""Capability names (without ``CAP_``) → numbers (``linux/capability.h``)."""

DEFAULT_CAPABILITIES: Final = (
    "CHOWN",
    "DAC_OVERRIDE",
    "FSETID",
    "FOWNER",
    "MKNOD",
    "NET_RAW",
    "SETGID",
    "SETUID",
    "SETFCAP",
    "SETPCAP",
    "NET_BIND_SERVICE",
    "SYS_CHROOT",
    "KILL",
    "AUDIT_WRITE",
)
"""containerd's ``defaultUnixCaps`` (the same 14 as Docker's): bounding set 0xa80425fb."""

_CONTAINER_OVERRIDES: Final = (
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "seccompProfile",
    "seLinuxOptions",
    "windowsOptions",
    "appArmorProfile",
)
"""Fields a container's securityContext takes from the pod's unless it sets them."""


class ConfigError(Exception):
    """The container cannot be created as configured (``CreateContainerConfigError``)."""


class UserDatabase(Protocol):
    """The "image's" users and groups (here: the host's)."""

    def primary_gid(self, uid: int) -> int | None: ...

    def groups_of(self, uid: int) -> list[int]: ...


class HostUsers:
    """:class:`UserDatabase` over the host's ``/etc/passwd`` and ``/etc/group``."""

    def primary_gid(self, uid: int) -> int | None:
        try:
            return pwd.getpwuid(uid).pw_gid
        except KeyError:
            return None

    def groups_of(self, uid: int) -> list[int]:
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            return []
        return [g.gr_gid for g in grp.getgrall() if name in g.gr_mem]


@dataclass(frozen=True)
class CapabilitySets:
    """Capability numbers per set, as the shim applies them before ``execve``."""

    bounding: tuple[int, ...]
    effective: tuple[int, ...]
    permitted: tuple[int, ...]
    inheritable: tuple[int, ...] = ()
    ambient: tuple[int, ...] = ()

    def to_json(self) -> dict[str, list[int]]:
        return {
            "bounding": list(self.bounding),
            "effective": list(self.effective),
            "permitted": list(self.permitted),
            "inheritable": list(self.inheritable),
            "ambient": list(self.ambient),
        }


@dataclass(frozen=True)
class Seccomp:
    kind: Literal["Unconfined", "RuntimeDefault", "Localhost"]
    localhost_profile: str | None = None


@dataclass(frozen=True)
class ContainerSecurity:
    """Everything the shim applies to become the container's process."""

    uid: int
    gid: int
    groups: tuple[int, ...]
    capabilities: CapabilitySets
    no_new_privs: bool
    seccomp: Seccomp
    privileged: bool
    read_only_root: bool = False
    """``readOnlyRootFilesystem``: the container's root is the host's, read-only, with no
    layer (only its volumes are writable)."""


def format_pod(pod: Mapping[str, Any]) -> str:
    """Upstream's ``format.Pod``: ``name_namespace(uid)``."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"


def effective_context(
    pod_sc: Mapping[str, Any] | None, container_sc: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Upstream's ``DetermineEffectiveSecurityContext``: the container's context with the
    pod's values for the fields it leaves unset."""
    effective = dict(container_sc or {})
    for key in _CONTAINER_OVERRIDES:
        if effective.get(key) is None and (pod_sc or {}).get(key) is not None:
            effective[key] = (pod_sc or {})[key]
    return effective


def _capability_number(name: str, field: str) -> int:
    key = name.upper().removeprefix("CAP_")
    if key not in CAPABILITIES:
        raise ConfigError(f'unknown capability "{name}" in {field}')
    return CAPABILITIES[key]


def capability_sets(
    capabilities: Mapping[str, Any] | None, *, privileged: bool, available: Iterable[int]
) -> CapabilitySets:
    """containerd's ``WithCapabilities`` over its default set (see the module docstring).
    ``available`` is the node agent's own bounding set: what ``ALL`` and ``privileged`` mean
    (containerd's ``cap.Current()``), and all a container can be given."""
    every = tuple(sorted(set(available)))
    if privileged:
        return CapabilitySets(bounding=every, effective=every, permitted=every)
    caps = {CAPABILITIES[name] for name in DEFAULT_CAPABILITIES}
    add = [str(x) for x in (capabilities or {}).get("add") or ()]
    drop = [str(x) for x in (capabilities or {}).get("drop") or ()]
    if any(x.upper() == "ALL" for x in add):
        caps = set(every)
    if any(x.upper() == "ALL" for x in drop):
        caps = set()
    for name in add:
        if name.upper() != "ALL":
            number = _capability_number(name, "securityContext.capabilities.add")
            if number not in every:
                raise ConfigError(
                    f'capability "{name}" cannot be granted: the node agent does not hold it'
                )
            caps.add(number)
    for name in drop:
        if name.upper() != "ALL":
            caps.discard(_capability_number(name, "securityContext.capabilities.drop"))
    ordered = tuple(sorted(caps))
    return CapabilitySets(bounding=ordered, effective=ordered, permitted=ordered)


def _verify_run_as_non_root(
    pod: Mapping[str, Any], container_name: str, sc: Mapping[str, Any], image_uid: int
) -> None:
    """Upstream's ``verifyRunAsNonRoot`` (kuberuntime), messages verbatim."""
    if not sc.get("runAsNonRoot"):
        return
    where = f'(pod: "{format_pod(pod)}", container: {container_name})'
    user = sc.get("runAsUser")
    if user is not None:
        if user == 0:
            raise ConfigError(f"container's runAsUser breaks non-root policy {where}")
        return
    if image_uid == 0:
        raise ConfigError(f"container has runAsNonRoot and image will run as root {where}")


def _seccomp(sc: Mapping[str, Any], *, privileged: bool) -> Seccomp:
    profile = sc.get("seccompProfile") or {}
    kind = profile.get("type") or "Unconfined"
    if privileged or kind == "Unconfined":
        return Seccomp("Unconfined")
    if kind == "RuntimeDefault":
        return Seccomp("RuntimeDefault")
    if kind == "Localhost":
        path = profile.get("localhostProfile")
        if not path:
            raise ConfigError("seccompProfile type Localhost needs localhostProfile")
        return Seccomp("Localhost", str(path))
    raise ConfigError(f"unsupported seccompProfile type {kind!r}")


def resolve_security(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    users: UserDatabase,
    *,
    available: Iterable[int],
) -> ContainerSecurity:
    """What the container runs as (see the module docstring); :class:`ConfigError` when it
    must not start."""
    spec = pod.get("spec") or {}
    pod_sc: Mapping[str, Any] = spec.get("securityContext") or {}
    container_sc: Mapping[str, Any] = container.get("securityContext") or {}
    sc = effective_context(pod_sc, container_sc)
    name = str(container.get("name", ""))
    image_uid = 0  # the host's default user: programs here run as root unless told otherwise
    _verify_run_as_non_root(pod, name, sc, image_uid)
    if (sc.get("procMount") or "Default") != "Default":
        raise ConfigError(f"procMount {sc['procMount']!r} cannot be honoured on this node")
    uid = int(sc["runAsUser"]) if sc.get("runAsUser") is not None else image_uid
    if sc.get("runAsGroup") is not None:
        gid = int(sc["runAsGroup"])
    else:
        primary = users.primary_gid(uid)
        gid = primary if primary is not None else 0
    groups: list[int] = [gid, *users.groups_of(uid)]
    if pod_sc.get("fsGroup") is not None:
        groups.append(int(pod_sc["fsGroup"]))
    groups += [int(g) for g in pod_sc.get("supplementalGroups") or ()]
    privileged = bool(sc.get("privileged"))
    caps = capability_sets(sc.get("capabilities"), privileged=privileged, available=available)
    escalation = sc.get("allowPrivilegeEscalation")
    return ContainerSecurity(
        uid=uid,
        gid=gid,
        groups=tuple(dict.fromkeys(groups)),
        capabilities=caps,
        no_new_privs=escalation is not None and not escalation,
        seccomp=_seccomp(sc, privileged=privileged),
        privileged=privileged,
        read_only_root=bool(sc.get("readOnlyRootFilesystem")),
    )
