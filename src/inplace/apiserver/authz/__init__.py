"""What a user may do: the authorizer chain, upstream's ``--authorization-mode=Node,RBAC``.

Every request is authorized before it is served (:mod:`inplace.apiserver.server`): a member of
``system:masters`` may do anything (upstream's privileged-group authorizer, which the admin
uses); a node agent is decided by the Node authorizer (:mod:`.node`), and then NodeRestriction
looks at what it writes; everyone else, nodes included when the Node authorizer has no
opinion, by RBAC (:mod:`.rbac`) from the Roles and bindings in the store, which start as
upstream's bootstrap policy (:mod:`.policy`, :mod:`.controller_policy`, kept by
:mod:`.reconcile`). A denial is a 403 with upstream's message; its reason, when there is one
(a binding naming a missing role), follows the colon.

The package is cut by concern: :mod:`.rules` (matching and covering rules, pure),
:mod:`.rbac`, :mod:`.node`, :mod:`.policy` and :mod:`.controller_policy` (the default roles),
:mod:`.reconcile` (bootstrap and aggregation), :mod:`.escalation` (no one grants what they do
not hold), :mod:`.impersonation` and :mod:`.reviews` (the ``authorization.k8s.io`` and
``authentication.k8s.io`` review APIs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inplace.apiserver.auth import MASTERS_GROUP, User
from inplace.apiserver.authz.node import NodeAuthorizer, is_node_identity
from inplace.apiserver.authz.rbac import Decision, RBACAuthorizer
from inplace.apiserver.authz.rules import Attributes, PolicyRule
from inplace.apiserver.cache import WatchCache
from inplace.apiserver.errors import StatusError, qualified
from inplace.registry.served import Registry

__all__ = [
    "Attributes",
    "Authorizers",
    "Decision",
    "RulesReview",
    "forbidden_error",
    "forbidden_message",
]

_FULL_AUTHORITY = (
    PolicyRule(("*",), ("*",), ("*",)),
    PolicyRule(("*",), non_resource_urls=("*",)),
)


@dataclass
class RulesReview:
    """Every rule a user holds in a namespace (upstream ``RulesFor`` over the chain)."""

    resource_rules: list[PolicyRule] = field(default_factory=list)
    non_resource_rules: list[PolicyRule] = field(default_factory=list)
    incomplete: bool = False
    errors: list[str] = field(default_factory=list)


class Authorizers:
    """The chain: privileged group, Node, RBAC; the first to allow decides. A registry that
    serves no RBAC kinds (a test's) leaves only the privileged group."""

    def __init__(self, cache: WatchCache, registry: Registry) -> None:
        served = {(kind.group, kind.kind) for kind in registry}
        #: Whether the registry serves RBAC (the default roles are then reconciled).
        self.enabled = ("rbac.authorization.k8s.io", "ClusterRole") in served
        self._rbac = RBACAuthorizer(cache, registry) if self.enabled else None
        self.node = (
            NodeAuthorizer(cache, registry) if {("", "Pod"), ("", "Node")} <= served else None
        )

    @property
    def rbac(self) -> RBACAuthorizer:
        if self._rbac is None:
            raise LookupError("this server's registry serves no RBAC kinds")
        return self._rbac

    def authorize(self, attrs: Attributes) -> Decision:
        """Upstream's union authorizer: the reasons of those with no opinion are joined."""
        if MASTERS_GROUP in attrs.user.groups:
            return Decision(True, "")
        reasons: list[str] = []
        node = self.node.authorize(attrs) if self.node is not None else None
        if node is not None:
            if node.allowed:
                return node
            if node.reason:
                reasons.append(node.reason)
        if self._rbac is None:
            return Decision(False, "\n".join(reasons))
        decision = self._rbac.authorize(attrs)
        if decision.allowed:
            return decision
        if decision.reason:
            reasons.append(decision.reason)
        return Decision(False, "\n".join(reasons))

    def allowed(self, attrs: Attributes) -> bool:
        return self.authorize(attrs).allowed

    def rules_for(self, user: User, namespace: str) -> RulesReview:
        """Upstream ``RulesFor`` of the chain, for SelfSubjectRulesReview."""
        review = RulesReview()
        if MASTERS_GROUP in user.groups:
            review.resource_rules.append(_FULL_AUTHORITY[0])
            review.non_resource_rules.append(_FULL_AUTHORITY[1])
        if is_node_identity(user):
            review.incomplete = True
            review.errors.append("node authorizer does not support user rule resolution")
        if self._rbac is None:
            return review
        rules, errors = self._rbac.rules_for(user, namespace)
        for rule in rules:
            if rule.resources:
                review.resource_rules.append(rule)
            if rule.non_resource_urls:
                review.non_resource_rules.append(rule)
        review.errors.extend(errors)
        return review

    def restrict(
        self, attrs: Attributes, *, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None
    ) -> None:
        """NodeRestriction for a node's write, after the chain allowed it; raises the 403."""
        if self.node is None:
            return
        reason = self.node.restrict(attrs.user, attrs, new=new, old=old)
        if reason is not None:
            raise forbidden_error(attrs, reason)


def forbidden_message(attrs: Attributes) -> str:
    """Upstream ``forbiddenMessage``."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = attrs.combined_resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return (
        f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group '
        f'"{attrs.api_group}" {where}'
    )


def forbidden_error(attrs: Attributes, reason: str) -> StatusError:
    """Upstream ``responsewriters.Forbidden``: a 403 Status naming the resource and object."""
    message = forbidden_message(attrs)
    if reason:
        message = f"{message}: {reason}"
    if not attrs.resource_request:
        return StatusError(403, f"forbidden: {message}", details={})
    what = qualified(attrs.resource, attrs.api_group)
    target = f'{what} "{attrs.name}"' if attrs.name else what
    details: dict[str, Any] = {"kind": attrs.resource}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.api_group:
        details["group"] = attrs.api_group
    return StatusError(403, f"{target} is forbidden: {message}", details=details)
