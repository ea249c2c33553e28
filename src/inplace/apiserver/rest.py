"""The REST semantics of every served kind, over the store and the watch cache.

HTTP-free: each operation takes and returns plain objects and raises `StatusError`, so the
rules (defaulting, validation, resourceVersion preconditions, generation, graceful deletion,
finalizers, subresources) are tested without a socket. Writes go to the store with a
compare-and-swap on the revision the object was read at; a lost race is retried for patches
(as upstream's GuaranteedUpdate does) and answered 409 for updates that named a
resourceVersion.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

from inplace.api.names import generated_name
from inplace.api.timestamps import rfc3339
from inplace.api.validation import ValidationError
from inplace.apiserver.admission import AdmissionRequest, ValidatingAdmission
from inplace.apiserver.auth import User
from inplace.apiserver.cache import CachedObjects, WatchCache
from inplace.apiserver.deletion import (
    deletion_finalizers,
    grace_period,
    marked_for_deletion,
    terminating_namespace,
)
from inplace.apiserver.errors import (
    StatusError,
    already_exists,
    bad_request,
    conflict,
    not_found,
    unsupported_media_type,
)
from inplace.apiserver.fieldvalidation import validate_fields
from inplace.apiserver.webhooks import WebhookAdmission
from inplace.apiserver.writes import (
    RETRY_SECONDS,
    SERVER_MANAGER,
    WriteResult,
    check_preconditions,
    names_resource_version,
    parse_resource_version,
    same_but_version,
    until,
    write_options,
)
from inplace.registry import validation
from inplace.registry.canonical import canonicalize
from inplace.registry.fieldmanager import field_manager
from inplace.registry.kinds import Kind
from inplace.registry.lifecycle import DEFAULT_SERVICE_ACCOUNT
from inplace.registry.managedfields import set_managed_fields
from inplace.registry.patch import (
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from inplace.registry.patchmeta import schema_for_kind
from inplace.registry.served import Registry
from inplace.registry.strategy import (
    Rejected,
    apply_defaults,
    copy_json,
    keep_spec,
    keep_status,
    spec_changed,
)
from inplace.store import ConflictError, Entry, KeyExistsError, NotFoundError, Store

log = logging.getLogger(__name__)


class _Raced(Exception):
    """Another writer changed the object between our read and our compare-and-swap."""


class REST:
    """Create, read, update, patch and delete for every stored kind, as each kind's strategy
    (`inplace.registry.strategy`) says."""

    def __init__(
        self,
        store: Store,
        cache: WatchCache,
        registry: Registry,
        *,
        clock: Callable[[], datetime.datetime] | None = None,
        admission: Sequence[ValidatingAdmission] = (),
    ) -> None:
        self.store = store
        self.cache = cache
        self.registry = registry
        self.clock = clock
        #: Validating admission plugins, run on every create and update.
        self.admission: list[ValidatingAdmission] = list(admission)
        #: Admission webhooks (mutating and validating), when the server runs them.
        self.webhooks: WebhookAdmission | None = None
        self._namespaces = registry.by_kind("", "Namespace")
        self._objects = CachedObjects(cache, registry)
        self._allocation_lock = asyncio.Lock()
        #: (group, resource) -> a finalizer every delete adds (CRDs: upstream's cleanup).
        self.finalize_on_delete: dict[tuple[str, str], str] = {}

    def now(self) -> str:
        """The current time stamp, from the injected clock when there is one."""
        return rfc3339(self.clock() if self.clock else None)

    # -- reads --------------------------------------------------------------------------------

    async def get_entry(self, kind: Kind, namespace: str | None, name: str) -> Entry:
        await self.cache.sync()
        entry = self.cache.get(kind, kind.storage_key(name, namespace), namespace)
        if entry is None:
            raise not_found(kind.plural, kind.group, name)
        return entry

    # -- create -------------------------------------------------------------------------------

    async def create(
        self,
        kind: Kind,
        namespace: str | None,
        obj: dict[str, Any],
        *,
        field_validation: str = "Warn",
        dry_run: bool = False,
        user: User | None = None,
        manager: str = SERVER_MANAGER,
        applied: bool = False,
    ) -> WriteResult:
        """Create `obj`. Its managedFields credit `manager` with everything it set, unless
        `applied` (a server-side apply made the object and its managedFields already)."""
        self._check_type(kind, obj)
        warnings = validate_fields(kind, obj, field_validation)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        if kind.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            namespace = namespace or body_ns or "default"
            meta["namespace"] = namespace
            await self._require_namespace(namespace)
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and isinstance(meta.get("generateName"), str):
            meta["name"] = generated_name(meta["generateName"])
        for drop in (
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(drop, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.now()
        if kind.strategy.bumps_generation:
            meta["generation"] = 1
        obj["apiVersion"] = kind.storage_api_version
        obj["kind"] = kind.kind
        if not applied:
            # Upstream's field manager sees the decoded (defaulted) object, before admission
            # and the strategy add what the server sets on create: canonical, and without
            # the empty values Go omits.
            apply_defaults(kind, obj, on_create=False)
            canonicalize(kind, obj)
            set_managed_fields(meta, field_manager(kind).update(None, obj, manager, self.now()))
            apply_defaults(kind, obj)
        else:
            apply_defaults(kind, obj)
            canonicalize(kind, obj)
        self._admit_create(kind, obj)
        options = write_options("CreateOptions", manager)
        warnings += await self._mutate(
            AdmissionRequest(
                "CREATE",
                kind,
                namespace,
                str(meta.get("name") or ""),
                None,
                obj,
                None,
                user,
                dry_run,
                options,
            )
        )
        meta = obj["metadata"]
        if kind.namespaced:
            meta["namespace"] = namespace
        self._prepare_for_create(kind, obj)
        async with self._allocating(kind):
            self._allocate(kind, obj, None)
            with refusals_as_status():
                validation.validate_create(kind, obj)
            warnings += await self._admit(
                "CREATE",
                kind,
                namespace,
                str(meta.get("name") or ""),
                None,
                obj,
                None,
                user,
                dry_run,
                options,
            )
            if dry_run:
                return WriteResult(obj, created=True, warnings=warnings)
            name = meta.get("name")
            try:
                entry = await self.store.create(kind.storage_key(str(name), namespace), obj)
            except KeyExistsError:
                raise already_exists(kind.plural, kind.group, str(name)) from None
        if kind is self._namespaces:
            await self.ensure_default_service_account(str(name))
        return WriteResult(entry.value, created=True, warnings=warnings)

    async def ensure_default_service_account(self, namespace: str) -> None:
        """The ``default`` ServiceAccount of a namespace, created if missing (upstream's
        serviceaccounts controller does it moments after the namespace appears; doing it
        with the namespace means a pod created right after its namespace finds it)."""
        accounts = self.registry.by_kind("", "ServiceAccount")
        if accounts is None:
            return
        await self.cache.sync()
        key = accounts.storage_key(DEFAULT_SERVICE_ACCOUNT, namespace)
        if self.cache.get(accounts, key, namespace) is not None:
            return
        account = {"metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}}
        try:
            await self.create(accounts, namespace, account)
        except StatusError as exc:
            if exc.code not in (403, 404, 409):  # exists, or the namespace is going/gone
                raise

    @contextlib.asynccontextmanager
    async def _allocating(self, kind: Kind) -> AsyncIterator[None]:
        """One allocation of a kind at a time, against a cache that has caught up with the
        store: what was handed out by the previous one is seen by the next."""
        if kind.strategy.allocate is None:
            yield
            return
        async with self._allocation_lock:
            await self.cache.sync()
            yield

    def _allocate(self, kind: Kind, obj: dict[str, Any], old: Mapping[str, Any] | None) -> None:
        allocate = kind.strategy.allocate
        if allocate is None:
            return
        with refusals_as_status():
            allocate(obj, self._objects, old)

    async def _require_namespace(self, namespace: str) -> None:
        assert self._namespaces is not None
        await self.cache.sync()
        entry = self.cache.get(self._namespaces, self._namespaces.storage_key(namespace), None)
        if entry is None:
            raise StatusError(
                404,
                f'namespaces "{namespace}" not found',
                details={"name": namespace, "kind": "namespaces"},
            )
        if entry.value.get("metadata", {}).get("deletionTimestamp"):
            raise StatusError(
                403,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
                details={"name": namespace, "kind": "namespaces"},
            )

    def _admit_create(self, kind: Kind, obj: dict[str, Any]) -> None:
        """The kind's own (built-in) mutating admission; it may consult other objects."""
        strategy = kind.strategy
        if strategy.admit is not None:
            with refusals_as_status():
                strategy.admit(obj, self._objects)

    @staticmethod
    def _prepare_for_create(kind: Kind, obj: dict[str, Any]) -> None:
        """What the kind's strategy sets on every new object whatever the request said."""
        if kind.strategy.prepare_for_create is not None:
            kind.strategy.prepare_for_create(obj)

    async def _mutate(self, request: AdmissionRequest) -> tuple[str, ...]:
        """The mutating webhooks; an object they patched is defaulted and made canonical
        again, as upstream decodes a patched object."""
        if self.webhooks is None:
            return ()
        changed, warnings = await self.webhooks.mutate(request)
        if changed:
            assert isinstance(request.obj, dict)
            request.obj.setdefault("metadata", {})
            apply_defaults(request.kind, request.obj, on_create=False)
            canonicalize(request.kind, request.obj)
        return warnings

    # -- update -------------------------------------------------------------------------------

    async def update(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        obj: dict[str, Any],
        *,
        subresource: str | None = None,
        field_validation: str = "Warn",
        dry_run: bool = False,
        user: User | None = None,
        manager: str = SERVER_MANAGER,
    ) -> WriteResult:
        self._check_type(kind, obj)
        warnings = validate_fields(kind, obj, field_validation)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            raise StatusError(422, "metadata: Required value")
        if meta.get("name") not in (None, name):
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the "
                f"URL ({name})"
            )
        rv = meta.get("resourceVersion")
        expected = parse_resource_version(rv) if rv else None
        entry = await self.get_entry(kind, namespace, name)
        if expected is not None and expected != entry.revision:
            raise conflict(kind.plural, kind.group, name)
        result = await self._write(
            kind,
            namespace,
            name,
            entry,
            obj,
            subresource=subresource,
            dry_run=dry_run,
            strict_revision=expected is not None,
            user=user,
            manager=manager,
        )
        result.warnings = warnings + result.warnings
        return result

    async def patch(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        body: Any,
        patch_type: str,
        *,
        subresource: str | None = None,
        field_validation: str = "Warn",
        dry_run: bool = False,
        user: User | None = None,
        manager: str = SERVER_MANAGER,
        force: bool = False,
        authorize_create: Callable[[], None] | None = None,
    ) -> WriteResult:
        if patch_type == "apply":
            from inplace.apiserver.apply import server_side_apply

            return await server_side_apply(
                self,
                kind,
                namespace,
                name,
                body,
                subresource=subresource,
                field_validation=field_validation,
                dry_run=dry_run,
                manager=manager,
                force=force,
                user=user,
                authorize_create=authorize_create,
            )
        schema = schema_for_kind(kind) if patch_type == "strategic" else None
        if patch_type == "strategic" and schema is None:
            raise unsupported_media_type("application/strategic-merge-patch+json")
        if patch_type != "json" and not isinstance(body, dict):
            raise bad_request("the body of a merge patch must be a JSON object")
        for _ in until(RETRY_SECONDS):
            entry = await self.get_entry(kind, namespace, name)
            current = entry.value
            try:
                if patch_type == "json":
                    patched = apply_json_patch(current, body)
                elif patch_type == "merge":
                    patched = apply_merge_patch(current, body)
                else:
                    assert schema is not None
                    patched = apply_strategic_merge_patch(current, body, schema)
            except PatchError as exc:
                raise StatusError(422, str(exc)) from exc
            if not isinstance(patched, dict):
                raise bad_request("the patched object is not a JSON object")
            patched = copy_json(patched)
            warnings = validate_fields(kind, patched, field_validation)
            meta = patched.setdefault("metadata", {})
            # Only a resourceVersion the patch itself names is a precondition; the one the
            # patched object inherited from the stored object is not (a lost race re-reads).
            requested = meta.get("resourceVersion") if names_resource_version(body) else None
            if requested and parse_resource_version(requested) != entry.revision:
                raise conflict(kind.plural, kind.group, name)
            try:
                result = await self._write(
                    kind,
                    namespace,
                    name,
                    entry,
                    patched,
                    subresource=subresource,
                    dry_run=dry_run,
                    strict_revision=True,
                    user=user,
                    manager=manager,
                )
            except StatusError as exc:
                if exc.code == 409 and not requested and exc.reason == "Conflict":
                    continue
                raise
            result.warnings = warnings + result.warnings
            return result
        raise conflict(kind.plural, kind.group, name, "too many concurrent writers")

    async def _write(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        entry: Entry,
        obj: dict[str, Any],
        *,
        subresource: str | None,
        dry_run: bool,
        strict_revision: bool,
        user: User | None = None,
        manager: str = SERVER_MANAGER,
        managed_fields: bool = False,
        admitted_as: str | None = None,
    ) -> WriteResult:
        """Merge `obj` into the stored object as the (sub)resource allows, validate, admit,
        CAS. `manager` is credited with what changed in managedFields, unless `managed_fields`
        (a server-side apply or a write to /scale set them already). `admitted_as`: the
        subresource admission sees when it is not `subresource` (a write to /scale stores the
        object itself, and is admitted as `scale`, as upstream's)."""
        old = entry.value
        new, defaults = self._prepare_for_update(kind, subresource, old, obj)
        new["apiVersion"] = kind.storage_api_version
        new["kind"] = kind.kind
        meta = new.setdefault("metadata", {})
        old_meta = old.get("metadata", {})
        for fixed in (
            "uid",
            "creationTimestamp",
            "namespace",
            "name",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if fixed in old_meta:
                meta[fixed] = old_meta[fixed]
            else:
                meta.pop(fixed, None)
        meta.pop("resourceVersion", None)
        if defaults:
            apply_defaults(kind, new, on_create=False)
        canonicalize(kind, new)
        if subresource is None and kind.strategy.finish_update is not None:
            kind.strategy.finish_update(new, old)
        if spec_changed(kind, new, old):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if not managed_fields:
            entries = field_manager(kind, subresource).update(old, new, manager, self.now())
            set_managed_fields(meta, entries)
        admit_update = kind.strategy.admit_update
        if subresource is None and admit_update is not None:
            with refusals_as_status():
                admit_update(new, old, self._objects)
        mutated_warnings = await self._mutate(
            AdmissionRequest(
                "UPDATE",
                kind,
                namespace,
                name,
                admitted_as or subresource,
                new,
                old,
                user,
                dry_run,
                write_options("UpdateOptions", manager),
            )
        )
        allocating = subresource is None and kind.strategy.allocate is not None
        async with self._allocating(kind) if allocating else contextlib.nullcontext():
            if allocating:
                self._allocate(kind, new, old)
            result = await self._store_update(
                kind,
                namespace,
                name,
                entry,
                new,
                subresource=subresource,
                dry_run=dry_run,
                user=user,
                admitted_as=admitted_as,
                options=write_options("UpdateOptions", manager),
            )
        result.warnings = mutated_warnings + result.warnings
        return result

    async def _store_update(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        entry: Entry,
        new: dict[str, Any],
        *,
        subresource: str | None,
        dry_run: bool,
        user: User | None,
        admitted_as: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> WriteResult:
        """Validate the update and compare-and-swap it in (or, with no finalizer left on a
        deleted object, complete the deletion)."""
        old = entry.value
        meta = new["metadata"]
        with refusals_as_status():
            validation.validate_update(kind, new, old, subresource=subresource)
        if new == old or same_but_version(new, old):
            return WriteResult(old)
        warnings = await self._admit(
            "UPDATE",
            kind,
            namespace,
            name,
            admitted_as or subresource,
            new,
            old,
            user,
            dry_run,
            options,
        )
        if dry_run:
            # As upstream's dry run: what would be written, at the version it was read at
            # (`kubectl diff` shows no resourceVersion change for it).
            meta["resourceVersion"] = str(entry.revision)
            return WriteResult(new, warnings=warnings)
        key = kind.storage_key(name, namespace)
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and (kind.strategy.grace_period is None or not meta.get("deletionGracePeriodSeconds"))
        ):
            # The last finalizer is gone: the object's deletion completes now.
            try:
                deleted = await self.store.delete(key, expected_revision=entry.revision)
            except (ConflictError, NotFoundError):
                raise conflict(kind.plural, kind.group, name) from None
            return WriteResult(deleted.value, warnings=warnings)
        try:
            written = await self.store.update(key, new, expected_revision=entry.revision)
        except ConflictError:
            raise conflict(kind.plural, kind.group, name) from None
        except NotFoundError:
            raise not_found(kind.plural, kind.group, name) from None
        return WriteResult(written.value, warnings=warnings)

    async def _admit(
        self,
        operation: Literal["CREATE", "UPDATE"],
        kind: Kind,
        namespace: str | None,
        name: str,
        subresource: str | None,
        obj: Mapping[str, Any],
        old: Mapping[str, Any] | None,
        user: User | None,
        dry_run: bool,
        options: Mapping[str, Any] | None = None,
    ) -> tuple[str, ...]:
        """Run the validating admission plugins, then the validating webhooks, on the object
        about to be stored."""
        if not self.admission and self.webhooks is None:
            return ()
        request = AdmissionRequest(
            operation, kind, namespace, name, subresource, obj, old, user, dry_run, options
        )
        warnings: list[str] = []
        for plugin in self.admission:
            warnings.extend(plugin.validate(request))
        if self.webhooks is not None:
            warnings.extend(await self.webhooks.validate(request))
        return tuple(warnings)

    def _prepare_for_update(
        self, kind: Kind, subresource: str | None, old: dict[str, Any], obj: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """The object to store, and whether defaulting runs: the object itself may not change
        status; /status may change only status; another subresource (/resize) keeps what its
        strategy resets, and validation sees the whole object, so it can name a field that may
        not change. `obj` belongs to the request and is changed in place; what is taken from
        `old` (a cached object) is copied."""
        new = obj
        if subresource == "status":
            keep_spec(new, old)
            if kind.strategy.prepare_for_status_update is not None:
                kind.strategy.prepare_for_status_update(new, old)
            return new, False
        if subresource is not None:
            update = kind.strategy.subresources.get(subresource)
            if update is None:
                raise StatusError(405, f"update is not supported on {kind.plural}/{subresource}")
            update.reset(new, old)
            return new, update.defaults
        if "status" in kind.subresources:
            keep_status(new, old)
        if kind.strategy.prepare_for_update is not None:
            kind.strategy.prepare_for_update(new, old)
        return new, True

    # -- delete -------------------------------------------------------------------------------

    async def delete(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        options: dict[str, Any],
        *,
        dry_run: bool = False,
        user: User | None = None,
    ) -> dict[str, Any]:
        """Delete, or start a graceful deletion; a concurrent writer that wins the
        compare-and-swap makes it re-read and try again, as upstream's GuaranteedUpdate does
        (a resourceVersion precondition is the caller asking for the 409 instead)."""
        for _ in until(RETRY_SECONDS):
            try:
                return await self._delete_once(
                    kind, namespace, name, options, dry_run=dry_run, user=user
                )
            except _Raced:
                if (options.get("preconditions") or {}).get("resourceVersion"):
                    break
        raise conflict(kind.plural, kind.group, name)

    async def _delete_once(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        options: dict[str, Any],
        *,
        dry_run: bool,
        user: User | None = None,
    ) -> dict[str, Any]:
        entry = await self.get_entry(kind, namespace, name)
        obj = entry.value
        meta = obj.get("metadata", {})
        preconditions = options.get("preconditions") or {}
        check_preconditions(
            kind.plural, kind.group, name, preconditions, meta.get("uid"), entry.revision
        )
        grace = grace_period(kind, obj, options.get("gracePeriodSeconds"))
        finalizers = deletion_finalizers(
            meta, options, self.finalize_on_delete.get((kind.group, kind.plural))
        )
        if self.webhooks is not None and user is not None:
            request = AdmissionRequest(
                "DELETE",
                kind,
                namespace,
                name,
                None,
                {},
                obj,
                user,
                dry_run,
                {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", **options},
            )
            await self.webhooks.mutate(request)
            await self.webhooks.validate(request)
        if dry_run:
            return obj
        if kind is self._namespaces:
            return await self._delete_namespace(kind, name, entry, finalizers)
        if grace > 0 or finalizers:
            now = datetime.datetime.now(datetime.UTC) if self.clock is None else self.clock()
            updated = marked_for_deletion(obj, grace, finalizers, now)
            if updated is None:
                return obj
            try:
                written = await self.store.update(
                    entry.key, updated, expected_revision=entry.revision
                )
            except ConflictError:
                raise _Raced from None
            return written.value
        try:
            deleted = await self.store.delete(entry.key, expected_revision=entry.revision)
        except ConflictError:
            raise _Raced from None
        except NotFoundError:
            raise not_found(kind.plural, kind.group, name) from None
        return deleted.value

    async def _delete_namespace(
        self, kind: Kind, name: str, entry: Entry, finalizers: list[str]
    ) -> dict[str, Any]:
        """Mark the namespace Terminating and delete its contents; the namespace itself goes
        once it is empty (see `finalize_namespace`)."""
        obj = entry.value
        terminating = terminating_namespace(name, obj, self.now())
        if terminating is not None:
            try:
                written = await self.store.update(
                    entry.key, terminating, expected_revision=entry.revision
                )
            except ConflictError:
                raise _Raced from None
            obj = written.value
        for other in self.registry.kinds:
            if not other.stored or not other.namespaced:
                continue
            for child in self.cache.entries(other, name):
                child_name = child.value["metadata"]["name"]
                try:
                    await self.delete(other, name, child_name, {})
                except StatusError as exc:
                    if exc.code != 404:
                        log.warning("deleting %s/%s: %s", name, child_name, exc.message)
        await self.finalize_namespace(name)
        return obj

    async def finalize_namespace(self, name: str) -> None:
        """Remove a terminating namespace once nothing is left in it."""
        assert self._namespaces is not None
        await self.cache.sync()
        entry = self.cache.get(self._namespaces, self._namespaces.storage_key(name), None)
        if entry is None or not entry.value.get("metadata", {}).get("deletionTimestamp"):
            return
        for other in self.registry.kinds:
            if other.stored and other.namespaced and self.cache.count(other, name):
                return
        try:
            await self.store.delete(entry.key, expected_revision=entry.revision)
        except (ConflictError, NotFoundError):
            pass

    # -- helpers ------------------------------------------------------------------------------

    def _check_type(self, kind: Kind, obj: Any) -> None:
        if not isinstance(obj, dict):
            raise bad_request(f"the body of the request must be a {kind.kind} object")
        api_version, type_ = obj.get("apiVersion"), obj.get("kind")
        if type_ not in (None, kind.kind) or api_version not in (None, kind.api_version):
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({kind.api_version})"
                if api_version not in (None, kind.api_version)
                else f"the kind in the data ({type_}) does not match the expected kind "
                f"({kind.kind})"
            )


@contextlib.contextmanager
def refusals_as_status() -> Iterator[None]:
    """A strategy's refusal (its code) or a validation error (422, the causes in the body)
    raised inside becomes the Status the client gets."""
    try:
        yield
    except Rejected as exc:
        raise StatusError(exc.code, exc.message) from exc
    except ValidationError as exc:
        raise StatusError(422, exc.message(), body=exc.status()) from exc
