"""The RBAC authorizer: the rules a user holds, from the Roles and bindings in the watch cache.

Upstream's ``DefaultRuleResolver`` and ``RBACAuthorizer``: every ClusterRoleBinding that
names the user (by name, by one of its groups, or as a service account) contributes its
ClusterRole's rules everywhere; in a namespace, every RoleBinding there contributes its Role's
or ClusterRole's rules. A binding whose role is missing contributes nothing and is reported
(``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found``) in the reason of a denial.

The rules of one identity in one namespace are resolved once and kept until any Role or
binding changes, so a request costs a dictionary lookup and a scan of the rules it holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from inplace.apiserver.auth import User, service_account_of
from inplace.apiserver.authz.rules import Attributes, PolicyRule, rule_allows
from inplace.apiserver.cache import CachedEvent, WatchCache
from inplace.registry.kinds import Kind
from inplace.registry.served import Registry

__all__ = ["RBAC_GROUP", "Decision", "RBACAuthorizer", "ResolvedRule"]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorizer's answer: allowed, denied outright, or no opinion (the next one asks)."""

    allowed: bool
    reason: str = ""
    denied: bool = False


@dataclass(frozen=True, slots=True)
class ResolvedRule:
    """A rule a user holds and the binding that gave it (for "allowed by" reasons)."""

    rule: PolicyRule
    source: str


@dataclass(frozen=True, slots=True)
class _RuleSet:
    rules: tuple[ResolvedRule, ...]
    errors: tuple[str, ...]


def _describe_subject(subject: dict[str, Any], namespace: str) -> str:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or namespace}"'
    return f'{kind} "{name}"'


def _applies(user: User, subject: dict[str, Any], namespace: str) -> bool:
    """Upstream ``appliesToUser``."""
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and service_account_of(user.name) == (sa_namespace, name)
    return False


def _rules_of(role: dict[str, Any]) -> list[PolicyRule]:
    rules = role.get("rules")
    if not isinstance(rules, list):
        return []
    return [PolicyRule.from_json(rule) for rule in rules if isinstance(rule, dict)]


class RBACAuthorizer:
    """Authorizes from the RBAC objects in the watch cache (upstream's RBAC mode)."""

    def __init__(self, cache: WatchCache, registry: Registry) -> None:
        self.cache = cache
        kinds = {
            name: registry.by_kind(RBAC_GROUP, name)
            for name in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
        }
        missing = [name for name, kind in kinds.items() if kind is None]
        if missing:
            raise ValueError(f"the registry serves no {', '.join(missing)}")
        self._role: Kind = kinds["Role"]  # type: ignore[assignment]
        self._cluster_role: Kind = kinds["ClusterRole"]  # type: ignore[assignment]
        self._binding: Kind = kinds["RoleBinding"]  # type: ignore[assignment]
        self._cluster_binding: Kind = kinds["ClusterRoleBinding"]  # type: ignore[assignment]
        self._kinds = frozenset(kinds.values())
        self._memo: dict[tuple[str, tuple[str, ...], str], _RuleSet] = {}
        cache.add_listener(self._on_change)

    def _on_change(self, event: CachedEvent) -> None:
        if event.kind in self._kinds:
            self._memo.clear()

    # -- resolving ----------------------------------------------------------------------------

    def role_rules(self, ref: dict[str, Any], namespace: str) -> list[PolicyRule]:
        """Upstream ``GetRoleReferenceRules``; raises LookupError with upstream's message."""
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "ClusterRole":
            entry = self.cache.get(self._cluster_role, self._cluster_role.storage_key(name), None)
            if entry is None:
                raise LookupError(f'clusterrole.rbac.authorization.k8s.io "{name}" not found')
            return _rules_of(entry.value)
        if kind == "Role":
            entry = self.cache.get(self._role, self._role.storage_key(name, namespace), namespace)
            if entry is None:
                raise LookupError(f'role.rbac.authorization.k8s.io "{name}" not found')
            return _rules_of(entry.value)
        raise LookupError(f'unsupported role reference kind: "{kind}"')

    def _bindings(self, namespace: str) -> Iterator[tuple[dict[str, Any], str, str]]:
        """(binding, its namespace or "", its description prefix) for every binding that
        applies in `namespace`: cluster-wide ones first, as upstream visits them."""
        for value in self.cache.iter_values(self._cluster_binding):
            yield value, "", f'ClusterRoleBinding "{value["metadata"]["name"]}"'
        if namespace:
            for value in self.cache.iter_values(self._binding, namespace):
                name = value["metadata"]["name"]
                yield value, namespace, f'RoleBinding "{name}/{namespace}"'

    def _resolve(self, user: User, namespace: str) -> _RuleSet:
        key = (user.name, user.groups, namespace)
        found = self._memo.get(key)
        if found is not None:
            return found
        rules: list[ResolvedRule] = []
        errors: list[str] = []
        for binding, binding_ns, described in self._bindings(namespace):
            subjects = binding.get("subjects") or []
            subject = next(
                (s for s in subjects if isinstance(s, dict) and _applies(user, s, binding_ns)),
                None,
            )
            if subject is None:
                continue
            ref = binding.get("roleRef") or {}
            try:
                role_rules = self.role_rules(ref, binding_ns)
            except LookupError as exc:
                errors.append(str(exc))
                continue
            source = (
                f'{described} of {ref.get("kind")} "{ref.get("name")}" to '
                f"{_describe_subject(subject, binding_ns)}"
            )
            rules.extend(ResolvedRule(rule, source) for rule in role_rules)
        resolved = _RuleSet(tuple(rules), tuple(errors))
        self._memo[key] = resolved
        return resolved

    def rules_for(self, user: User, namespace: str) -> tuple[list[PolicyRule], list[str]]:
        """Upstream ``RulesFor``: every rule `user` holds in `namespace` ("" for cluster-wide
        only), and the errors met resolving them."""
        resolved = self._resolve(user, namespace)
        return [r.rule for r in resolved.rules], list(resolved.errors)

    # -- deciding -----------------------------------------------------------------------------

    def authorize(self, attrs: Attributes) -> Decision:
        """Allowed with the binding that allows it, or no opinion with any resolution errors
        as the reason (upstream ``RBACAuthorizer.Authorize``)."""
        resolved = self._resolve(attrs.user, attrs.namespace)
        for held in resolved.rules:
            if rule_allows(attrs, held.rule):
                return Decision(True, f"RBAC: allowed by {held.source}")
        reason = f"RBAC: {_aggregate(resolved.errors)}" if resolved.errors else ""
        return Decision(False, reason)


def _aggregate(errors: tuple[str, ...]) -> str:
    """Upstream ``utilerrors.NewAggregate(...).Error()``."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"
