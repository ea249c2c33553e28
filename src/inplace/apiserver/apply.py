"""Server-side apply over the store: ``PATCH`` with ``application/apply-patch+yaml``.

HTTP-free like `rest.py`, whose write path it ends in. The merge, the ownership and the
conflicts are :mod:`inplace.registry.managedfields`'s; this module reads the live object (or
finds there is none, and creates it, as upstream's apply does), turns refusals into
upstream's Status answers, and retries when another writer wins the compare-and-swap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inplace.apiserver.auth import User
from inplace.apiserver.errors import StatusError, bad_request, conflict
from inplace.apiserver.fieldvalidation import validate_fields
from inplace.apiserver.rest import REST
from inplace.apiserver.writes import RETRY_SECONDS, WriteResult, parse_resource_version, until
from inplace.registry.fieldmanager import FieldManager, field_manager
from inplace.registry.kinds import Kind
from inplace.registry.managedfields import ApplyConflict, ApplyRefused


async def server_side_apply(
    rest: REST,
    kind: Kind,
    namespace: str | None,
    name: str,
    body: Any,
    *,
    subresource: str | None,
    field_validation: str,
    dry_run: bool,
    manager: str,
    force: bool,
    user: User | None = None,
    authorize_create: Callable[[], None] | None = None,
) -> WriteResult:
    """Apply `body` for `manager` (admitted as `user`'s write); the object is created when
    it does not exist yet, if `authorize_create` (upstream's check of the verb ``create``
    for an apply that creates) does not raise."""
    del field_validation  # apply refuses unknown fields whatever it says, as upstream does
    if not isinstance(body, dict):
        raise bad_request(
            "error decoding patch: json: cannot unmarshal "
            f"{_json_kind(body)} into Go value of type map[string]interface {{}}"
        )
    manager_of = field_manager(kind, subresource)
    for _ in until(RETRY_SECONDS):
        try:
            entry = await rest.get_entry(kind, namespace, name)
        except StatusError as exc:
            if exc.code != 404 or subresource is not None:
                raise
            try:
                if authorize_create is not None:
                    authorize_create()
                return await _create(
                    rest, kind, namespace, name, body, dry_run, manager, force, user
                )
            except StatusError as exc:
                if exc.reason == "AlreadyExists":
                    continue  # created meanwhile: apply to it
                raise
        live = entry.value
        requested = (body.get("metadata") or {}).get("resourceVersion")
        if requested and parse_resource_version(requested) != entry.revision:
            raise conflict(kind.plural, kind.group, name)
        new = _run(manager_of, kind, live, body, manager, rest.now(), force)
        if new is None:
            return WriteResult(live)
        _check_name(new, name, namespace)
        validate_fields(kind, new, "Ignore")
        try:
            return await rest._write(
                kind,
                namespace,
                name,
                entry,
                new,
                subresource=subresource,
                dry_run=dry_run,
                strict_revision=True,
                user=user,
                managed_fields=True,
            )
        except StatusError as exc:
            if exc.code == 409 and exc.reason == "Conflict" and not requested:
                continue  # another writer won the compare-and-swap: apply again to its object
            raise
    raise conflict(kind.plural, kind.group, name, "too many concurrent writers")


async def _create(
    rest: REST,
    kind: Kind,
    namespace: str | None,
    name: str,
    body: dict[str, Any],
    dry_run: bool,
    manager: str,
    force: bool,
    user: User | None,
) -> WriteResult:
    uid = (body.get("metadata") or {}).get("uid")
    if uid:
        raise conflict(
            kind.plural,
            kind.group,
            name,
            f"uid mismatch: the provided object specified uid {uid}, and no existing object "
            "was found",
        )
    manager_of = field_manager(kind)
    new = _run(manager_of, kind, None, body, manager, rest.now(), force)
    if new is None:
        new = dict(manager_of.empty)
    _check_name(new, name, namespace)
    return await rest.create(
        kind,
        namespace,
        new,
        field_validation="Ignore",
        dry_run=dry_run,
        user=user,
        applied=True,
    )


def _run(
    manager_of: FieldManager,
    kind: Kind,
    live: dict[str, Any] | None,
    body: dict[str, Any],
    manager: str,
    now: str,
    force: bool,
) -> dict[str, Any] | None:
    """Apply with the field manager, answering its refusals as upstream's Status does."""
    try:
        return manager_of.apply(live, body, manager, now, force=force)
    except (ApplyConflict, ApplyRefused) as exc:
        raise refusal(exc, kind, body) from exc


def refusal(exc: ApplyConflict | ApplyRefused, kind: Kind, body: Any) -> StatusError:
    """Upstream's answer to an apply the field manager refused."""
    if isinstance(exc, ApplyConflict):
        return StatusError(409, exc.message, reason="Conflict", details={"causes": exc.causes()})
    details = None
    if exc.field:
        # kubectl shows an Invalid answer by its causes: "The Deployment "web" is
        # invalid: spec.replicaz: field not declared in schema".
        meta = body.get("metadata") if isinstance(body, dict) else None
        details = {
            "name": (meta or {}).get("name", ""),
            "group": kind.group,
            "kind": kind.kind,
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "field not declared in schema",
                    "field": exc.field.lstrip("."),
                }
            ],
        }
    return StatusError(exc.code, exc.message, details=details)


def _check_name(obj: dict[str, Any], name: str, namespace: str | None) -> None:
    """Upstream's checkName: the applied object is the one the URL names."""
    meta = obj.get("metadata") or {}
    object_name = meta.get("name") or ""
    if not object_name:
        raise bad_request(
            f"the name of the object ({name} based on URL) was undeterminable: name must be "
            "provided"
        )
    if object_name != name:
        raise bad_request(
            f"the name of the object ({object_name}) does not match the name on the URL ({name})"
        )
    object_namespace = meta.get("namespace")
    if namespace and object_namespace and object_namespace != namespace:
        raise bad_request(
            f"the namespace of the object ({object_namespace}) does not match the namespace "
            f"on the request ({namespace})"
        )


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "object"
