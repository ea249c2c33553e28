"""Keeping the default roles and aggregated ClusterRoles true.

**Bootstrap** (upstream's ``rbac/bootstrap-roles`` post-start hook and
``pkg/registry/rbac/reconciliation``): at every start the API server makes each default role
and binding exist; one that exists and is not protected (annotation
``rbac.authorization.kubernetes.io/autoupdate: "false"``) gets back any permission, subject,
label, annotation or aggregation selector it lost. Nothing a user added is removed.

**Aggregation** (upstream's ``clusterrole-aggregation`` controller, run here inside the API
server): a ClusterRole with an ``aggregationRule`` holds the union of the rules of every
other ClusterRole its selectors match, in name order, without duplicates; it is recomputed
whenever a ClusterRole changes. ``admin``, ``edit`` and ``view`` are built this way, so a
ClusterRole labelled ``rbac.authorization.k8s.io/aggregate-to-view: "true"`` extends all
three.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from inplace.api.selectors import LabelSelector, SelectorError
from inplace.apiserver.authz.controller_policy import controller_role_bindings, controller_roles
from inplace.apiserver.authz.policy import (
    AUTOUPDATE_ANNOTATION,
    cluster_role_bindings,
    cluster_roles,
    namespace_role_bindings,
    namespace_roles,
)
from inplace.apiserver.authz.rules import PolicyRule, covers
from inplace.apiserver.cache import CachedEvent, WatchCache
from inplace.apiserver.errors import StatusError
from inplace.apiserver.rest import REST
from inplace.registry.kinds import Kind
from inplace.registry.served import Registry
from inplace.registry.strategy import copy_json

__all__ = [
    "Aggregator",
    "aggregated_rules",
    "reconcile_binding",
    "reconcile_defaults",
    "reconcile_role",
]

log = logging.getLogger(__name__)
_RBAC = "rbac.authorization.k8s.io"


def _protected(existing: Mapping[str, Any]) -> bool:
    annotations = existing.get("metadata", {}).get("annotations") or {}
    return annotations.get(AUTOUPDATE_ANNOTATION) == "false"


def _merge_meta(result: dict[str, Any], expected: Mapping[str, Any]) -> None:
    """Expected labels and annotations are added; existing values win (upstream ``merge``)."""
    meta = result.setdefault("metadata", {})
    for field in ("labels", "annotations"):
        wanted = expected["metadata"].get(field) or {}
        if wanted:
            meta[field] = {**wanted, **(meta.get(field) or {})}


def reconcile_role(
    existing: Mapping[str, Any], expected: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Upstream ``computeReconciledRole`` (union): the updated role, or None if nothing is
    missing or the role is protected."""
    if _protected(existing):
        return None
    result = copy_json(existing)
    _merge_meta(result, expected)
    have = [PolicyRule.from_json(r) for r in existing.get("rules") or [] if isinstance(r, dict)]
    want = [PolicyRule.from_json(r) for r in expected.get("rules") or []]
    _, missing = covers(have, want)
    if missing and not (expected.get("aggregationRule") and existing.get("aggregationRule")):
        result["rules"] = [*(existing.get("rules") or []), *(r.to_json() for r in missing)]
    wanted_rule = expected.get("aggregationRule")
    if wanted_rule is not None:
        current = result.get("aggregationRule") or {}
        selectors = list(current.get("clusterRoleSelectors") or [])
        for selector in wanted_rule["clusterRoleSelectors"]:
            if selector not in selectors:
                selectors.append(selector)
        result["aggregationRule"] = {**current, "clusterRoleSelectors": selectors}
    return None if result == existing else result


def reconcile_binding(
    existing: Mapping[str, Any], expected: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Upstream ``computeReconciledRoleBinding`` (union): missing subjects are added; None if
    nothing changes or the binding is protected. A different roleRef means recreate (the
    caller's job: roleRef is immutable)."""
    if _protected(existing):
        return None
    result = copy_json(existing)
    _merge_meta(result, expected)
    subjects = list(result.get("subjects") or [])
    for subject in expected.get("subjects") or []:
        if subject not in subjects:
            subjects.append(subject)
    if subjects:
        result["subjects"] = subjects
    return None if result == existing else result


class _Kinds:
    def __init__(self, registry: Registry) -> None:
        def kind(name: str) -> Kind:
            found = registry.by_kind(_RBAC, name)
            if found is None:
                raise ValueError(f"the registry serves no {name}")
            return found

        self.role = kind("Role")
        self.cluster_role = kind("ClusterRole")
        self.binding = kind("RoleBinding")
        self.cluster_binding = kind("ClusterRoleBinding")


async def _reconcile_one(
    rest: REST, cache: WatchCache, kind: Kind, expected: dict[str, Any], binding: bool
) -> None:
    meta = expected["metadata"]
    name, namespace = meta["name"], meta.get("namespace")
    entry = cache.get(kind, kind.storage_key(name, namespace), namespace)
    try:
        if entry is None:
            await rest.create(kind, namespace, copy_json(expected))
            return
        if binding and entry.value.get("roleRef") != expected["roleRef"]:
            if _protected(entry.value):
                return
            await rest.delete(kind, namespace, name, {})
            await rest.create(kind, namespace, copy_json(expected))
            return
        updated = (reconcile_binding if binding else reconcile_role)(entry.value, expected)
        if updated is not None:
            await rest.update(kind, namespace, name, updated)
    except StatusError as exc:
        if exc.code != 409:  # someone else wrote it meanwhile: the next start reconciles
            raise


async def reconcile_defaults(rest: REST, cache: WatchCache, registry: Registry) -> None:
    """Create or repair every default role and binding (concurrently: the store commits
    writes that arrive together in one transaction)."""
    kinds = _Kinds(registry)
    await cache.sync()
    work: list[tuple[Kind, dict[str, Any], bool]] = []
    work += [(kinds.cluster_role, r, False) for r in (*cluster_roles(), *controller_roles())]
    work += [
        (kinds.cluster_binding, b, True)
        for b in (*cluster_role_bindings(), *controller_role_bindings())
    ]
    work += [(kinds.role, r, False) for r in namespace_roles()]
    work += [(kinds.binding, b, True) for b in namespace_role_bindings()]
    await asyncio.gather(*(_reconcile_one(rest, cache, k, o, b) for k, o, b in work))
    await cache.sync()


def _selectors(role: Mapping[str, Any]) -> list[LabelSelector]:
    rule = role.get("aggregationRule")
    if not isinstance(rule, Mapping):
        return []
    out = []
    for selector in rule.get("clusterRoleSelectors") or []:
        if isinstance(selector, Mapping):
            with contextlib.suppress(SelectorError):
                out.append(LabelSelector.from_dict(selector))
    return out


def aggregated_rules(
    role: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The rules an aggregated ClusterRole holds: for each selector, the rules of the other
    ClusterRoles it matches, by name, each rule once (upstream ``syncClusterRole``)."""
    name = role.get("metadata", {}).get("name")
    others = sorted(
        (r for r in cluster_roles if r.get("metadata", {}).get("name") != name),
        key=lambda r: str(r.get("metadata", {}).get("name")),
    )
    rules: list[dict[str, Any]] = []
    for selector in _selectors(role):
        for other in others:
            if not selector.matches(other.get("metadata", {}).get("labels") or {}):
                continue
            for rule in other.get("rules") or []:
                if rule not in rules:
                    rules.append(rule)
    return rules


class Aggregator:
    """Recomputes aggregated ClusterRoles after any ClusterRole changes."""

    def __init__(self, rest: REST, cache: WatchCache, registry: Registry) -> None:
        self.rest = rest
        self.cache = cache
        self._kind = _Kinds(registry).cluster_role
        self._dirty = asyncio.Event()

    def on_change(self, event: CachedEvent) -> None:
        if event.kind is self._kind:
            self._dirty.set()

    async def aggregate(self) -> int:
        """One pass over every aggregated ClusterRole; returns how many it updated."""
        await self.cache.sync()
        roles = list(self.cache.iter_values(self._kind))
        updated = 0
        for role in roles:
            if not isinstance(role.get("aggregationRule"), Mapping):
                continue
            rules = aggregated_rules(role, roles)
            if rules == (role.get("rules") or []):
                continue
            new = copy_json(role)
            new["rules"] = rules
            name = role["metadata"]["name"]
            try:
                await self.rest.update(self._kind, None, name, new)
                updated += 1
            except StatusError as exc:
                log.info("aggregating clusterrole %s: %s (retried on the next change)", name, exc)
                self._dirty.set()
        return updated

    async def settle(self, rounds: int = 10) -> None:
        """Aggregate until nothing changes (roles aggregate aggregated roles: view into edit
        into admin)."""
        for _ in range(rounds):
            if not await self.aggregate():
                return

    async def run(self) -> None:
        """Follow ClusterRole changes for the life of the server."""
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await self.settle()
            except Exception:  # one failed pass must not stop aggregation; logged
                log.exception("clusterrole aggregation failed")
                await asyncio.sleep(1.0)
                self._dirty.set()
