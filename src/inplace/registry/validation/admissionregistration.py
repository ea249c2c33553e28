"""Webhook configurations and ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1).

Upstream's ``pkg/apis/admissionregistration/validation/validation.go`` with its paths and
messages, and the client-config checks of ``apiserver/pkg/util/webhook/validation.go``. An
update relaxes what the stored object already broke (side effects, review versions, unique
names), as upstream's ``validationOptions`` do, so an object stored by an older server can
still be edited. A webhook's ``matchConditions`` and a policy's expressions must compile
(:mod:`inplace.registry.cel`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from inplace.api.names import dns1035_label_errors, dns1123_subdomain_errors
from inplace.api.validation.errors import (
    FieldError,
    as_int,
    as_list,
    as_map,
    as_str,
    child_path,
    duplicate,
    forbidden,
    index_path,
    invalid,
    name_is_dns_subdomain,
    not_supported,
    objects_in,
    required,
)
from inplace.api.validation.meta import (
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from inplace.registry.cel import CompileError, compile_expression

__all__ = [
    "validate_mutating_webhook_configuration",
    "validate_mutating_webhook_configuration_update",
    "validate_validating_admission_policy",
    "validate_validating_admission_policy_binding",
    "validate_validating_admission_policy_binding_update",
    "validate_validating_admission_policy_update",
    "validate_validating_webhook_configuration",
    "validate_validating_webhook_configuration_update",
]

ACCEPTED_REVIEW_VERSIONS: Final = ("v1", "v1beta1")
_FAILURE_POLICIES: Final = ("Fail", "Ignore")
_MATCH_POLICIES: Final = ("Equivalent", "Exact")
_SIDE_EFFECTS: Final = ("None", "NoneOnDryRun", "Some", "Unknown")
NO_SIDE_EFFECTS: Final = ("None", "NoneOnDryRun")
_OPERATIONS: Final = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_REINVOCATION: Final = ("IfNeeded", "Never")
_SCOPES: Final = ("*", "Cluster", "Namespaced")
_URL_FORM: Final = "; desired format: https://host[/path]"


@dataclass(frozen=True)
class _Options:
    """Upstream's ``validationOptions``: strict on create, relaxed by what the old object broke."""

    require_no_side_effects: bool = True
    require_recognized_review_version: bool = True
    require_unique_names: bool = True


def validate_mutating_webhook_configuration(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateMutatingWebhookConfiguration``."""
    _validate_configuration(errs, obj, mutating=True, opts=_Options())


def validate_validating_webhook_configuration(
    errs: list[FieldError], obj: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateValidatingWebhookConfiguration``."""
    _validate_configuration(errs, obj, mutating=False, opts=_Options())


def validate_mutating_webhook_configuration_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateMutatingWebhookConfigurationUpdate``."""
    validate_object_meta_update(errs, new, old)
    _validate_configuration(errs, new, mutating=True, opts=_relaxed_by(old))


def validate_validating_webhook_configuration_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateValidatingWebhookConfigurationUpdate``."""
    validate_object_meta_update(errs, new, old)
    _validate_configuration(errs, new, mutating=False, opts=_relaxed_by(old))


def _relaxed_by(old: Mapping[str, Any]) -> _Options:
    hooks = objects_in(old.get("webhooks"))
    names = [h.get("name") for h in hooks]
    return _Options(
        require_no_side_effects=all(h.get("sideEffects") in NO_SIDE_EFFECTS for h in hooks),
        require_recognized_review_version=all(
            not h.get("admissionReviewVersions")
            or any(v in ACCEPTED_REVIEW_VERSIONS for v in h.get("admissionReviewVersions") or ())
            for h in hooks
        ),
        require_unique_names=len(names) == len(set(map(str, names))),
    )


def _validate_configuration(
    errs: list[FieldError], obj: Mapping[str, Any], *, mutating: bool, opts: _Options
) -> None:
    validate_object_meta(errs, obj, namespaced=False, name_fn=name_is_dns_subdomain)
    seen: set[str] = set()
    for i, hook in enumerate(objects_in(as_list(errs, obj.get("webhooks"), "webhooks"))):
        path = index_path("webhooks", i)
        _validate_webhook(errs, hook, path, mutating=mutating, opts=opts)
        _validate_review_versions(
            errs,
            hook.get("admissionReviewVersions"),
            child_path(path, "admissionReviewVersions"),
            opts.require_recognized_review_version,
        )
        name = hook.get("name")
        if opts.require_unique_names and isinstance(name, str) and name:
            if name in seen:
                errs.append(duplicate(child_path(path, "name"), name))
            seen.add(name)


def _validate_webhook(
    errs: list[FieldError],
    hook: Mapping[str, Any],
    path: str,
    *,
    mutating: bool,
    opts: _Options,
) -> None:
    _validate_fully_qualified_name(
        errs, as_str(errs, hook.get("name"), child_path(path, "name")), child_path(path, "name")
    )
    rules_path = child_path(path, "rules")
    for i, rule in enumerate(objects_in(as_list(errs, hook.get("rules"), rules_path))):
        _validate_rule_with_operations(errs, rule, index_path(rules_path, i))
    _check_choice(errs, hook, path, "failurePolicy", _FAILURE_POLICIES)
    _check_choice(errs, hook, path, "matchPolicy", _MATCH_POLICIES)
    allowed = NO_SIDE_EFFECTS if opts.require_no_side_effects else _SIDE_EFFECTS
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errs.append(
            required(child_path(path, "sideEffects"), f"must specify one of {', '.join(allowed)}")
        )
    elif side_effects not in allowed:
        errs.append(not_supported(child_path(path, "sideEffects"), side_effects, allowed))
    timeout = as_int(errs, hook.get("timeoutSeconds"), child_path(path, "timeoutSeconds"))
    if timeout is not None and not 1 <= timeout <= 30:
        errs.append(
            invalid(
                child_path(path, "timeoutSeconds"),
                timeout,
                "the timeout value must be between 1 and 30 seconds",
            )
        )
    for selector in ("namespaceSelector", "objectSelector"):
        if hook.get(selector) is not None:
            validate_label_selector(errs, hook.get(selector), child_path(path, selector))
    if mutating:
        _check_choice(errs, hook, path, "reinvocationPolicy", _REINVOCATION)
    _validate_client_config(errs, hook.get("clientConfig"), child_path(path, "clientConfig"))
    _validate_named_expressions(
        errs, hook.get("matchConditions"), child_path(path, "matchConditions")
    )


def _check_choice(
    errs: list[FieldError], hook: Mapping[str, Any], path: str, key: str, valid: tuple[str, ...]
) -> None:
    value = hook.get(key)
    if value is not None and value not in valid:
        errs.append(not_supported(child_path(path, key), value, valid))


def _validate_fully_qualified_name(errs: list[FieldError], name: str, path: str) -> None:
    """Upstream ``utilvalidation.IsFullyQualifiedName``."""
    if not name:
        errs.append(required(path))
        return
    problems = dns1123_subdomain_errors(name)
    if problems:
        errs.append(invalid(path, name, ",".join(problems)))
    elif len(name.split(".")) < 3:
        errs.append(
            invalid(path, name, "should be a domain with at least three segments separated by dots")
        )


def _validate_review_versions(
    errs: list[FieldError], value: object, path: str, require_recognized: bool
) -> None:
    versions = as_list(errs, value, path)
    if not versions:
        errs.append(required(path, f"must specify one of {', '.join(ACCEPTED_REVIEW_VERSIONS)}"))
        return
    seen: set[str] = set()
    for i, version in enumerate(versions):
        text = as_str(errs, version, index_path(path, i))
        if text in seen:
            errs.append(invalid(index_path(path, i), text, "duplicate version"))
            continue
        seen.add(text)
        errs.extend(invalid(index_path(path, i), text, msg) for msg in dns1035_label_errors(text))
    if require_recognized and not seen.intersection(ACCEPTED_REVIEW_VERSIONS):
        errs.append(
            invalid(
                path,
                versions,
                f"must include at least one of {', '.join(ACCEPTED_REVIEW_VERSIONS)}",
            )
        )


def _validate_rule_with_operations(
    errs: list[FieldError], rule: Mapping[str, Any], path: str
) -> None:
    ops_path = child_path(path, "operations")
    operations = as_list(errs, rule.get("operations"), ops_path)
    if not operations:
        errs.append(required(ops_path))
    if len(operations) > 1 and "*" in operations:
        errs.append(
            invalid(ops_path, operations, "if '*' is present, must not specify other operations")
        )
    for i, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            errs.append(not_supported(index_path(ops_path, i), operation, _OPERATIONS))
    groups_path = child_path(path, "apiGroups")
    groups = as_list(errs, rule.get("apiGroups"), groups_path)
    if not groups:
        errs.append(required(groups_path))
    if len(groups) > 1 and "*" in groups:
        errs.append(
            invalid(groups_path, groups, "if '*' is present, must not specify other API groups")
        )
    versions_path = child_path(path, "apiVersions")
    versions = as_list(errs, rule.get("apiVersions"), versions_path)
    if not versions:
        errs.append(required(versions_path))
    if len(versions) > 1 and "*" in versions:
        errs.append(
            invalid(
                versions_path, versions, "if '*' is present, must not specify other API versions"
            )
        )
    for i, version in enumerate(versions):
        if version == "":
            errs.append(required(index_path(versions_path, i)))
    _validate_resources(errs, rule.get("resources"), child_path(path, "resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(not_supported(child_path(path, "scope"), scope, _SCOPES))


def _validate_resources(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``validateResources``: ``x``, ``x/y``, ``x/*``, ``*/y``, ``*``, ``*/*``."""
    resources = as_list(errs, value, path)
    if not resources:
        errs.append(required(path))
    wildcard_sub_of: set[str] = set()
    wildcard_res_for: set[str] = set()
    double_wildcard = single_wildcard = without_subresource = False
    for i, item in enumerate(resources):
        text = as_str(errs, item, index_path(path, i))
        if not text:
            errs.append(required(index_path(path, i)))
            continue
        double_wildcard |= text == "*/*"
        single_wildcard |= text == "*"
        if "/" not in text:
            without_subresource = text != "*"
            continue
        res, sub = text.split("/", 1)
        if res in wildcard_sub_of:
            errs.append(
                invalid(
                    index_path(path, i), text, f"if '{res}/*' is present, must not specify {text}"
                )
            )
        if sub in wildcard_res_for:
            errs.append(
                invalid(
                    index_path(path, i), text, f"if '*/{sub}' is present, must not specify {text}"
                )
            )
        if sub == "*":
            wildcard_sub_of.add(res)
        if res == "*":
            wildcard_res_for.add(sub)
    if len(resources) > 1 and double_wildcard:
        errs.append(
            invalid(path, resources, "if '*/*' is present, must not specify other resources")
        )
    if single_wildcard and without_subresource:
        errs.append(
            invalid(
                path,
                resources,
                "if '*' is present, must not specify other resources without subresources",
            )
        )


def _validate_client_config(errs: list[FieldError], value: object, path: str) -> None:
    config = as_map(errs, value, path)
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        errs.append(required(path, "exactly one of url or service is required"))
    elif url is not None:
        _validate_url(errs, as_str(errs, url, child_path(path, "url")), child_path(path, "url"))
    else:
        _validate_service(
            errs, as_map(errs, service, child_path(path, "service")), child_path(path, "service")
        )


def _validate_url(errs: list[FieldError], url: str, path: str) -> None:
    """Upstream ``webhook.ValidateWebhookURL`` with https required."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
    except ValueError as exc:
        errs.append(required(path, f"url must be a valid URL: {exc}{_URL_FORM}"))
        return
    if parts.scheme != "https":
        errs.append(
            invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM)
        )
    if not host:
        errs.append(invalid(path, host, "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        errs.append(
            invalid(
                path,
                parts.netloc.rpartition("@")[0],
                "user information is not permitted in the URL",
            )
        )
    if parts.fragment:
        errs.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errs.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))


def _validate_service(errs: list[FieldError], service: Mapping[str, Any], path: str) -> None:
    """Upstream ``webhook.ValidateWebhookService``."""
    if not service.get("name"):
        errs.append(required(child_path(path, "name"), "service name is required"))
    if not service.get("namespace"):
        errs.append(required(child_path(path, "namespace"), "service namespace is required"))
    port = as_int(errs, service.get("port"), child_path(path, "port"))
    if port is not None and not 1 <= port <= 65535:
        errs.append(
            invalid(
                child_path(path, "port"),
                port,
                "port is not valid: must be between 1 and 65535, inclusive",
            )
        )
    url_path = service.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return
    path_field = child_path(path, "path")
    if url_path == "//":
        errs.append(invalid(path_field, url_path, "segment[0] may not be empty"))
        return
    if not url_path.startswith("/"):
        errs.append(invalid(path_field, url_path, "must start with a '/'"))
    steps = url_path[1:].removesuffix("/")
    for i, step in enumerate(steps.split("/")):
        if not step:
            errs.append(invalid(path_field, url_path, f"segment[{i}] may not be empty"))
            continue
        errs.extend(
            invalid(path_field, url_path, f"segment[{i}]: {msg}")
            for msg in dns1123_subdomain_errors(step)
        )


# -- ValidatingAdmissionPolicy and its binding ---------------------------------------------------

_POLICY_REASONS: Final = ("Forbidden", "Invalid", "RequestEntityTooLarge")
VALIDATION_ACTIONS: Final = ("Audit", "Deny", "Warn")
_PARAM_NOT_FOUND_ACTIONS: Final = ("Allow", "Deny")


def _check_expression(errs: list[FieldError], value: object, path: str) -> None:
    """A CEL expression that compiles (upstream: ``compilation failed: ...``)."""
    expression = as_str(errs, value, path)
    if not expression:
        errs.append(required(path, "expression is not specified"))
        return
    try:
        compile_expression(expression)
    except CompileError as exc:
        errs.append(invalid(path, expression, f"compilation failed: {exc}"))


def _validate_match_resources(
    errs: list[FieldError], value: object, path: str, *, rules_required: bool
) -> None:
    match = as_map(errs, value, path)
    for selector in ("namespaceSelector", "objectSelector"):
        if match.get(selector) is not None:
            validate_label_selector(errs, match.get(selector), child_path(path, selector))
    _check_choice(errs, match, path, "matchPolicy", _MATCH_POLICIES)
    rules_path = child_path(path, "resourceRules")
    rules = objects_in(as_list(errs, match.get("resourceRules"), rules_path))
    if rules_required and not rules:
        errs.append(required(rules_path))
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(objects_in(match.get(key))):
            _validate_rule_with_operations(errs, rule, index_path(child_path(path, key), i))


def validate_validating_admission_policy(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateValidatingAdmissionPolicy`` (expressions compiled by
    :mod:`inplace.registry.cel`)."""
    validate_object_meta(errs, obj, namespaced=False, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    policy = spec.get("failurePolicy")
    if policy is None:
        errs.append(required("spec.failurePolicy"))
    elif policy not in _FAILURE_POLICIES:
        errs.append(not_supported("spec.failurePolicy", policy, _FAILURE_POLICIES))
    if spec.get("paramKind") is not None:
        kind = as_map(errs, spec.get("paramKind"), "spec.paramKind")
        for key in ("apiVersion", "kind"):
            if not kind.get(key):
                errs.append(required(f"spec.paramKind.{key}"))
    if spec.get("matchConstraints") is None:
        errs.append(required("spec.matchConstraints"))
    else:
        _validate_match_resources(
            errs, spec.get("matchConstraints"), "spec.matchConstraints", rules_required=True
        )
    validations = objects_in(as_list(errs, spec.get("validations"), "spec.validations"))
    if not validations and not spec.get("auditAnnotations"):
        errs.append(
            required(
                "spec.validations", "validations or auditAnnotations must contain at least one item"
            )
        )
    for i, validation in enumerate(validations):
        path = index_path("spec.validations", i)
        _check_expression(errs, validation.get("expression"), child_path(path, "expression"))
        if validation.get("messageExpression"):
            _check_expression(
                errs, validation.get("messageExpression"), child_path(path, "messageExpression")
            )
        message = validation.get("message")
        if isinstance(message, str) and message and not message.strip():
            errs.append(
                invalid(
                    child_path(path, "message"), message, "message must be non-empty if specified"
                )
            )
        elif isinstance(message, str) and "\n" in message:
            errs.append(
                invalid(
                    child_path(path, "message"), message, "message must not contain line breaks"
                )
            )
        reason = validation.get("reason")
        if reason is not None and reason not in _POLICY_REASONS:
            errs.append(not_supported(child_path(path, "reason"), reason, _POLICY_REASONS))
    for key in ("variables", "matchConditions"):
        _validate_named_expressions(errs, spec.get(key), f"spec.{key}")


def _validate_named_expressions(errs: list[FieldError], value: object, path: str) -> None:
    """``matchConditions`` and ``variables``: unique names, expressions that compile."""
    seen: set[str] = set()
    for i, item in enumerate(objects_in(as_list(errs, value, path))):
        item_path = index_path(path, i)
        name = as_str(errs, item.get("name"), child_path(item_path, "name"))
        if not name:
            errs.append(required(child_path(item_path, "name")))
        elif name in seen:
            errs.append(duplicate(child_path(item_path, "name"), name))
        seen.add(name)
        _check_expression(errs, item.get("expression"), child_path(item_path, "expression"))


def validate_validating_admission_policy_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    validate_object_meta_update(errs, new, old)
    validate_validating_admission_policy(errs, new)


def validate_validating_admission_policy_binding(
    errs: list[FieldError], obj: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateValidatingAdmissionPolicyBinding``."""
    validate_object_meta(errs, obj, namespaced=False, name_fn=name_is_dns_subdomain)
    spec = as_map(errs, obj.get("spec"), "spec")
    if not spec.get("policyName"):
        errs.append(required("spec.policyName"))
    if spec.get("paramRef") is not None:
        ref = as_map(errs, spec.get("paramRef"), "spec.paramRef")
        if ref.get("name") and ref.get("selector") is not None:
            errs.append(forbidden("spec.paramRef.name", "name and selector are mutually exclusive"))
        if not ref.get("name") and ref.get("selector") is None:
            errs.append(required("spec.paramRef", "one of name or selector must be set"))
        if ref.get("selector") is not None:
            validate_label_selector(errs, ref.get("selector"), "spec.paramRef.selector")
        action = ref.get("parameterNotFoundAction")
        if action is None:
            errs.append(required("spec.paramRef.parameterNotFoundAction"))
        elif action not in _PARAM_NOT_FOUND_ACTIONS:
            errs.append(
                not_supported(
                    "spec.paramRef.parameterNotFoundAction", action, _PARAM_NOT_FOUND_ACTIONS
                )
            )
    if spec.get("matchResources") is not None:
        _validate_match_resources(
            errs, spec.get("matchResources"), "spec.matchResources", rules_required=False
        )
    actions_path = "spec.validationActions"
    actions = as_list(errs, spec.get("validationActions"), actions_path)
    if not actions:
        errs.append(required(actions_path, "at least one validation action is required"))
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action in seen:
            errs.append(duplicate(index_path(actions_path, i), action))
        elif action not in VALIDATION_ACTIONS:
            errs.append(not_supported(index_path(actions_path, i), action, VALIDATION_ACTIONS))
        seen.add(str(action))
    if {"Deny", "Warn"} <= seen:
        errs.append(
            invalid(
                actions_path,
                actions,
                "must not contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)",
            )
        )


def validate_validating_admission_policy_binding_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    validate_object_meta_update(errs, new, old)
    validate_validating_admission_policy_binding(errs, new)
