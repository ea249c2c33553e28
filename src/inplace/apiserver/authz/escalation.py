"""RBAC escalation prevention: nobody grants a permission they do not hold.

Upstream enforces this in the RBAC storage (``pkg/registry/rbac/*/policybased``); here it is a
validating admission plugin on the four RBAC kinds, so it sees the object a create, update or
patch would store:

* a Role or ClusterRole may be written by a member of ``system:masters``, by a user allowed
  the verb ``escalate`` on it, or by a user who already holds every rule it lists; a
  ClusterRole's ``aggregationRule`` can gather anything, so setting or changing one takes
  full authority ("must have cluster-admin privileges to use the aggregationRule");
* a RoleBinding or ClusterRoleBinding may be written by a member of ``system:masters``, by a
  user allowed the verb ``bind`` on the role it names, or by a user who holds every rule of
  that role (in the binding's namespace; cluster-wide for a ClusterRoleBinding).

A write that changes nothing but owner references and finalizers (the garbage collector's)
is never refused. Refusals are upstream's 403: ``rolebindings.rbac.authorization.k8s.io "x"
is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC
permissions not currently held:`` followed by the missing rules, one per line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from inplace.apiserver.admission import AdmissionRequest
from inplace.apiserver.auth import MASTERS_GROUP, User
from inplace.apiserver.authz import Authorizers
from inplace.apiserver.authz.rules import (
    Attributes,
    PolicyRule,
    compact_rules,
    compact_string,
    covers,
    go_strings,
)
from inplace.apiserver.errors import StatusError
from inplace.registry.strategy import copy_json

__all__ = ["EscalationCheck", "no_escalation_error"]

_RBAC: Final = "rbac.authorization.k8s.io"
_FULL_AUTHORITY: Final = (
    PolicyRule(("*",), ("*",), ("*",)),
    PolicyRule(("*",), non_resource_urls=("*",)),
)


def _rules(obj: Mapping[str, Any] | None) -> list[PolicyRule]:
    rules = (obj or {}).get("rules")
    if not isinstance(rules, list):
        return []
    return [PolicyRule.from_json(r) for r in rules if isinstance(r, Mapping)]


def _only_gc_fields(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Upstream ``IsOnlyMutatingGCFields``: equal once owner references and finalizers (and
    what the server manages) are taken from the old object."""
    a, b = copy_json(new), copy_json(old)
    for obj in (a, b):
        meta = obj.setdefault("metadata", {})
        for field in ("ownerReferences", "finalizers", "resourceVersion", "managedFields"):
            meta.pop(field, None)
    return bool(a == b)


def no_escalation_error(
    user: User, missing: Sequence[PolicyRule], resolution_errors: Sequence[str]
) -> str:
    """Upstream ``ConfirmNoEscalation``'s message."""
    lines = sorted({compact_string(rule) for rule in compact_rules(missing)})
    message = (
        f'user "{user.name}" (groups={go_strings(user.groups)}) is attempting to grant RBAC '
        "permissions not currently held:\n" + "\n".join(lines)
    )
    if resolution_errors:
        message += f"; resolution errors: [{', '.join(resolution_errors)}]"
    return message


class EscalationCheck:
    """The admission plugin; `authz` answers both ``escalate``/``bind`` and the rules a user
    holds."""

    def __init__(self, authz: Authorizers) -> None:
        self.authz = authz

    def validate(self, request: AdmissionRequest) -> Sequence[str]:
        kind = request.kind
        user = request.user
        if kind.group != _RBAC or user is None or MASTERS_GROUP in user.groups:
            return ()
        if request.old is not None and _only_gc_fields(request.obj, request.old):
            return ()
        if kind.kind in ("Role", "ClusterRole"):
            self._check_role(request, user)
        elif kind.kind in ("RoleBinding", "ClusterRoleBinding"):
            self._check_binding(request, user)
        return ()

    def _forbidden(self, request: AdmissionRequest, why: str) -> StatusError:
        kind = request.kind
        return StatusError(
            403,
            f'{kind.plural}.{kind.group} "{request.name}" is forbidden: {why}',
            details={"name": request.name, "group": kind.group, "kind": kind.plural},
        )

    def _confirm(
        self, request: AdmissionRequest, user: User, namespace: str, wanted: Sequence[PolicyRule]
    ) -> None:
        """Upstream ``ConfirmNoEscalation``: the user's rules in `namespace` cover `wanted`."""
        held = self.authz.rules_for(user, namespace)
        owned = held.resource_rules + held.non_resource_rules
        ok, missing = covers(owned, wanted)
        if not ok:
            raise self._forbidden(request, no_escalation_error(user, missing, held.errors))

    def _check_role(self, request: AdmissionRequest, user: User) -> None:
        kind = request.kind
        namespace = request.namespace or ""
        escalate = Attributes(
            user,
            "escalate",
            namespace=namespace,
            api_group=_RBAC,
            resource=kind.plural,
            # Upstream asks with the name from the URL: empty on create.
            name=request.name if request.operation == "UPDATE" else "",
        )
        if self.authz.allowed(escalate):
            return
        self._confirm(request, user, namespace, _rules(request.obj))
        if kind.kind == "ClusterRole":
            aggregates = request.obj.get("aggregationRule") is not None or (
                request.old is not None and request.old.get("aggregationRule") is not None
            )
            if aggregates:
                held = self.authz.rules_for(user, "")
                ok, _ = covers(held.resource_rules + held.non_resource_rules, _FULL_AUTHORITY)
                if not ok:
                    raise self._forbidden(
                        request, "must have cluster-admin privileges to use the aggregationRule"
                    )

    def _check_binding(self, request: AdmissionRequest, user: User) -> None:
        namespace = (request.namespace or "") if request.kind.kind == "RoleBinding" else ""
        ref = request.obj.get("roleRef")
        ref = ref if isinstance(ref, Mapping) else {}
        ref_kind = ref.get("kind")
        bind = Attributes(
            user,
            "bind",
            namespace=namespace,
            api_group=str(ref.get("apiGroup") or ""),
            resource="clusterroles" if ref_kind == "ClusterRole" else "roles",
            name=str(ref.get("name") or ""),
        )
        if ref_kind in ("Role", "ClusterRole") and self.authz.allowed(bind):
            return
        try:
            wanted = self.authz.rbac.role_rules(dict(ref), namespace)
        except LookupError as exc:
            raise self._forbidden(request, str(exc)) from None
        self._confirm(request, user, namespace, wanted)
