"""Calling the configured webhooks on a write, in upstream's order and with its rules.

Upstream's ``MutatingAdmissionWebhook`` and ``ValidatingAdmissionWebhook`` plugins
(``apiserver/pkg/admission/plugin/webhook/mutating`` and ``.../validating``): the
configurations are read from the watch cache; mutating webhooks run one after the other
(configurations by name, then their order), each seeing what the previous one patched, and a
webhook with ``reinvocationPolicy: IfNeeded`` runs once more if a later one changed the object;
validating webhooks run concurrently on the object about to be stored and the first refusal
(in their order) wins. A call that fails (no endpoint, refused, timed out, a bad certificate,
an answer that is not an AdmissionReview) is ignored under ``failurePolicy: Ignore`` and ends
the request with a 500 under ``Fail``; nothing is stored in either case until every webhook
has answered. A dry run is refused by a webhook whose ``sideEffects`` are not ``None`` or
``NoneOnDryRun``. A webhook's ``matchConditions`` (CEL, :mod:`inplace.registry.cel`) are
evaluated before it is called, and it is skipped unless all hold.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from inplace.apiserver.admission import AdmissionRequest
from inplace.apiserver.cache import CachedObjects, WatchCache
from inplace.apiserver.webhooks.client import WebhookClient
from inplace.apiserver.webhooks.matching import (
    ADMISSION_GROUP,
    Resource,
    is_exempt,
    matched_resource,
    namespace_labels_from_request,
    selects_namespace,
    selects_object,
    sorted_hooks,
)
from inplace.apiserver.webhooks.policies import AdmissionPolicies
from inplace.apiserver.webhooks.review import (
    CallFailed,
    Verdict,
    apply_patch,
    as_version,
    build_review,
    connect_options,
    denied,
    dry_run_unsupported,
    internal_error,
    parse_response,
)
from inplace.registry.cel import CompileError, EvaluationError, compile_expression
from inplace.registry.kinds import Kind
from inplace.registry.served import Registry
from inplace.registry.validation.admissionregistration import NO_SIDE_EFFECTS

log = logging.getLogger(__name__)

__all__ = ["WebhookAdmission", "connect_request", "subresource_create"]

#: The objects the creates of pods' subresources carry, when a body does not name its kind.
_SUBRESOURCE_KINDS: Final = {
    "eviction": {"apiVersion": "policy/v1", "kind": "Eviction"},
    "binding": {"apiVersion": "v1", "kind": "Binding"},
}


@dataclass(frozen=True)
class _Call:
    """One webhook a request matched, and the resource version it is called at."""

    configuration: str
    hook: Mapping[str, Any]
    matched: Resource

    @property
    def name(self) -> str:
        return str(self.hook.get("name", ""))


#: What a webhook on ``<resource>/scale`` is sent: the Scale, as upstream's.
SCALE_KIND: Final = {"group": "autoscaling", "version": "v1", "kind": "Scale"}


def _object_kind(request: AdmissionRequest) -> dict[str, str] | None:
    """The objects' kind when it is not the resource's: a Scale, or a CONNECT's options."""
    if _is_scale(request):
        return dict(SCALE_KIND)
    if request.operation == "CONNECT" or (request.subresource and request.operation == "CREATE"):
        group, _, version = str(request.obj.get("apiVersion") or "v1").rpartition("/")
        return {"group": group, "version": version, "kind": str(request.obj.get("kind", ""))}
    return None


def _is_scale(request: AdmissionRequest) -> bool:
    return request.subresource == "scale"


def _sent(request: AdmissionRequest, obj: Mapping[str, Any] | None) -> Any:
    """The object as a webhook sees it: the autoscaling/v1 Scale of a ``scale`` write (no
    labels, so an ``objectSelector`` with terms never picks it, as upstream's), else itself."""
    if obj is None or not _is_scale(request):
        return obj
    # subresources imports REST, which imports this package: imported when first needed.
    from inplace.apiserver.subresources import scale_of

    return scale_of(request.kind, dict(obj))


def _scale_back(kind: Kind, stored: dict[str, Any], scale: Mapping[str, Any]) -> None:
    """A mutating webhook's change of a Scale's ``spec.replicas``, in the object written."""
    from inplace.apiserver.crds.scale import set_replicas

    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        return
    if kind.crd is not None and kind.crd.scale is not None:
        set_replicas(kind.crd.scale, stored, replicas)
    else:
        stored.setdefault("spec", {})["replicas"] = replicas


def connect_request(
    kind: Kind, namespace: str, name: str, subresource: str, options: Any, user: Any
) -> AdmissionRequest:
    """The admission request of a ``CONNECT`` to a pod's ``exec`` or ``attach``."""
    return AdmissionRequest(
        "CONNECT",
        kind,
        namespace,
        name,
        subresource,
        connect_options(subresource, options),
        None,
        user,
    )


def subresource_create(
    kind: Kind,
    namespace: str,
    name: str,
    subresource: str,
    body: Mapping[str, Any],
    user: Any,
    dry_run: bool,
) -> AdmissionRequest:
    """The admission request of a create of ``pods/eviction`` or ``pods/binding``: the
    Eviction or Binding is the object."""
    obj = {**_SUBRESOURCE_KINDS.get(subresource, {}), **body}
    options = {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    return AdmissionRequest(
        "CREATE", kind, namespace, name, subresource, obj, None, user, dry_run, options
    )


def _resource(kind: Kind) -> Resource:
    return Resource(kind.group, kind.version, kind.plural, kind.kind, kind.namespaced)


class WebhookAdmission:
    """The mutating and validating webhook admission plugins of one API server."""

    def __init__(self, cache: WatchCache, registry: Registry) -> None:
        self._cache = cache
        self._registry = registry
        self._mutating = registry.by_kind(ADMISSION_GROUP, "MutatingWebhookConfiguration")
        self._validating = registry.by_kind(ADMISSION_GROUP, "ValidatingWebhookConfiguration")
        self._namespaces = registry.by_kind("", "Namespace")
        self.client = WebhookClient(CachedObjects(cache, registry))
        self.policies = AdmissionPolicies(cache, registry)

    async def close(self) -> None:
        await self.client.close()

    # -- which webhooks ------------------------------------------------------------------------

    def _configured(self, kind: Kind | None) -> list[tuple[str, Mapping[str, Any]]]:
        if kind is None or not self._cache.count(kind):
            return []
        return sorted_hooks(self._cache.iter_values(kind))

    def _namespace_of(self, request: AdmissionRequest) -> str:
        """Upstream's ``attr.GetNamespace()``: a Namespace object's own name for a Namespace."""
        if request.kind is self._namespaces:
            return request.name
        return request.namespace or ""

    def _namespace_labels(self, request: AdmissionRequest, resource: Resource) -> dict[str, str]:
        from_request = namespace_labels_from_request(
            resource,
            request.subresource or "",
            request.operation,
            request.obj if request.operation != "DELETE" else None,
        )
        if from_request is not None:
            return from_request
        namespace = self._namespace_of(request)
        if not namespace or self._namespaces is None:
            return {}
        entry = self._cache.get(self._namespaces, self._namespaces.storage_key(namespace), None)
        labels = (entry.value.get("metadata") or {}).get("labels") if entry else None
        return dict(labels) if isinstance(labels, Mapping) else {}

    def _equivalents(self, kind: Kind) -> list[Resource]:
        """The same group and resource at every version served."""
        return [
            _resource(k)
            for k in self._registry.kinds
            if k.group == kind.group and k.plural == kind.plural
        ]

    def _policy_warnings(self, request: AdmissionRequest) -> tuple[str, ...]:
        if not self.policies.active():
            return ()
        requested = _resource(request.kind)
        if is_exempt(requested):
            return ()
        return self.policies.validate(
            request,
            requested,
            self._namespace_of(request),
            self._namespace_labels(request, requested),
            self._equivalents(request.kind),
        )

    def _calls(
        self,
        hooks: list[tuple[str, Mapping[str, Any]]],
        request: AdmissionRequest,
        obj: Mapping[str, Any] | None,
    ) -> list[_Call]:
        requested = _resource(request.kind)
        if is_exempt(requested):
            return []
        equivalents = self._equivalents(request.kind)
        namespace = self._namespace_of(request)
        labels: dict[str, str] | None = None
        calls = []
        for configuration, hook in hooks:
            matched = matched_resource(
                hook,
                request.operation,
                requested,
                request.subresource or "",
                namespace,
                equivalents,
            )
            if matched is None or not selects_object(hook, obj, _sent(request, request.old)):
                continue
            if labels is None:
                labels = self._namespace_labels(request, requested)
            if selects_namespace(hook, requested, namespace, labels):
                calls.append(_Call(configuration, hook, matched))
        return calls

    # -- calling one ---------------------------------------------------------------------------

    async def _ask(
        self,
        call: _Call,
        request: AdmissionRequest,
        obj: Mapping[str, Any] | None,
        *,
        mutating: bool,
    ) -> Verdict | None:
        """The webhook's verdict, or None when it failed and its policy is ``Ignore``."""
        hook = call.hook
        if request.dry_run and hook.get("sideEffects") not in NO_SIDE_EFFECTS:
            raise dry_run_unsupported(call.name)
        uid = str(uuid.uuid4())
        review = build_review(
            uid,
            operation=request.operation,
            matched=call.matched,
            requested=_resource(request.kind),
            subresource=request.subresource or "",
            name=request.name,
            namespace=self._namespace_of(request) if request.kind.namespaced else "",
            user=request.user,
            obj=obj,
            old=_sent(request, request.old),
            dry_run=request.dry_run,
            options=request.options,
            kind=_object_kind(request),
        )
        if not self._conditions_hold(call, review["request"]):
            return None
        timeout = int(hook.get("timeoutSeconds") or 10)
        try:
            body = await self.client.post(
                call.name, hook.get("clientConfig") or {}, timeout, review
            )
            return parse_response(call.name, body, uid, mutating=mutating)
        except CallFailed as exc:
            if hook.get("failurePolicy") == "Ignore":
                log.warning("failed calling webhook, failing open %s: %s", call.name, exc)
                return None
            log.warning("failed calling webhook, failing closed %s: %s", call.name, exc)
            raise internal_error(str(exc)) from None

    @staticmethod
    def _conditions_hold(call: _Call, request: Mapping[str, Any]) -> bool:
        """The webhook's ``matchConditions`` (CEL), all of which must hold for it to be called;
        one that cannot be evaluated gets the failure policy."""
        conditions = call.hook.get("matchConditions") or ()
        if not conditions:
            return True
        variables = {
            "object": request.get("object"),
            "oldObject": request.get("oldObject"),
            "request": request,
        }
        for condition in conditions:
            try:
                if (
                    compile_expression(str(condition.get("expression"))).evaluate(variables)
                    is False
                ):
                    return False
            except (CompileError, EvaluationError) as exc:
                if call.hook.get("failurePolicy") == "Ignore":
                    return False
                raise internal_error(
                    f'failed calling webhook "{call.name}": failed to evaluate match condition '
                    f'"{condition.get("name")}": {exc}'
                ) from None
        return True

    # -- the plugins ---------------------------------------------------------------------------

    async def mutate(self, request: AdmissionRequest) -> tuple[bool, tuple[str, ...]]:
        """Run the mutating webhooks; patches are applied to ``request.obj`` in place. Returns
        whether the object changed, and the webhooks' warnings."""
        if request.user is None:
            return False, ()
        hooks = self._configured(self._mutating)
        if not hooks:
            return False, ()
        stored = request.obj if request.operation != "DELETE" else None
        obj = _sent(request, stored)
        warnings: list[str] = []
        changed_any = False
        invoked_reinvocable: list[str] = []
        reinvoke: set[str] = set()
        for round_ in (1, 2):
            for call in self._calls(hooks, request, obj):
                key = f"{call.configuration}/{call.name}"
                if round_ == 2 and key not in reinvoke:
                    continue
                verdict = await self._ask(call, request, obj, mutating=True)
                if verdict is None:
                    continue
                warnings.extend(verdict.warnings)
                if not verdict.allowed:
                    raise denied(call.name, verdict.result)
                changed = False
                if verdict.patch and (_object_kind(request) is None or _is_scale(request)):
                    scale = _is_scale(request)
                    sent = obj if scale else as_version(obj, call.matched)
                    patched = apply_patch(call.name, sent, verdict.patch)
                    if not scale:
                        patched["apiVersion"] = request.kind.api_version
                    if obj is not None and patched != obj:
                        assert isinstance(obj, dict)
                        obj.clear()
                        obj.update(patched)
                        changed = changed_any = True
                        if scale and isinstance(stored, dict):
                            _scale_back(request.kind, stored, obj)
                if changed and round_ == 1:
                    reinvoke.update(invoked_reinvocable)
                    invoked_reinvocable.clear()
                if round_ == 1 and call.hook.get("reinvocationPolicy") == "IfNeeded":
                    invoked_reinvocable.append(key)
            if not reinvoke:
                break
        return changed_any, tuple(warnings)

    async def connect(self, request: AdmissionRequest) -> tuple[str, ...]:
        """A ``CONNECT`` (``pods/exec``, ``pods/attach``) or a create of a subresource with an
        object of its own (``pods/eviction``, ``pods/binding``), admitted with that object:
        mutating webhooks are called (their patches are not applied), then the policies and
        validating webhooks; a refusal ends the request before anything happens."""
        _, warnings = await self.mutate(request)
        return warnings + await self.validate(request)

    async def validate(self, request: AdmissionRequest) -> tuple[str, ...]:
        """Run the ValidatingAdmissionPolicies, then the validating webhooks concurrently; the
        first refusal or failure (in their order) is raised once all have answered. Returns
        their warnings."""
        if request.user is None:
            return ()
        warnings = list(self._policy_warnings(request))
        hooks = self._configured(self._validating)
        if not hooks:
            return tuple(warnings)
        obj = _sent(request, request.obj if request.operation != "DELETE" else None)
        calls = self._calls(hooks, request, obj)
        if not calls:
            return tuple(warnings)
        outcomes = await asyncio.gather(
            *(self._ask(call, request, obj, mutating=False) for call in calls),
            return_exceptions=True,
        )
        failure: BaseException | None = None
        for call, outcome in zip(calls, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                failure = failure or outcome
            elif outcome is not None:
                warnings.extend(outcome.warnings)
                if not outcome.allowed:
                    failure = failure or denied(call.name, outcome.result)
        if failure is not None:
            raise failure
        return tuple(warnings)
