"""The review APIs: ask the authorizer, or learn who you are, without doing anything.

``authorization.k8s.io/v1``: SelfSubjectAccessReview ("may I?", ``kubectl auth can-i``),
SubjectAccessReview ("may they?"), LocalSubjectAccessReview (in one namespace) and
SelfSubjectRulesReview (everything I may do in a namespace, ``kubectl auth can-i --list``);
``authentication.k8s.io/v1``: SelfSubjectReview (``kubectl auth whoami``). Each is created,
never stored: the response is the request with its ``status`` filled in (upstream
``pkg/registry/authorization/*/rest.go``, validation from
``pkg/apis/authorization/validation``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.api.validation.errors import (
    FieldError,
    ValidationError,
    as_list,
    as_map,
    as_str,
    invalid,
)
from inplace.apiserver.auth import User
from inplace.apiserver.authz import Authorizers
from inplace.apiserver.authz.rules import Attributes, PolicyRule
from inplace.apiserver.errors import StatusError, bad_request

__all__ = ["AUTHENTICATION_GROUP", "AUTHORIZATION_GROUP", "REVIEW_KINDS", "review"]

AUTHORIZATION_GROUP: Final = "authorization.k8s.io"
AUTHENTICATION_GROUP: Final = "authentication.k8s.io"
#: (group, kind) of every review this module answers.
REVIEW_KINDS: Final = frozenset(
    {
        (AUTHORIZATION_GROUP, "SelfSubjectAccessReview"),
        (AUTHORIZATION_GROUP, "SubjectAccessReview"),
        (AUTHORIZATION_GROUP, "LocalSubjectAccessReview"),
        (AUTHORIZATION_GROUP, "SelfSubjectRulesReview"),
        (AUTHENTICATION_GROUP, "SelfSubjectReview"),
    }
)


def _invalid(kind: str, group: str, errs: list[FieldError]) -> StatusError:
    error = ValidationError(kind, "", errs, group=group)
    return StatusError(422, error.message(), body=error.status())


def _validate_spec(errs: list[FieldError], spec: Mapping[str, Any], *, subject: bool) -> None:
    """Upstream ``ValidateSubjectAccessReviewSpec`` / ``ValidateSelfSubjectAccessReviewSpec``."""
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        errs.append(
            invalid(
                "spec.nonResourceAttributes",
                non_resource,
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if resource is None and non_resource is None:
        errs.append(
            invalid(
                "spec.resourceAttributes",
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    as_map(errs, resource, "spec.resourceAttributes")
    as_map(errs, non_resource, "spec.nonResourceAttributes")
    if subject:
        user = as_str(errs, spec.get("user"), "spec.user")
        groups = as_list(errs, spec.get("groups"), "spec.groups")
        if not user and not groups:
            errs.append(
                invalid("spec.user", user, "at least one of user or group must be specified")
            )


def _attributes(user: User, spec: Mapping[str, Any]) -> Attributes:
    """Upstream ``ResourceAttributesFrom`` / ``NonResourceAttributesFrom``."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, Mapping):

        def text(key: str) -> str:
            value = resource.get(key)
            return value if isinstance(value, str) else ""

        return Attributes(
            user,
            text("verb"),
            namespace=text("namespace"),
            api_group=text("group"),
            api_version=text("version"),
            resource=text("resource"),
            subresource=text("subresource"),
            name=text("name"),
        )
    attributes = spec.get("nonResourceAttributes")
    non_resource = attributes if isinstance(attributes, Mapping) else {}
    return Attributes(
        user,
        str(non_resource.get("verb") or ""),
        resource_request=False,
        path=str(non_resource.get("path") or ""),
    )


def _spec_user(spec: Mapping[str, Any]) -> User:
    extra_raw = spec.get("extra")
    extra: list[tuple[str, tuple[str, ...]]] = []
    if isinstance(extra_raw, Mapping):
        for key, values in sorted(extra_raw.items()):
            if isinstance(values, list):
                extra.append((str(key), tuple(str(v) for v in values)))
    groups = spec.get("groups")
    return User(
        str(spec.get("user") or ""),
        tuple(str(g) for g in groups) if isinstance(groups, list) else (),
        str(spec.get("uid") or ""),
        tuple(extra),
    )


def _access_review(
    authz: Authorizers, kind: str, caller: User, namespace: str | None, body: dict[str, Any]
) -> dict[str, Any]:
    errs: list[FieldError] = []
    spec = as_map(errs, body.get("spec"), "spec")
    _validate_spec(errs, spec, subject=kind != "SelfSubjectAccessReview")
    if kind == "LocalSubjectAccessReview" and spec.get("nonResourceAttributes") is not None:
        errs.append(
            invalid(
                "spec.nonResourceAttributes",
                spec.get("nonResourceAttributes"),
                "disallowed on this kind of request",
            )
        )
    if errs:
        raise _invalid(kind, AUTHORIZATION_GROUP, errs)
    if kind == "LocalSubjectAccessReview":
        asked = (spec.get("resourceAttributes") or {}).get("namespace") or ""
        if not namespace:
            raise bad_request("namespace is required on this type: ")
        if asked != namespace:
            raise bad_request(
                f"spec.resourceAttributes.namespace must match namespace: {namespace}"
            )
    user = caller if kind == "SelfSubjectAccessReview" else _spec_user(spec)
    decision = authz.authorize(_attributes(user, spec))
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.denied:
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    return {**body, "status": status}


def _rule_json(rule: PolicyRule, *, resource: bool) -> dict[str, Any]:
    if resource:
        out: dict[str, Any] = {"verbs": list(rule.verbs), "apiGroups": list(rule.api_groups)}
        out["resources"] = list(rule.resources)
        if rule.resource_names:
            out["resourceNames"] = list(rule.resource_names)
        return out
    return {"verbs": list(rule.verbs), "nonResourceURLs": list(rule.non_resource_urls)}


def _rules_review(authz: Authorizers, caller: User, body: dict[str, Any]) -> dict[str, Any]:
    """Upstream ``SelfSubjectRulesReview``: the namespace is required."""
    spec = body.get("spec")
    namespace = spec.get("namespace") if isinstance(spec, Mapping) else None
    if not isinstance(namespace, str) or not namespace:
        raise bad_request("no namespace on request")
    review = authz.rules_for(caller, namespace)
    status: dict[str, Any] = {
        "resourceRules": [_rule_json(r, resource=True) for r in review.resource_rules],
        "nonResourceRules": [_rule_json(r, resource=False) for r in review.non_resource_rules],
        "incomplete": review.incomplete,
    }
    if review.errors:
        status["evaluationError"] = (
            review.errors[0] if len(review.errors) == 1 else "[" + ", ".join(review.errors) + "]"
        )
    return {**body, "status": status}


def _self_subject_review(caller: User, body: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = {"username": caller.name}
    if caller.uid:
        info["uid"] = caller.uid
    if caller.groups:
        info["groups"] = list(caller.groups)
    if caller.extra:
        info["extra"] = {key: list(values) for key, values in caller.extra}
    return {**body, "metadata": {"creationTimestamp": None}, "status": {"userInfo": info}}


def review(
    authz: Authorizers,
    group: str,
    kind: str,
    api_version: str,
    caller: User,
    namespace: str | None,
    body: Any,
) -> dict[str, Any]:
    """Answer one review request (already authorized as ``create`` on its resource)."""
    if not isinstance(body, dict):
        raise bad_request(f"the body of the request must be a {kind} object")
    body = {**body, "apiVersion": api_version, "kind": kind}
    body.setdefault("metadata", {"creationTimestamp": None})
    if group == AUTHENTICATION_GROUP:
        return _self_subject_review(caller, body)
    if kind == "SelfSubjectRulesReview":
        return _rules_review(authz, caller, body)
    return _access_review(authz, kind, caller, namespace, body)
