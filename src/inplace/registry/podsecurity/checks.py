"""The Pod Security Standards checks, with upstream's reasons and details word for word.

Ported from ``k8s.io/pod-security-admission/policy/check_*.go`` (v1.33). Each check reads a
pod's metadata and spec (the pod's own, or a workload's template) as JSON and returns a
:class:`CheckResult`: allowed, or a short reason (``privileged``) and a detail naming what is
wrong (``container "app" must not set securityContext.privileged=true``). Containers are
visited as upstream visits them: init containers, then containers, then ephemeral ones.

Which checks apply at which level and version is :mod:`.registry`'s business.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.validation.errors import go_quote

__all__ = ["CheckFn", "CheckResult", "Meta", "Spec", "join_quote", "pluralize"]

Meta = Mapping[str, Any]
Spec = Mapping[str, Any]


@dataclass(frozen=True)
class CheckResult:
    """Upstream ``CheckResult``."""

    allowed: bool
    reason: str = ""
    detail: str = ""


ALLOWED: Final = CheckResult(True)
#: A check: a pod's (or template's) metadata and spec to a result.
CheckFn = Callable[[Meta, Spec], CheckResult]


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def join_quote(items: list[str]) -> str:
    """``"a", "b"``."""
    return '"' + '", "'.join(items) + '"' if items else ""


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def containers(spec: Spec) -> Iterator[Mapping[str, Any]]:
    """Upstream ``visitContainers``: init containers, containers, ephemeral containers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _list(spec.get(key)):
            if isinstance(container, Mapping):
                yield container


def _name(container: Mapping[str, Any]) -> str:
    name = container.get("name")
    return name if isinstance(name, str) else ""


def _security(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(container.get("securityContext"))


def _pod_security(spec: Spec) -> Mapping[str, Any]:
    return _map(spec.get("securityContext"))


def _containers_phrase(names: list[str]) -> str:
    return f"{pluralize('container', 'containers', len(names))} {join_quote(names)}"


def is_windows(spec: Spec) -> bool:
    return _map(spec.get("os")).get("name") == "windows"


# -- baseline --------------------------------------------------------------------------------

_APPARMOR_ANNOTATION: Final = "container.apparmor.security.beta.kubernetes.io/"


def app_armor_profile(meta: Meta, spec: Spec) -> CheckResult:
    """AppArmor: the ``Unconfined`` profile (type or annotation) is forbidden."""
    setters: list[str] = []
    values: set[str] = set()
    profile = _map(_pod_security(spec).get("appArmorProfile"))
    if profile and profile.get("type") not in ("RuntimeDefault", "Localhost"):
        setters.append("pod")
        values.add(str(profile.get("type") or ""))
    bad = []
    for container in containers(spec):
        profile = _map(_security(container).get("appArmorProfile"))
        if profile and profile.get("type") not in ("RuntimeDefault", "Localhost"):
            bad.append(_name(container))
            values.add(str(profile.get("type") or ""))
    if bad:
        setters.append(_containers_phrase(bad))
    bad_values = sorted(values)
    annotations = []
    for key, value in _map(meta.get("annotations")).items():
        if str(key).startswith(_APPARMOR_ANNOTATION) and not (
            not value or value == "runtime/default" or str(value).startswith("localhost/")
        ):
            annotations.append(f"{key}={go_quote(str(value))}")
    if annotations:
        annotations.sort()
        bad_values += annotations
        setters.append(pluralize("annotation", "annotations", len(annotations)))
    if not setters:
        return ALLOWED
    return CheckResult(
        False,
        pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(bad_values)),
        f"{' and '.join(setters)} must not set AppArmor profile type to {join_quote(bad_values)}",
    )


_DEFAULT_CAPABILITIES: Final = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)


def capabilities_baseline(meta: Meta, spec: Spec) -> CheckResult:
    """Adding capabilities beyond the default set is forbidden."""
    bad: list[str] = []
    extra: set[str] = set()
    for container in containers(spec):
        added = [str(c) for c in _list(_map(_security(container).get("capabilities")).get("add"))]
        outside = [c for c in added if c not in _DEFAULT_CAPABILITIES]
        if outside:
            bad.append(_name(container))
            extra.update(outside)
    if not bad:
        return ALLOWED
    return CheckResult(
        False,
        "non-default capabilities",
        f"{_containers_phrase(bad)} must not include {join_quote(sorted(extra))} in "
        "securityContext.capabilities.add",
    )


def host_namespaces(meta: Meta, spec: Spec) -> CheckResult:
    shared = sorted(key for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key) is True)
    if not shared:
        return ALLOWED
    return CheckResult(False, "host namespaces", ", ".join(shared))


def host_path_volumes(meta: Meta, spec: Spec) -> CheckResult:
    names = [
        str(_map(volume).get("name") or "")
        for volume in _list(spec.get("volumes"))
        if _map(volume).get("hostPath") is not None
    ]
    if not names:
        return ALLOWED
    return CheckResult(
        False,
        "hostPath volumes",
        f"{pluralize('volume', 'volumes', len(names))} {join_quote(names)}",
    )


def host_ports(meta: Meta, spec: Spec) -> CheckResult:
    bad: list[str] = []
    ports: set[str] = set()
    for container in containers(spec):
        used = [
            str(_map(port).get("hostPort"))
            for port in _list(container.get("ports"))
            if _map(port).get("hostPort") not in (None, 0)
        ]
        if used:
            bad.append(_name(container))
            ports.update(used)
    if not bad:
        return ALLOWED
    return CheckResult(
        False,
        "hostPort",
        f"{_containers_phrase(bad)} {pluralize('uses', 'use', len(bad))} "
        f"{pluralize('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}",
    )


def privileged(meta: Meta, spec: Spec) -> CheckResult:
    bad = [_name(c) for c in containers(spec) if _security(c).get("privileged") is True]
    if not bad:
        return ALLOWED
    return CheckResult(
        False,
        "privileged",
        f"{_containers_phrase(bad)} must not set securityContext.privileged=true",
    )


def proc_mount(meta: Meta, spec: Spec) -> CheckResult:
    bad: list[str] = []
    types: set[str] = set()
    for container in containers(spec):
        mount = _security(container).get("procMount")
        if mount is not None and mount != "Default":
            bad.append(_name(container))
            types.add(str(mount))
    if not bad:
        return ALLOWED
    return CheckResult(
        False,
        "procMount",
        f"{_containers_phrase(bad)} must not set securityContext.procMount to "
        f"{join_quote(sorted(types))}",
    )


_SELINUX_TYPES: Final = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})


def se_linux_options(meta: Meta, spec: Spec) -> CheckResult:
    setters: list[str] = []
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(options: Mapping[str, Any]) -> bool:
        ok = True
        kind = str(options.get("type") or "")
        if kind not in _SELINUX_TYPES:
            ok = False
            bad_types.add(kind)
        for key in ("user", "role"):
            if options.get(key):
                ok = False
                flags[key] = True
        return ok

    pod_options = _pod_security(spec).get("seLinuxOptions")
    if isinstance(pod_options, Mapping) and not valid(pod_options):
        setters.append("pod")
    bad = [
        _name(c)
        for c in containers(spec)
        if isinstance(_security(c).get("seLinuxOptions"), Mapping)
        and not valid(_security(c)["seLinuxOptions"])
    ]
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return ALLOWED
    data: list[str] = []
    if bad_types:
        data.append(f"{pluralize('type', 'types', len(bad_types))} {join_quote(sorted(bad_types))}")
        # Upstream names the user and role only next to a bad type.
        if flags["user"]:
            data.append("user may not be set")
        if flags["role"]:
            data.append("role may not be set")
    return CheckResult(
        False,
        "seLinuxOptions",
        f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}",
    )


_SECCOMP_POD_ANNOTATION: Final = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION: Final = "container.seccomp.security.alpha.kubernetes.io/"


def _valid_seccomp_annotation(value: object) -> bool:
    return value in ("runtime/default", "docker/default") or str(value).startswith("localhost/")


def seccomp_profile_baseline_1_0(meta: Meta, spec: Spec) -> CheckResult:
    """Before v1.19: the seccomp annotations."""
    annotations = _map(meta.get("annotations"))
    forbidden: set[str] = set()
    if _SECCOMP_POD_ANNOTATION in annotations:
        value = annotations[_SECCOMP_POD_ANNOTATION]
        if not _valid_seccomp_annotation(value):
            forbidden.add(f"{_SECCOMP_POD_ANNOTATION}={go_quote(str(value))}")
    for container in containers(spec):
        key = _SECCOMP_CONTAINER_ANNOTATION + _name(container)
        if key in annotations and not _valid_seccomp_annotation(annotations[key]):
            forbidden.add(f"{key}={go_quote(str(annotations[key]))}")
    if not forbidden:
        return ALLOWED
    return CheckResult(
        False,
        "seccompProfile",
        f"forbidden {pluralize('annotation', 'annotations', len(forbidden))} "
        f"{', '.join(sorted(forbidden))}",
    )


def _seccomp_type(context: Mapping[str, Any]) -> str | None:
    profile = context.get("seccompProfile")
    if not isinstance(profile, Mapping):
        return None
    return str(profile.get("type") or "")


def _seccomp(spec: Spec, *, required: bool) -> CheckResult:
    """The seccompProfile field checks: ``Unconfined`` is forbidden; restricted (`required`)
    also needs a profile on the pod or on every container."""
    setters: list[str] = []
    bad_values: set[str] = set()
    pod_type = _seccomp_type(_pod_security(spec))
    pod_set = False
    if pod_type is not None:
        if pod_type in ("RuntimeDefault", "Localhost"):
            pod_set = True
        else:
            setters.append("pod")
            bad_values.add(pod_type)
    explicit: list[str] = []
    implicit: list[str] = []
    for container in containers(spec):
        kind = _seccomp_type(_security(container))
        if kind is not None:
            if kind not in ("RuntimeDefault", "Localhost"):
                explicit.append(_name(container))
                bad_values.add(kind)
        elif not pod_set:
            implicit.append(_name(container))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return CheckResult(
            False,
            "seccompProfile",
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
            f"{join_quote(sorted(bad_values))}",
        )
    if required and implicit:
        return CheckResult(
            False,
            "seccompProfile",
            f"pod or {_containers_phrase(implicit)} must set securityContext.seccompProfile.type "
            'to "RuntimeDefault" or "Localhost"',
        )
    return ALLOWED


def seccomp_profile_baseline_1_19(meta: Meta, spec: Spec) -> CheckResult:
    return _seccomp(spec, required=False)


SYSCTLS_1_0: Final = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
    }
)
SYSCTLS_1_27: Final = SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
SYSCTLS_1_29: Final = SYSCTLS_1_27 | {
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}
SYSCTLS_1_32: Final = SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def sysctls(allowed: frozenset[str]) -> CheckFn:
    """The sysctls check for one version's safe set."""

    def check(meta: Meta, spec: Spec) -> CheckResult:
        names = [
            str(_map(sysctl).get("name") or "")
            for sysctl in _list(_pod_security(spec).get("sysctls"))
        ]
        forbidden = [name for name in names if name not in allowed]
        if not forbidden:
            return ALLOWED
        return CheckResult(False, "forbidden sysctls", ", ".join(forbidden))

    return check


def windows_host_process(meta: Meta, spec: Spec) -> CheckResult:
    def host_process(context: Mapping[str, Any]) -> bool:
        return _map(context.get("windowsOptions")).get("hostProcess") is True

    setters = ["pod"] if host_process(_pod_security(spec)) else []
    bad = [_name(c) for c in containers(spec) if host_process(_security(c))]
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return ALLOWED
    return CheckResult(
        False,
        "hostProcess",
        f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true",
    )


# -- restricted ------------------------------------------------------------------------------


def allow_privilege_escalation_1_8(meta: Meta, spec: Spec) -> CheckResult:
    bad = [
        _name(c)
        for c in containers(spec)
        if _security(c).get("allowPrivilegeEscalation") is not False
    ]
    if not bad:
        return ALLOWED
    return CheckResult(
        False,
        "allowPrivilegeEscalation != false",
        f"{_containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false",
    )


def capabilities_restricted_1_22(meta: Meta, spec: Spec) -> CheckResult:
    missing_drop: list[str] = []
    adding: list[str] = []
    forbidden: set[str] = set()
    for container in containers(spec):
        capabilities = _security(container).get("capabilities")
        if not isinstance(capabilities, Mapping):
            missing_drop.append(_name(container))
            continue
        if "ALL" not in _list(capabilities.get("drop")):
            missing_drop.append(_name(container))
        added = [str(c) for c in _list(capabilities.get("add")) if c != "NET_BIND_SERVICE"]
        if added:
            adding.append(_name(container))
            forbidden.update(added)
    details = []
    if missing_drop:
        details.append(
            f'{_containers_phrase(missing_drop)} must set securityContext.capabilities.drop=["ALL"]'
        )
    if adding:
        details.append(
            f"{_containers_phrase(adding)} must not include {join_quote(sorted(forbidden))} in "
            "securityContext.capabilities.add"
        )
    if not details:
        return ALLOWED
    return CheckResult(False, "unrestricted capabilities", "; ".join(details))


_ALLOWED_VOLUMES: Final = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
)
_RESTRICTED_VOLUMES: Final = (
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
)


def restricted_volumes(meta: Meta, spec: Spec) -> CheckResult:
    bad: list[str] = []
    types: set[str] = set()
    for volume in _list(spec.get("volumes")):
        source = _map(volume)
        if any(source.get(key) is not None for key in _ALLOWED_VOLUMES):
            continue
        bad.append(str(source.get("name") or ""))
        types.add(
            next((key for key in _RESTRICTED_VOLUMES if source.get(key) is not None), "unknown")
        )
    if not bad:
        return ALLOWED
    return CheckResult(
        False,
        "restricted volume types",
        f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad)} "
        f"{pluralize('uses', 'use', len(bad))} "
        f"{pluralize('restricted volume type', 'restricted volume types', len(types))} "
        f"{join_quote(sorted(types))}",
    )


def run_as_non_root(meta: Meta, spec: Spec) -> CheckResult:
    setters: list[str] = []
    pod_value = _pod_security(spec).get("runAsNonRoot")
    pod_non_root = pod_value is True
    if pod_value is False:
        setters.append("pod")
    explicit: list[str] = []
    implicit: list[str] = []
    for container in containers(spec):
        value = _security(container).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicit.append(_name(container))
        elif not pod_non_root:
            implicit.append(_name(container))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return CheckResult(
            False,
            "runAsNonRoot != true",
            f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false",
        )
    if implicit:
        return CheckResult(
            False,
            "runAsNonRoot != true",
            f"pod or {_containers_phrase(implicit)} must set securityContext.runAsNonRoot=true",
        )
    return ALLOWED


def _is_root(value: object) -> bool:
    return value == 0 and not isinstance(value, bool)


def run_as_user(meta: Meta, spec: Spec) -> CheckResult:
    setters = ["pod"] if _is_root(_pod_security(spec).get("runAsUser")) else []
    bad = [_name(c) for c in containers(spec) if _is_root(_security(c).get("runAsUser"))]
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return ALLOWED
    return CheckResult(False, "runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0")


def seccomp_profile_restricted_1_19(meta: Meta, spec: Spec) -> CheckResult:
    return _seccomp(spec, required=True)


def unless_windows(check: CheckFn) -> CheckFn:
    """The v1.25 revision of a restricted check: a pod whose ``spec.os.name`` is ``windows``
    passes (those fields cannot be set on Windows)."""

    def revised(meta: Meta, spec: Spec) -> CheckResult:
        return ALLOWED if is_windows(spec) else check(meta, spec)

    return revised
