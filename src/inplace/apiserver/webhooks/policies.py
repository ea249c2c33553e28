"""ValidatingAdmissionPolicy: CEL validations bound to requests by a binding, in process.

Upstream's ``apiserver/pkg/admission/plugin/policy/validating``: for each binding whose policy
exists, the request must match the policy's ``matchConstraints`` and the binding's
``matchResources`` (rules with ``resourceNames``, exclusions, selectors, match policy); the
binding's ``paramRef`` names the params (by name, or every object its selector picks, in the
request's namespace when it names none); ``variables`` are evaluated first, then
``matchConditions`` (all must hold), then each validation. A validation that is false is a
failure with its ``message`` (or ``messageExpression``, or ``failed expression: <expr>``); an
expression that cannot be evaluated, or missing params, get the policy's ``failurePolicy``.
What a failure does is the binding's ``validationActions``: ``Deny`` refuses the request
(``deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b'
denied request: failed expression: object.spec.replicas <= 5``, reason ``Invalid`` unless the
validation names another), ``Warn`` returns a warning, ``Audit`` writes the API server's log
(there is no audit log). Policies run before the validating webhooks, as upstream's plugin
order has it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.validation.meta import selector_is_empty, selector_matches
from inplace.apiserver.admission import AdmissionRequest
from inplace.apiserver.cache import WatchCache
from inplace.apiserver.errors import StatusError, qualified
from inplace.apiserver.webhooks.matching import (
    ADMISSION_GROUP,
    Resource,
    matched_resource,
    selects_namespace,
    selects_object,
)
from inplace.apiserver.webhooks.review import build_review
from inplace.registry.cel import CompileError, EvaluationError, compile_expression, to_cel
from inplace.registry.kinds import Kind
from inplace.registry.served import Registry

log = logging.getLogger(__name__)

_CODES: Final = {"Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413}


@dataclass(frozen=True)
class Failure:
    """A validation that did not hold (or could not be evaluated under ``Fail``)."""

    policy: str
    binding: str
    message: str
    reason: str = "Invalid"


class _ConfigurationError(Exception):
    """A binding that cannot be applied (its params are missing); the failure policy decides."""


def matches_resources(
    match: Mapping[str, Any] | None,
    operation: str,
    requested: Resource,
    subresource: str,
    namespace: str,
    name: str,
    equivalents: list[Resource],
) -> bool:
    """Upstream's policy ``Matcher`` over ``resourceRules``/``excludeResourceRules`` (with their
    ``resourceNames``); the selectors are checked by the caller."""
    if match is None:
        return True

    def any_rule(rules: Iterable[Any]) -> bool:
        for rule in rules:
            if not isinstance(rule, Mapping):
                continue
            names = rule.get("resourceNames") or []
            if names and name not in names:
                continue
            hook = {"rules": [rule], "matchPolicy": match.get("matchPolicy", "Equivalent")}
            if matched_resource(hook, operation, requested, subresource, namespace, equivalents):
                return True
        return False

    if any_rule(match.get("excludeResourceRules") or ()):
        return False
    rules = match.get("resourceRules")
    return any_rule(rules) if rules else True


class AdmissionPolicies:
    """The ValidatingAdmissionPolicy plugin of one API server."""

    def __init__(self, cache: WatchCache, registry: Registry) -> None:
        self._cache = cache
        self._registry = registry
        self._policies = registry.by_kind(ADMISSION_GROUP, "ValidatingAdmissionPolicy")
        self._bindings = registry.by_kind(ADMISSION_GROUP, "ValidatingAdmissionPolicyBinding")
        self._namespaces = registry.by_kind("", "Namespace")

    def _get(self, kind: Kind, name: str, namespace: str | None) -> Mapping[str, Any] | None:
        entry = self._cache.get(kind, kind.storage_key(name, namespace), namespace)
        return entry.value if entry is not None else None

    def active(self) -> bool:
        """Whether any binding exists (without one no policy applies)."""
        return self._bindings is not None and bool(self._cache.count(self._bindings))

    def validate(
        self,
        request: AdmissionRequest,
        requested: Resource,
        namespace: str,
        namespace_labels: Mapping[str, str],
        equivalents: list[Resource],
    ) -> tuple[str, ...]:
        """Warnings of the failed ``Warn`` validations; raises the first ``Deny``."""
        if self._policies is None or self._bindings is None or not self.active():
            return ()
        obj = request.obj if request.operation != "DELETE" else None
        subresource = request.subresource or ""
        review = build_review(
            str(uuid.uuid4()),
            operation=request.operation,
            matched=requested,
            requested=requested,
            subresource=subresource,
            name=request.name,
            namespace=namespace if request.kind.namespaced else "",
            user=request.user,
            obj=obj,
            old=request.old,
            dry_run=request.dry_run,
            options=request.options,
        )["request"]
        namespace_object = (
            self._get(self._namespaces, namespace, None)
            if self._namespaces is not None and request.kind.namespaced and namespace
            else None
        )
        base = {
            "object": to_cel(obj),
            "oldObject": to_cel(request.old),
            "request": to_cel(review),
            "namespaceObject": to_cel(namespace_object),
        }
        warnings: list[str] = []
        denied: list[Failure] = []
        bindings = sorted(
            self._cache.iter_values(self._bindings),
            key=lambda b: str(b["metadata"]["name"]),
        )
        for binding in bindings:
            spec = binding.get("spec") or {}
            policy = self._get(self._policies, str(spec.get("policyName") or ""), None)
            if policy is None:
                continue
            policy_spec = policy.get("spec") or {}
            matched = True
            for match in (policy_spec.get("matchConstraints") or {}, spec.get("matchResources")):
                if match is None:
                    continue
                if not (
                    selects_object(match, obj, request.old)
                    and selects_namespace(match, requested, namespace, namespace_labels)
                    and matches_resources(
                        match,
                        request.operation,
                        requested,
                        subresource,
                        namespace,
                        request.name,
                        equivalents,
                    )
                ):
                    matched = False
                    break
            if not matched:
                continue
            failures = self._evaluate(policy, binding, base, namespace)
            actions = spec.get("validationActions") or ()
            for failure in failures:
                if "Deny" in actions:
                    denied.append(failure)
                if "Warn" in actions:
                    warnings.append(
                        f"Validation failed for ValidatingAdmissionPolicy '{failure.policy}' "
                        f"with binding '{failure.binding}': {failure.message}"
                    )
                if "Audit" in actions:
                    log.warning(
                        "validation.policy.admission.k8s.io/validation_failure: policy %s "
                        "binding %s: %s",
                        failure.policy,
                        failure.binding,
                        failure.message,
                    )
        if denied:
            raise _deny_error(denied[0], request, requested)
        return tuple(warnings)

    def _params(
        self, policy: Mapping[str, Any], binding: Mapping[str, Any], namespace: str
    ) -> list[Mapping[str, Any] | None]:
        kind_ref = (policy.get("spec") or {}).get("paramKind")
        if not isinstance(kind_ref, Mapping):
            return [None]
        ref = (binding.get("spec") or {}).get("paramRef")
        if not isinstance(ref, Mapping):
            raise _ConfigurationError(
                "failed to configure binding: paramRef is required when paramKind is set"
            )
        kind = self._registry.by_api_version(
            str(kind_ref.get("apiVersion")), str(kind_ref.get("kind"))
        )
        if kind is None:
            raise _ConfigurationError(
                f"failed to configure policy: failed to find resource referenced by paramKind: "
                f"'{kind_ref.get('apiVersion')}, Kind={kind_ref.get('kind')}'"
            )
        param_namespace = ref.get("namespace") or (namespace if kind.namespaced else None)
        if kind.namespaced and not param_namespace:
            raise _ConfigurationError(
                "failed to configure binding: cannot use namespaced paramRef in policy binding "
                "that matches cluster-scoped resources"
            )
        if ref.get("name"):
            found = self._get(kind, str(ref["name"]), param_namespace)
            params = [found] if found is not None else []
        else:
            selector = ref.get("selector") or {}
            params = [
                p
                for p in self._cache.iter_values(kind, param_namespace)
                if selector_is_empty(selector)
                or selector_matches(selector, (p.get("metadata") or {}).get("labels") or {})
            ]
        if not params:
            if ref.get("parameterNotFoundAction") == "Allow":
                return []
            raise _ConfigurationError(
                "failed to configure binding: no params found for policy binding with `Deny` "
                "parameterNotFoundAction"
            )
        return list(params)

    def _evaluate(
        self,
        policy: Mapping[str, Any],
        binding: Mapping[str, Any],
        base: Mapping[str, Any],
        namespace: str,
    ) -> list[Failure]:
        policy_name = str(policy["metadata"]["name"])
        binding_name = str(binding["metadata"]["name"])
        spec = policy.get("spec") or {}
        fail_closed = spec.get("failurePolicy", "Fail") != "Ignore"

        def error(message: str) -> list[Failure]:
            return [Failure(policy_name, binding_name, message)] if fail_closed else []

        try:
            params_list = self._params(policy, binding, namespace)
        except _ConfigurationError as exc:
            return error(str(exc))
        failures: list[Failure] = []
        for params in params_list:
            variables: dict[str, Any] = {**base, "params": to_cel(params)}
            computed: dict[str, Any] = {}
            try:
                for variable in spec.get("variables") or ():
                    variables["variables"] = to_cel(computed)
                    computed[str(variable.get("name"))] = compile_expression(
                        str(variable.get("expression"))
                    ).evaluate(variables)
                variables["variables"] = to_cel(computed)
                if not all(
                    compile_expression(str(c.get("expression"))).evaluate(variables) is True
                    for c in spec.get("matchConditions") or ()
                ):
                    continue
            except (CompileError, EvaluationError) as exc:
                failures.extend(error(f"failed to evaluate: {exc}"))
                continue
            for validation in spec.get("validations") or ():
                expression = str(validation.get("expression"))
                try:
                    holds = compile_expression(expression).evaluate(variables)
                except (CompileError, EvaluationError) as exc:
                    failures.extend(error(f"expression '{expression}' resulted in error: {exc}"))
                    continue
                if holds is True:
                    continue
                failures.append(
                    Failure(
                        policy_name,
                        binding_name,
                        _message(validation, variables),
                        str(validation.get("reason") or "Invalid"),
                    )
                )
        return failures


def _message(validation: Mapping[str, Any], variables: Mapping[str, Any]) -> str:
    """``messageExpression`` if it gives a one-line string, else ``message``, else the
    expression (upstream's order)."""
    message_expression = validation.get("messageExpression")
    if message_expression:
        try:
            text = compile_expression(str(message_expression)).evaluate(variables)
        except (CompileError, EvaluationError):
            text = None
        if isinstance(text, str) and text.strip() and "\n" not in text:
            return text
    if validation.get("message"):
        return str(validation["message"])
    return f"failed expression: {validation.get('expression')}"


def _deny_error(failure: Failure, request: AdmissionRequest, resource: Resource) -> StatusError:
    """Upstream's ``admission.NewForbidden`` with the validation's reason and code."""
    text = (
        f"ValidatingAdmissionPolicy '{failure.policy}' with binding '{failure.binding}' "
        f"denied request: {failure.message}"
    )
    what = qualified(resource.resource, resource.group)
    message = (
        f'{what} "{request.name}" is forbidden: {text}'
        if request.name
        else f"{what} is forbidden: {text}"
    )
    code = _CODES.get(failure.reason, 422)
    details: dict[str, Any] = {"kind": resource.resource, "causes": [{"message": text}]}
    if request.name:
        details["name"] = request.name
    if resource.group:
        details["group"] = resource.group
    return StatusError(code, message, reason=failure.reason, details=details)
