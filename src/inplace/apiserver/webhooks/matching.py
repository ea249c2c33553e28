"""Which webhooks a request calls: rules, scope, match policy and the two label selectors.

Pure functions over a (defaulted) webhook from a configuration and the request's attributes,
transcribed from upstream's ``apiserver/pkg/admission/plugin/webhook/predicates/rules``
(operations, groups, versions, ``resource/subresource`` with ``*`` and ``*/*``, scope),
``.../predicates/namespace`` (the namespace's labels; a Namespace object is matched by its
own labels) and ``.../predicates/object`` (the new or the old object's labels), and
``.../generic/webhook.go``'s match policy: ``Exact`` matches the requested version only,
``Equivalent`` also the same resource served at another version, which the webhook is then
sent at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.validation.meta import selector_is_empty, selector_matches

ADMISSION_GROUP: Final = "admissionregistration.k8s.io"
#: Upstream's ``IsExemptAdmissionConfigurationResource``: no webhook may hold these hostage.
EXEMPT_RESOURCES: Final = frozenset(
    {
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
    }
)


@dataclass(frozen=True)
class Resource:
    """A served resource at one version, and its kind."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool

    def gvr(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "resource": self.resource}

    def gvk(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "kind": self.kind}

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def is_exempt(resource: Resource) -> bool:
    """Webhooks never run on the admission configuration kinds themselves."""
    return resource.group == ADMISSION_GROUP and resource.resource in EXEMPT_RESOURCES


def _listed(values: object, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _resource_listed(resources: object, resource: str, subresource: str) -> bool:
    if not isinstance(resources, list):
        return False
    for item in resources:
        if not isinstance(item, str):
            continue
        res, _, sub = item.partition("/")
        if (res in ("*", resource)) and (sub in ("*", subresource)):
            return True
    return False


def _scope_matches(scope: object, resource: Resource, namespace: str) -> bool:
    if scope in (None, "*"):
        return True
    is_namespace = resource.group == "" and resource.resource == "namespaces"
    if scope == "Namespaced":
        return not is_namespace and namespace != ""
    if scope == "Cluster":
        return is_namespace or namespace == ""
    return False


def rule_matches(
    rule: Mapping[str, Any], operation: str, resource: Resource, subresource: str, namespace: str
) -> bool:
    """Upstream's ``rules.Matcher.Matches`` for one ``RuleWithOperations``."""
    return (
        _listed(rule.get("operations"), operation)
        and _listed(rule.get("apiGroups"), resource.group)
        and _listed(rule.get("apiVersions"), resource.version)
        and _resource_listed(rule.get("resources"), resource.resource, subresource)
        and _scope_matches(rule.get("scope"), resource, namespace)
    )


def matched_resource(
    hook: Mapping[str, Any],
    operation: str,
    requested: Resource,
    subresource: str,
    namespace: str,
    equivalents: Sequence[Resource] = (),
) -> Resource | None:
    """The resource (and so the version) the webhook is called for, or None if its rules do
    not cover the request. With ``matchPolicy: Equivalent`` another served version of the same
    resource that the rules name counts too."""
    rules = [r for r in hook.get("rules") or () if isinstance(r, Mapping)]

    def covers(resource: Resource) -> bool:
        return any(rule_matches(r, operation, resource, subresource, namespace) for r in rules)

    if covers(requested):
        return requested
    if hook.get("matchPolicy", "Equivalent") == "Equivalent":
        for other in equivalents:
            if other != requested and covers(other):
                return other
    return None


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not isinstance(obj, Mapping):
        return None
    labels = (obj.get("metadata") or {}).get("labels")
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): str(v) for k, v in labels.items()}


def selects_object(
    hook: Mapping[str, Any], obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> bool:
    """Upstream's object matcher: the selector picks the new object or the old one."""
    selector = hook.get("objectSelector")
    if not isinstance(selector, Mapping) or selector_is_empty(selector):
        return True
    return any(
        labels is not None and selector_matches(selector, labels)
        for labels in (_labels(obj), _labels(old))
    )


def namespace_labels_from_request(
    resource: Resource, subresource: str, operation: str, obj: Mapping[str, Any] | None
) -> dict[str, str] | None:
    """A Namespace being created or updated is matched by the labels it is written with
    (upstream's ``GetNamespaceLabels``); None: look the namespace up."""
    if (
        resource.group == ""
        and resource.resource == "namespaces"
        and not subresource
        and operation in ("CREATE", "UPDATE")
    ):
        return _labels(obj) or {}
    return None


def selects_namespace(
    hook: Mapping[str, Any], resource: Resource, namespace: str, labels: Mapping[str, str]
) -> bool:
    """Upstream's namespace matcher: a cluster-scoped object (other than a Namespace) is never
    exempted; otherwise the selector decides on the namespace's labels."""
    if not namespace and not (resource.group == "" and resource.resource == "namespaces"):
        return True
    selector = hook.get("namespaceSelector")
    if not isinstance(selector, Mapping) or selector_is_empty(selector):
        return True
    return selector_matches(selector, labels)


def sorted_hooks(
    configurations: Iterable[Mapping[str, Any]],
) -> list[tuple[str, Mapping[str, Any]]]:
    """Every webhook of every configuration, configurations by name, then in their order
    (upstream's ``mutatingWebhookAccessors`` sort)."""
    ordered = sorted(
        (c for c in configurations if isinstance(c, Mapping)),
        key=lambda c: str((c.get("metadata") or {}).get("name", "")),
    )
    return [
        (str(c["metadata"]["name"]), hook)
        for c in ordered
        for hook in c.get("webhooks") or ()
        if isinstance(hook, Mapping)
    ]
