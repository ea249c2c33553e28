"""The AdmissionReview v1 a webhook is sent and what its answer means, with upstream's words.

Pure: the request (``apiserver/pkg/admission/plugin/webhook/request/admissionreview.go``), the
checks of a response (``VerifyAdmissionResponse``), applying a mutating webhook's JSON patch,
and the errors a request ends with: a refusal (``webhookerrors.ToStatusErr``: ``admission
webhook "X" denied the request: ...``), a failed call under ``failurePolicy: Fail``
(``Internal error occurred: failed calling webhook "X": ...``), a dry run a webhook with side
effects cannot take (``NewDryRunUnsupportedErr``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from inplace.apiserver.errors import StatusError
from inplace.apiserver.webhooks.matching import Resource
from inplace.registry.patch import PatchError, apply_json_patch

REVIEW_API_VERSION: Final = "admission.k8s.io/v1"
_REVIEW_GVK: Final = "admission.k8s.io/v1, Kind=AdmissionReview"


class CallFailed(Exception):
    """Upstream's ``ErrCallingWebhook``: the webhook could not be asked or answered nonsense;
    its failure policy decides."""

    def __init__(self, webhook: str, reason: str) -> None:
        super().__init__(f'failed calling webhook "{webhook}": {reason}')
        self.webhook = webhook


@dataclass(frozen=True)
class Verdict:
    """A checked webhook response."""

    allowed: bool
    patch: list[Any] | None = None
    warnings: tuple[str, ...] = ()
    result: Mapping[str, Any] = field(default_factory=dict)


def user_info(user: Any) -> dict[str, Any]:
    """``authentication/v1 UserInfo`` of the requester (its empty fields omitted, as Go's)."""
    info: dict[str, Any] = {}
    if user is None:
        return info
    if user.name:
        info["username"] = user.name
    if user.uid:
        info["uid"] = user.uid
    if user.groups:
        info["groups"] = list(user.groups)
    if user.extra:
        info["extra"] = {key: list(values) for key, values in user.extra}
    return info


def as_version(obj: Mapping[str, Any] | None, resource: Resource) -> Any:
    """The object at the version the webhook asked for (our versions convert with ``None``
    conversion: only ``apiVersion`` differs)."""
    if obj is None:
        return None
    return {**obj, "apiVersion": resource.api_version}


def connect_options(subresource: str, options: Any) -> dict[str, Any]:
    """What a ``CONNECT`` of ``pods/exec`` or ``pods/attach`` is admitted as: the request's
    ``PodExecOptions`` / ``PodAttachOptions`` (`options`: an ``ExecOptions``)."""
    kind = "PodAttachOptions" if subresource == "attach" else "PodExecOptions"
    obj: dict[str, Any] = {"kind": kind, "apiVersion": "v1"}
    for key in ("stdin", "stdout", "stderr", "tty"):
        if getattr(options, key):
            obj[key] = True
    if options.container:
        obj["container"] = options.container
    if kind == "PodExecOptions":
        obj["command"] = list(options.command)
    return obj


def build_review(
    uid: str,
    *,
    operation: str,
    matched: Resource,
    requested: Resource,
    subresource: str,
    name: str,
    namespace: str,
    user: Any,
    obj: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None,
    dry_run: bool,
    options: Mapping[str, Any] | None,
    kind: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ``AdmissionReview`` sent: ``kind``/``resource`` at the version the webhook matched,
    ``requestKind``/``requestResource`` as the client asked. `kind`: the objects' own kind when
    a subresource has one (``scale``: the objects are Scales, sent as they are)."""
    request: dict[str, Any] = {
        "uid": uid,
        "kind": dict(kind) if kind else matched.gvk(),
        "resource": matched.gvr(),
        "requestKind": dict(kind) if kind else requested.gvk(),
        "requestResource": requested.gvr(),
        "operation": operation,
        "userInfo": user_info(user),
        "object": obj if kind else as_version(obj, matched),
        "oldObject": old if kind else as_version(old, matched),
        "dryRun": dry_run,
        "options": dict(options) if options is not None else None,
    }
    if subresource:
        request["subResource"] = subresource
        request["requestSubResource"] = subresource
    if name:
        request["name"] = name
    if namespace:
        request["namespace"] = namespace
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "request": request}


def parse_response(webhook: str, body: bytes, uid: str, *, mutating: bool) -> Verdict:
    """Upstream's decode and ``VerifyAdmissionResponse``; anything wrong is a `CallFailed`."""
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CallFailed(
            webhook, f"failed to call webhook: couldn't get version/kind; json parse error: {exc}"
        ) from None
    if not isinstance(review, dict):
        raise CallFailed(
            webhook,
            "failed to call webhook: couldn't get version/kind; json parse error: "
            "cannot unmarshal into Go value of type struct",
        )

    def invalid(why: str) -> CallFailed:
        return CallFailed(webhook, f"received invalid webhook response: {why}")

    response = review.get("response")
    if not isinstance(response, dict):
        raise invalid("webhook response was absent")
    if response.get("uid") != uid:
        raise invalid(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    got = f"{review.get('apiVersion') or ''}, Kind={review.get('kind') or ''}"
    if got != _REVIEW_GVK:
        raise invalid(f"expected webhook response of {_REVIEW_GVK}, got {got}")
    patch_type = response.get("patchType") or ""
    raw_patch = response.get("patch") or ""
    if not mutating and patch_type:
        raise invalid("validating webhook may not return response.patchType")
    if not mutating and raw_patch:
        raise invalid("validating webhook may not return response.patch")
    if raw_patch and patch_type != "JSONPatch":
        if not patch_type:
            raise invalid("webhook returned response.patch but not response.patchType")
        raise invalid(f'webhook returned invalid response.patchType of "{patch_type}"')
    if patch_type and not raw_patch:
        raise invalid("webhook returned response.patchType but not response.patch")
    patch: list[Any] | None = None
    if raw_patch:
        try:
            decoded = json.loads(base64.b64decode(str(raw_patch), validate=True))
        except (ValueError, binascii.Error) as exc:
            raise StatusError(500, f"Internal error occurred: {exc}") from None
        if not isinstance(decoded, list):
            raise StatusError(
                500,
                "Internal error occurred: json: cannot unmarshal object into Go value of type "
                "jsonpatch.Patch",
            )
        patch = decoded
    warnings = response.get("warnings") or []
    result = response.get("status")
    return Verdict(
        allowed=response.get("allowed") is True,
        patch=patch,
        warnings=tuple(str(w) for w in warnings if isinstance(w, str)),
        result=result if isinstance(result, dict) else {},
    )


def apply_patch(webhook: str, obj: Mapping[str, Any] | None, patch: list[Any]) -> dict[str, Any]:
    """A mutating webhook's JSON patch applied; a patch that does not apply, or one for an
    operation with no object (DELETE), is an internal error whatever the failure policy (as
    upstream's)."""
    if obj is None:
        raise internal_error(
            f'admission webhook "{webhook}" attempted to modify the object, which is not '
            "supported for this operation"
        )
    try:
        patched = apply_json_patch(obj, patch)
    except PatchError as exc:
        raise internal_error(str(exc)) from None
    if not isinstance(patched, dict):
        raise internal_error(f'admission webhook "{webhook}" patched the object into a non-object')
    return patched


def internal_error(message: str) -> StatusError:
    """Upstream's ``apierrors.NewInternalError``."""
    return StatusError(
        500,
        f"Internal error occurred: {message}",
        details={"causes": [{"message": message}]},
    )


def denied(webhook: str, result: Mapping[str, Any]) -> StatusError:
    """Upstream's ``ToStatusErr``: the webhook's status, at least a 400, and a message that
    names the webhook."""
    denied_by = f'admission webhook "{webhook}" denied the request'
    code = result.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    message, reason = result.get("message"), result.get("reason")
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": text,
        "code": code,
    }
    if reason:
        body["reason"] = reason
    if isinstance(result.get("details"), dict):
        body["details"] = result["details"]
    return StatusError(code, text, reason=str(reason or ""), body=body)


def dry_run_unsupported(webhook: str) -> StatusError:
    """Upstream's ``NewDryRunUnsupportedErr``."""
    return StatusError(400, f'admission webhook "{webhook}" does not support dry run')
