"""Upstream's defaults for admissionregistration.k8s.io/v1: webhook configurations and
ValidatingAdmissionPolicies with their bindings.

Transcribed from ``pkg/apis/admissionregistration/v1/defaults.go``: every webhook fails
closed, matches equivalent resources, selects every namespace and object and times out after
10 seconds unless it says otherwise; a mutating one is never reinvoked; a rule covers every
scope; a service reference is on port 443. The API server's dispatcher
(:mod:`inplace.apiserver.webhooks`) reads the defaulted objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

WEBHOOK_DEFAULTS: Final = {
    "failurePolicy": "Fail",
    "matchPolicy": "Equivalent",
    "timeoutSeconds": 10,
}
DEFAULT_SERVICE_PORT: Final = 443


def _default_webhook(hook: dict[str, Any], mutating: bool) -> None:
    for key, value in WEBHOOK_DEFAULTS.items():
        if hook.get(key) is None:
            hook[key] = value
    for selector in ("namespaceSelector", "objectSelector"):
        if hook.get(selector) is None:
            hook[selector] = {}
    if mutating and hook.get("reinvocationPolicy") is None:
        hook["reinvocationPolicy"] = "Never"
    for rule in hook.get("rules") or ():
        if isinstance(rule, dict) and rule.get("scope") is None:
            rule["scope"] = "*"
    client = hook.get("clientConfig")
    service = client.get("service") if isinstance(client, dict) else None
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = DEFAULT_SERVICE_PORT


def default_mutating_webhook_configuration(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_MutatingWebhook``, ``SetDefaults_Rule``, ``SetDefaults_ServiceReference``."""
    for hook in obj.get("webhooks") or ():
        if isinstance(hook, dict):
            _default_webhook(hook, mutating=True)


def default_validating_webhook_configuration(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_ValidatingWebhook``, ``SetDefaults_Rule``, ``SetDefaults_ServiceReference``."""
    for hook in obj.get("webhooks") or ():
        if isinstance(hook, dict):
            _default_webhook(hook, mutating=False)


def bump_generation_on_webhook_change(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """Upstream's strategies count changes of ``webhooks`` in ``metadata.generation`` (the
    configurations have no ``spec``)."""
    if new.get("webhooks") != old.get("webhooks"):
        meta = new.setdefault("metadata", {})
        meta["generation"] = int(old.get("metadata", {}).get("generation") or 1) + 1


def _default_match_resources(match: object) -> None:
    """``SetDefaults_MatchResources``: Equivalent, and selectors that select everything."""
    if not isinstance(match, dict):
        return
    if match.get("matchPolicy") is None:
        match["matchPolicy"] = "Equivalent"
    for selector in ("namespaceSelector", "objectSelector"):
        if match.get(selector) is None:
            match[selector] = {}
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(key) or ():
            if isinstance(rule, dict) and rule.get("scope") is None:
                rule["scope"] = "*"


def default_validating_admission_policy(obj: dict[str, Any], on_create: bool) -> None:
    """``SetDefaults_ValidatingAdmissionPolicySpec``: fails closed; its match constraints'."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("failurePolicy") is None:
        spec["failurePolicy"] = "Fail"
    _default_match_resources(spec.get("matchConstraints"))


def default_validating_admission_policy_binding(obj: dict[str, Any], on_create: bool) -> None:
    """The binding's ``matchResources`` get the match constraints' defaults."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _default_match_resources(spec.get("matchResources"))
