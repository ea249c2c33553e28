"""RBAC policy rules: what a request is (its attributes), whether a rule allows it, and whether
one set of rules covers another (escalation checks), as upstream decides each.

Pure functions over plain values, table-tested. Sources: ``pkg/apis/rbac/v1/
evaluation_helpers.go`` (``VerbMatches``, ``ResourceMatches`` with ``*/subresource``,
``NonResourceURLMatches`` with a trailing ``*``, ``CompactString``),
``plugin/pkg/auth/authorizer/rbac/rbac.go`` (``RuleAllows``),
``component-helpers/auth/rbac/validation/policy_comparator.go`` (``Covers``,
``BreakdownRule``) and ``pkg/registry/rbac/validation/policy_compact.go`` (``CompactRules``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from inplace.api.validation.errors import go_quote
from inplace.apiserver.auth import User

__all__ = [
    "ALL",
    "Attributes",
    "PolicyRule",
    "breakdown",
    "compact_rules",
    "compact_string",
    "covers",
    "go_strings",
    "rule_allows",
    "rules_allow",
]

#: Upstream's ``VerbAll``, ``APIGroupAll``, ``ResourceAll`` and ``NonResourceAll``.
ALL: Final = "*"


@dataclass(frozen=True, slots=True)
class Attributes:
    """One request as the authorizers see it (upstream ``authorizer.AttributesRecord``):
    a resource request (verb on group/resource/subresource, maybe a name and namespace) or a
    non-resource request (verb on a URL path)."""

    user: User
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    api_version: str = "*"
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""

    @property
    def combined_resource(self) -> str:
        """``pods/exec`` for a subresource request, else the resource."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One rule of a Role or ClusterRole, with upstream's field names in JSON."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = field(default=())

    @classmethod
    def from_json(cls, rule: Mapping[str, Any]) -> PolicyRule:
        """A rule from stored (already validated) JSON; anything malformed reads as absent."""

        def strings(key: str) -> tuple[str, ...]:
            value = rule.get(key)
            if not isinstance(value, list):
                return ()
            return tuple(item for item in value if isinstance(item, str))

        return cls(
            strings("verbs"),
            strings("apiGroups"),
            strings("resources"),
            strings("resourceNames"),
            strings("nonResourceURLs"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.api_groups or self.resources:
            out["apiGroups"] = list(self.api_groups)
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.resources:
            out["resources"] = list(self.resources)
        out["verbs"] = list(self.verbs)
        return out


# -- matching a request ------------------------------------------------------------------------


def _verb_matches(rule: PolicyRule, verb: str) -> bool:
    return ALL in rule.verbs or verb in rule.verbs


def _group_matches(rule: PolicyRule, group: str) -> bool:
    return ALL in rule.api_groups or group in rule.api_groups


def _resource_matches(rule: PolicyRule, combined: str, subresource: str) -> bool:
    """``*`` matches every resource and subresource; ``*/scale`` every resource's scale."""
    for resource in rule.resources:
        if resource in (ALL, combined):
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def _name_matches(rule: PolicyRule, name: str) -> bool:
    return not rule.resource_names or name in rule.resource_names


def _url_matches(rule: PolicyRule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url in (ALL, path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attrs: Attributes, rule: PolicyRule) -> bool:
    """Upstream ``RuleAllows``."""
    if not _verb_matches(rule, attrs.verb):
        return False
    if attrs.resource_request:
        return (
            _group_matches(rule, attrs.api_group)
            and _resource_matches(rule, attrs.combined_resource, attrs.subresource)
            and _name_matches(rule, attrs.name)
        )
    return _url_matches(rule, attrs.path)


def rules_allow(attrs: Attributes, rules: Iterable[PolicyRule]) -> bool:
    return any(rule_allows(attrs, rule) for rule in rules)


# -- comparing rule sets (escalation checks) --------------------------------------------------


def breakdown(rule: PolicyRule) -> list[PolicyRule]:
    """Upstream ``BreakdownRule``: one rule per group, resource, verb (and name, if any), then
    one per non-resource URL and verb."""
    out: list[PolicyRule] = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                if rule.resource_names:
                    out.extend(
                        PolicyRule((verb,), (group,), (resource,), (name,))
                        for name in rule.resource_names
                    )
                else:
                    out.append(PolicyRule((verb,), (group,), (resource,)))
    for url in rule.non_resource_urls:
        out.extend(PolicyRule((verb,), non_resource_urls=(url,)) for verb in rule.verbs)
    return out


def _has_all(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return set(wanted) <= set(owned)


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if ALL in owned or _has_all(owned, wanted):
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource:
            return False
        if f"*/{resource.split('/', 1)[1]}" not in owned:
            return False
    return True


def _url_covers(owner: str, wanted: str) -> bool:
    return owner == wanted or (owner.endswith("*") and wanted.startswith(owner.rstrip("*")))


def _rule_covers(owner: PolicyRule, sub: PolicyRule) -> bool:
    """Upstream ``ruleCovers``."""
    verbs = ALL in owner.verbs or _has_all(owner.verbs, sub.verbs)
    groups = ALL in owner.api_groups or _has_all(owner.api_groups, sub.api_groups)
    resources = _resources_cover(owner.resources, sub.resources)
    urls = all(
        any(_url_covers(url, wanted) for url in owner.non_resource_urls)
        for wanted in sub.non_resource_urls
    )
    if not sub.resource_names:
        names = not owner.resource_names
    else:
        names = not owner.resource_names or _has_all(owner.resource_names, sub.resource_names)
    return verbs and groups and resources and names and urls


def covers(
    owner: Sequence[PolicyRule], servant: Iterable[PolicyRule]
) -> tuple[bool, list[PolicyRule]]:
    """Upstream ``Covers``: whether `owner` holds every permission of `servant`, and the
    simple rules it lacks."""
    missing = [
        sub
        for rule in servant
        for sub in breakdown(rule)
        if not any(_rule_covers(o, sub) for o in owner)
    ]
    return not missing, missing


def compact_rules(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """Upstream ``CompactRules``: rules on one group and resource (and at most one name) that
    differ only by verb become one rule with every verb."""
    compacted: list[PolicyRule] = []
    simple: dict[tuple[str, str, str | None], PolicyRule] = {}
    for rule in rules:
        if (
            len(rule.resource_names) <= 1
            and not rule.non_resource_urls
            and len(rule.api_groups) == 1
            and len(rule.resources) == 1
        ):
            key = (
                rule.api_groups[0],
                rule.resources[0],
                rule.resource_names[0] if rule.resource_names else None,
            )
            seen = simple.get(key)
            simple[key] = (
                rule
                if seen is None
                else PolicyRule(
                    seen.verbs + rule.verbs, seen.api_groups, seen.resources, seen.resource_names
                )
            )
        else:
            compacted.append(rule)
    return compacted + list(simple.values())


def go_strings(values: Sequence[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(value) for value in values) + "]"


def compact_string(rule: PolicyRule) -> str:
    """Upstream ``CompactString``: ``{APIGroups:["apps"], Resources:["deployments"],
    Verbs:["create"]}``, naming only the fields the rule has."""
    parts = []
    for label, values in (
        ("APIGroups", rule.api_groups),
        ("Resources", rule.resources),
        ("NonResourceURLs", rule.non_resource_urls),
        ("ResourceNames", rule.resource_names),
        ("Verbs", rule.verbs),
    ):
        if values:
            parts.append(f"{label}:{go_strings(values)}")
    return "{" + ", ".join(parts) + "}"
