"""Admission: checks that see the whole object a write would store, and who asks.

Upstream runs validating admission plugins after a write's object is defaulted and validated
and before it is stored; each may refuse the write (a ``StatusError``, usually 403) or return
warnings, which reach the client as ``Warning`` headers. :class:`~inplace.apiserver.rest.REST`
calls every plugin it is given on creates and updates (patches see the patched object), never
on deletes; writes the API server makes for itself carry no user.

The plugins: RBAC's escalation check (:mod:`inplace.apiserver.authz.escalation`) and Pod
Security Admission (:mod:`inplace.apiserver.podsecurity`). Admission webhooks
(:mod:`inplace.apiserver.webhooks`) see the same request, on deletes too, and are awaited:
REST calls the mutating ones after the kind's own admission and before its validation, the
validating ones after these plugins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from inplace.apiserver.auth import User
from inplace.registry.kinds import Kind

__all__ = ["AdmissionRequest", "ValidatingAdmission"]


@dataclass(frozen=True)
class AdmissionRequest:
    """One write as admission sees it (upstream ``admission.Attributes``)."""

    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    kind: Kind
    namespace: str | None
    name: str
    subresource: str | None
    obj: Mapping[str, Any]
    old: Mapping[str, Any] | None
    #: None for the API server's own writes (bootstrap, aggregation): always admitted.
    user: User | None
    dry_run: bool = False
    #: The request's ``CreateOptions``/``UpdateOptions``/``PatchOptions``/``DeleteOptions``,
    #: as an AdmissionReview carries them.
    options: Mapping[str, Any] | None = None


class ValidatingAdmission(Protocol):
    """A validating admission plugin."""

    def validate(self, request: AdmissionRequest) -> Sequence[str]:
        """Warnings for the client; raise ``StatusError`` to refuse the write."""
