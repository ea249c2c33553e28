"""Pod Security Admission: the Pod Security Standards applied to API writes, as upstream's
built-in ``PodSecurity`` admission plugin applies them (``k8s.io/pod-security-admission/
admission``).

Per namespace, from its ``pod-security.kubernetes.io/*`` labels (else the configured
defaults, ``privileged`` unless configured):

* **enforce**: a pod (create, or an update that changes an image) that violates the level is
  refused, 403 ``pods "x" is forbidden: violates PodSecurity "restricted:latest": ...``;
* **warn**: the write succeeds with a ``Warning`` header (kubectl prints ``Warning: would
  violate PodSecurity "baseline:latest": ...``);
* **audit**: the violation is logged by the API server (this server keeps no audit log; the
  line carries upstream's ``pod-security.kubernetes.io/audit-violations`` text).

Workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs through
``spec.jobTemplate.spec.template``) are checked against warn and audit only, through their
pod template, as upstream. Writing a
namespace's labels: a label that does not parse is a 422 naming it; raising the enforce level
warns about the namespace's existing pods that would now be refused. Exemptions (usernames,
runtime classes, namespaces) skip everything, as configured in upstream's
``PodSecurityConfiguration``, which :func:`load_admission_config` reads from an
``AdmissionConfiguration`` file (``--admission-control-config-file``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from inplace.api.validation.errors import ValidationError
from inplace.apiserver.admission import AdmissionRequest
from inplace.apiserver.cache import WatchCache
from inplace.apiserver.errors import StatusError
from inplace.registry.podsecurity import (
    PRIVILEGED,
    LevelVersion,
    Policy,
    compare_levels,
    evaluate,
    parse_level,
    parse_version,
    policy_to_evaluate,
)
from inplace.registry.served import Registry

__all__ = ["ConfigError", "PodSecurity", "PodSecurityConfig", "load_admission_config"]

log = logging.getLogger(__name__)

AUDIT_VIOLATIONS: Final = "pod-security.kubernetes.io/audit-violations"
#: Pod subresources upstream never evaluates (a resize changes only resources, which no
#: check reads, so it passes as an insignificant update).
_IGNORED_POD_SUBRESOURCES: Final = frozenset(
    {"exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"}
)
_MAX_PODS_TO_CHECK: Final = 3000
_SECCOMP_POD_ANNOTATION: Final = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION: Final = "container.seccomp.security.alpha.kubernetes.io/"
#: (group, kind) → the path of the pod template in the object (upstream's
#: ``DefaultPodSpecExtractor``).
_TEMPLATES: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    ("", "ReplicationController"): ("spec", "template"),
    ("", "PodTemplate"): ("template",),
    ("apps", "ReplicaSet"): ("spec", "template"),
    ("apps", "Deployment"): ("spec", "template"),
    ("apps", "StatefulSet"): ("spec", "template"),
    ("apps", "DaemonSet"): ("spec", "template"),
    ("batch", "Job"): ("spec", "template"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
}


class ConfigError(ValueError):
    """An admission configuration file that cannot be used (the server refuses to start)."""


@dataclass(frozen=True)
class PodSecurityConfig:
    """Upstream ``PodSecurityConfiguration``: defaults and exemptions."""

    defaults: Policy = field(default_factory=Policy)
    exempt_usernames: frozenset[str] = frozenset()
    exempt_runtime_classes: frozenset[str] = frozenset()
    exempt_namespaces: frozenset[str] = frozenset()


def _strings(value: object, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: must be a list of strings")
    return frozenset(value)


def parse_pod_security_config(doc: Mapping[str, Any]) -> PodSecurityConfig:
    """A ``pod-security.admission.config.k8s.io`` ``PodSecurityConfiguration``."""
    if doc.get("kind") != "PodSecurityConfiguration":
        raise ConfigError(f"expected kind PodSecurityConfiguration, got {doc.get('kind')!r}")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise ConfigError("defaults: must be an object")
    modes: dict[str, LevelVersion] = {}
    for mode in ("enforce", "audit", "warn"):
        level, error = parse_level(str(defaults.get(mode, PRIVILEGED)))
        if error:
            raise ConfigError(f"defaults.{mode}: {error}")
        version, error = parse_version(str(defaults.get(f"{mode}-version", "latest")))
        if error:
            raise ConfigError(f"defaults.{mode}-version: {error}")
        modes[mode] = LevelVersion(level, version)
    exemptions = doc.get("exemptions") or {}
    if not isinstance(exemptions, Mapping):
        raise ConfigError("exemptions: must be an object")
    return PodSecurityConfig(
        Policy(modes["enforce"], modes["audit"], modes["warn"]),
        _strings(exemptions.get("usernames"), "exemptions.usernames"),
        _strings(exemptions.get("runtimeClasses"), "exemptions.runtimeClasses"),
        _strings(exemptions.get("namespaces"), "exemptions.namespaces"),
    )


def load_admission_config(path: Path) -> PodSecurityConfig:
    """The PodSecurity plugin's configuration from an ``AdmissionConfiguration`` file (inline
    ``configuration``, or a ``path`` relative to the file); defaults when it names none."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not isinstance(doc, Mapping) or doc.get("kind") != "AdmissionConfiguration":
        raise ConfigError(f"{path}: expected an AdmissionConfiguration")
    for plugin in doc.get("plugins") or []:
        if not isinstance(plugin, Mapping) or plugin.get("name") != "PodSecurity":
            continue
        config = plugin.get("configuration")
        if config is None and plugin.get("path"):
            nested = path.parent / str(plugin["path"])
            try:
                config = yaml.safe_load(nested.read_text())
            except (OSError, yaml.YAMLError) as exc:
                raise ConfigError(f"{nested}: {exc}") from None
        if not isinstance(config, Mapping):
            raise ConfigError(f"{path}: the PodSecurity plugin has no configuration")
        try:
            return parse_pod_security_config(config)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return PodSecurityConfig()


def _at(obj: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any] | None:
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value if isinstance(value, Mapping) else None


def _meta_spec(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    meta, spec = obj.get("metadata"), obj.get("spec")
    return (
        meta if isinstance(meta, Mapping) else {},
        spec if isinstance(spec, Mapping) else {},
    )


def _significant_pod_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Upstream ``isSignificantPodUpdate``: only images and seccomp annotations of a running
    pod can change what the checks see."""
    new_meta, new_spec = _meta_spec(new)
    old_meta, old_spec = _meta_spec(old)
    new_notes = new_meta.get("annotations") or {}
    old_notes = old_meta.get("annotations") or {}
    if new_notes.get(_SECCOMP_POD_ANNOTATION) != old_notes.get(_SECCOMP_POD_ANNOTATION):
        return True
    for key in ("containers", "initContainers"):
        new_list, old_list = new_spec.get(key) or [], old_spec.get(key) or []
        if len(new_list) != len(old_list):
            return True
        for container, previous in zip(new_list, old_list, strict=True):
            if container.get("image") != previous.get("image"):
                return True
            seccomp = _SECCOMP_CONTAINER_ANNOTATION + str(container.get("name"))
            if new_notes.get(seccomp) != old_notes.get(seccomp):
                return True
    old_ephemeral = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or []}
    for container in new_spec.get("ephemeralContainers") or []:
        previous = old_ephemeral.get(container.get("name"))
        if previous is None or container.get("image") != previous.get("image"):
            return True
    return False


class PodSecurity:
    """The admission plugin."""

    def __init__(self, config: PodSecurityConfig, cache: WatchCache, registry: Registry) -> None:
        self.config = config
        self.cache = cache
        self._namespaces = registry.by_kind("", "Namespace")
        self._pods = registry.by_kind("", "Pod")

    def validate(self, request: AdmissionRequest) -> Sequence[str]:
        kind = request.kind
        if kind is self._namespaces:
            return self._namespace(request)
        if kind is self._pods:
            return self._pod(request)
        path = _TEMPLATES.get((kind.group, kind.kind))
        if path is not None:
            return self._workload(request, path)
        return ()

    # -- shared -------------------------------------------------------------------------------

    def _exempt(self, request: AdmissionRequest) -> bool:
        user = request.user.name if request.user is not None else ""
        return (request.namespace or "") in self.config.exempt_namespaces or (
            bool(user) and user in self.config.exempt_usernames
        )

    def _policy(self, namespace: str | None) -> tuple[Policy, bool]:
        """The namespace's policy and whether its labels parsed."""
        labels: Mapping[str, str] | None = None
        if namespace and self._namespaces is not None:
            entry = self.cache.get(self._namespaces, self._namespaces.storage_key(namespace), None)
            if entry is not None:
                labels = entry.value.get("metadata", {}).get("labels") or {}
        policy, errors = policy_to_evaluate(labels, self.config.defaults)
        return policy, not errors

    def _evaluate(
        self,
        request: AdmissionRequest,
        policy: Policy,
        meta: Mapping[str, Any],
        spec: Mapping[str, Any],
        *,
        enforce: bool,
    ) -> list[str]:
        """Upstream ``EvaluatePod``: refuse (enforce), log (audit), or warn."""
        runtime_class = spec.get("runtimeClassName")
        if isinstance(runtime_class, str) and runtime_class in self.config.exempt_runtime_classes:
            return []
        cached: dict[LevelVersion, Any] = {}
        if enforce:
            result = evaluate(policy.enforce, meta, spec)
            cached[policy.enforce] = result
            if not result.allowed:
                kind, name = request.kind, request.name
                raise StatusError(
                    403,
                    f'{kind.plural} "{name}" is forbidden: violates PodSecurity '
                    f'"{policy.enforce}": {result.detail()}',
                    details={"name": name, "kind": kind.plural},
                )
        audit = cached.get(policy.audit) or evaluate(policy.audit, meta, spec)
        cached[policy.audit] = audit
        if not audit.allowed:
            log.info(
                "%s %s/%s by %s: %s=%s",
                request.operation,
                request.namespace,
                request.name,
                request.user.name if request.user else "the API server",
                AUDIT_VIOLATIONS,
                f'would violate PodSecurity "{policy.audit}": {audit.detail()}',
            )
        warn = cached.get(policy.warn) or evaluate(policy.warn, meta, spec)
        if warn.allowed:
            return []
        return [f'would violate PodSecurity "{policy.warn}": {warn.detail()}']

    # -- by kind ------------------------------------------------------------------------------

    def _pod(self, request: AdmissionRequest) -> Sequence[str]:
        if request.subresource in _IGNORED_POD_SUBRESOURCES or self._exempt(request):
            return ()
        policy, parsed = self._policy(request.namespace)
        if parsed and all(
            lv.level == PRIVILEGED for lv in (policy.enforce, policy.audit, policy.warn)
        ):
            return ()
        if request.old is not None and not _significant_pod_update(request.obj, request.old):
            return ()
        meta, spec = _meta_spec(request.obj)
        return self._evaluate(request, policy, meta, spec, enforce=True)

    def _workload(self, request: AdmissionRequest, path: tuple[str, ...]) -> Sequence[str]:
        if request.subresource or self._exempt(request):
            return ()
        policy, parsed = self._policy(request.namespace)
        if parsed and policy.warn.level == PRIVILEGED and policy.audit.level == PRIVILEGED:
            return ()
        template = _at(request.obj, path)
        if template is None:
            return ()
        meta, spec = _meta_spec(template)
        return self._evaluate(request, policy, meta, spec, enforce=False)

    def _namespace(self, request: AdmissionRequest) -> Sequence[str]:
        """Labels must parse; a stricter enforce level reports the pods it would refuse."""
        if request.subresource:
            return ()
        labels = request.obj.get("metadata", {}).get("labels") or {}
        policy, errors = policy_to_evaluate(labels, self.config.defaults)
        if request.old is None:
            if errors:
                self._invalid(request, errors)
            return ()
        old_labels = request.old.get("metadata", {}).get("labels") or {}
        old_policy, old_errors = policy_to_evaluate(old_labels, self.config.defaults)
        if errors and (
            not old_errors or [e.message() for e in errors] != [e.message() for e in old_errors]
        ):
            self._invalid(request, errors)
        new, old = policy.enforce, old_policy.enforce
        if new == old or new.level == PRIVILEGED:
            return ()
        if new.version == old.version and compare_levels(new.level, old.level) < 1:
            return ()
        if request.name in self.config.exempt_namespaces:
            return ()
        return self._pods_in_namespace(request.name, new)

    def _invalid(self, request: AdmissionRequest, errors: list[Any]) -> None:
        error = ValidationError(request.kind.kind, request.name, errors)
        raise StatusError(422, error.message(), body=error.status())

    def _pods_in_namespace(self, namespace: str, enforce: LevelVersion) -> list[str]:
        """Upstream ``EvaluatePodsInNamespace``: one warning per distinct violation, naming
        the first pod (by name) and how many others share it; one pod per controller first."""
        if self._pods is None:
            return []
        pods = list(self.cache.iter_values(self._pods, namespace))
        first: list[Mapping[str, Any]] = []
        duplicates: list[Mapping[str, Any]] = []
        controllers: set[str] = set()
        for pod in pods:
            spec = pod.get("spec") or {}
            if spec.get("runtimeClassName") in self.config.exempt_runtime_classes:
                continue
            owner = next(
                (
                    ref
                    for ref in pod["metadata"].get("ownerReferences") or []
                    if ref.get("controller")
                ),
                None,
            )
            if owner is None:
                first.append(pod)
            elif owner.get("uid") in controllers:
                duplicates.append(pod)
            else:
                controllers.add(str(owner.get("uid")))
                first.append(pod)
        prioritized = first + duplicates
        total = len(prioritized)
        checked = prioritized[:_MAX_PODS_TO_CHECK]
        counts: dict[str, tuple[str, int]] = {}
        order: list[str] = []
        for candidate in checked:
            meta, spec = _meta_spec(candidate)
            result = evaluate(enforce, meta, spec)
            if result.allowed:
                continue
            reason = result.reason()
            name = str(meta.get("name"))
            if reason not in counts:
                order.append(reason)
                counts[reason] = (name, 1)
            else:
                first_name, count = counts[reason]
                counts[reason] = (min(first_name, name), count + 1)
        warnings = []
        if len(checked) < total:
            warnings.append(
                f"new PodSecurity enforce level only checked against the first {len(checked)} "
                f"of {total} existing pods"
            )
        if order:
            warnings.append(
                f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce '
                f'level "{enforce}"'
            )
        decorated = []
        for reason in order:
            name, count = counts[reason]
            if count == 1:
                decorated.append(f"{name}: {reason}")
            elif count == 2:
                decorated.append(f"{name} (and 1 other pod): {reason}")
            else:
                decorated.append(f"{name} (and {count - 1} other pods): {reason}")
        return warnings + sorted(decorated)
