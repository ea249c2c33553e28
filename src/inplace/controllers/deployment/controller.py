"""The Deployment controller: rollouts through ReplicaSets, as upstream — except that a pod
template change touching only container resources is made in place.

Upstream's sync loop (``pkg/controller/deployment``): claim the ReplicaSets the selector
matches; a deleted Deployment only gets its status; a paused one or a change of
``replicas`` is a proportional scale (:func:`.rollout.proportional_scale`); otherwise the
strategy runs — RollingUpdate (surge the new ReplicaSet, shrink the old ones while
``maxUnavailable`` holds) or Recreate (old pods all gone first). Revisions, the
``revisionHistoryLimit`` clean-up, ``progressDeadlineSeconds`` and the ``Progressing`` /
``Available`` conditions follow :mod:`.rollout`. ``kubectl rollout undo`` needs nothing here
(kubectl copies the old ReplicaSet's template into the Deployment).

**The in-place rule.** When no ReplicaSet has the Deployment's template but the current one
differs from it only in containers' ``resources`` and the change passes the ``pods/resize``
rules (:func:`..workloadresize.model.in_place_verdict`), that ReplicaSet is
kept: its template's resources are updated, no ReplicaSet is created and the revision does
not move. The workload-resize controller then resizes the pods through ``pods/resize``. Any
other change rolls out.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from inplace.api.timestamps import rfc3339
from inplace.client import (
    DEPLOYMENTS,
    PODS,
    REPLICASETS,
    APIAlreadyExistsError,
    APIError,
    APINotFoundError,
    key_of,
)

from ..base import NAMESPACE_INDEX, Context, QueueController, controller_key, selecting
from ..pods import (
    CONTROLLER_INDEX,
    Ownership,
    controller_of,
    controller_ref,
    is_terminating,
    selector_of,
    uid_of,
    with_type,
)
from ..workloadresize.model import in_place_verdict
from . import rollout as r

__all__ = ["DeploymentController", "find_new_replica_set", "template_without_hash"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def template_without_hash(template: Mapping[str, Any]) -> Obj:
    """A ReplicaSet's template as the Deployment wrote it (no pod-template-hash label)."""
    out = copy.deepcopy(dict(template))
    meta = out.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("labels"), dict):
        meta["labels"] = {k: v for k, v in meta["labels"].items() if k != r.POD_TEMPLATE_HASH}
    return out


def find_new_replica_set(d: Mapping[str, Any], replica_sets: list[Obj]) -> tuple[Obj | None, bool]:
    """The Deployment's new ReplicaSet and whether its template needs the in-place update.

    Upstream's ``FindNewReplicaSet`` (the oldest ReplicaSet whose template equals the
    Deployment's but for the hash label), else the most recent revision whose template
    differs only by a change that can be made in place.
    """
    template = (d.get("spec") or {}).get("template") or {}
    ordered = sorted(replica_sets, key=r.created_key)
    for rs in ordered:
        if r.equal_ignoring_hash((rs.get("spec") or {}).get("template") or {}, template):
            return rs, False
    by_revision = sorted(ordered, key=lambda x: (r.revision_of(x), r.created_key(x)), reverse=True)
    for rs in by_revision[:1]:
        old = template_without_hash((rs.get("spec") or {}).get("template") or {})
        if in_place_verdict(old, template).in_place:
            return rs, True
    return None, False


class DeploymentController(QueueController):
    name = "deployment-controller"
    workers = 5

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.deployments = ctx.informer(DEPLOYMENTS)
        self.replica_sets = ctx.informer(REPLICASETS)
        self.pods = ctx.informer(PODS)
        self.recorder = ctx.recorder(self.name)
        self.deployments.add_handler(
            lambda d: self.enqueue(key_of(d)),
            lambda old, new: self.enqueue(key_of(new)),
            lambda d: self.enqueue(key_of(d)),
        )
        self.replica_sets.add_handler(self._rs_changed, self._rs_updated, self._rs_changed)
        self.pods.add_handler(None, None, self._pod_deleted)

    # -- handlers ------------------------------------------------------------------------

    def _owner(self, obj: Mapping[str, Any]) -> str | None:
        return controller_key(obj, "Deployment", self.deployments)

    def _matching(self, rs: Mapping[str, Any]) -> list[str]:
        return selecting(rs, self.deployments)

    def _rs_changed(self, rs: Obj) -> None:
        key = self._owner(rs)
        if key is not None:
            self.enqueue(key)
        elif controller_of(rs) is None:
            for d_key in self._matching(rs):
                self.enqueue(d_key)

    def _rs_updated(self, old: Obj, new: Obj) -> None:
        old_ref, new_ref = controller_of(old), controller_of(new)
        if old_ref is not None and (new_ref is None or old_ref.get("uid") != new_ref.get("uid")):
            old_key = self._owner(old)
            if old_key is not None:
                self.enqueue(old_key)
        self._rs_changed(new)

    def _pod_deleted(self, pod: Obj) -> None:
        """A Recreate rollout waits for the old pods to be gone."""
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.replica_sets.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
        if rs is None:
            return
        key = self._owner(rs)
        if key is None:
            return
        d = self.deployments.get(key)
        if (
            d is not None
            and ((d.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate"
        ):
            self.enqueue(key)

    # -- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        cached = self.deployments.get(key)
        if cached is None:
            return None
        return await _Sync(self, with_type(copy.deepcopy(cached), DEPLOYMENTS)).run()


class _Sync:
    """One sync of one Deployment: holds the Deployment and its ReplicaSets as they are
    rewritten during the sync, so each step sees the previous steps' results."""

    def __init__(self, ctl: DeploymentController, d: Obj) -> None:
        self.ctl = ctl
        self.client = ctl.client
        self.d = d
        self.now = ctl.ctx.now()
        self.now_text = rfc3339(self.now)
        self.rs: dict[str, Obj] = {}

    # -- entry -------------------------------------------------------------------------------

    async def run(self) -> float | None:
        d = self.d
        spec = d.get("spec") or {}
        selector = spec.get("selector")
        if (
            isinstance(selector, Mapping)
            and not selector.get("matchLabels")
            and not selector.get("matchExpressions")
        ):
            self.ctl.recorder.event(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            status = d.get("status") or {}
            if int(status.get("observedGeneration") or 0) < int(d["metadata"].get("generation", 0)):
                await self._write_status(
                    {**status, "observedGeneration": d["metadata"]["generation"]}
                )
            return None
        await self._claim()
        if is_terminating(d):
            await self._sync(scale=False)
            return None
        await self._check_paused_conditions()
        if spec.get("paused"):
            return await self._sync(scale=True)
        if self._is_scaling_event():
            return await self._sync(scale=True)
        if (spec.get("strategy") or {}).get("type") == "Recreate":
            return await self._rollout_recreate()
        return await self._rollout_rolling()

    async def _claim(self) -> None:
        d = self.d
        namespace = d["metadata"].get("namespace") or ""

        async def can_adopt() -> bool:
            try:
                fresh = await self.client.get(
                    DEPLOYMENTS, d["metadata"]["name"], namespace=namespace
                )
            except APINotFoundError:
                return False
            return uid_of(fresh) == uid_of(d) and not is_terminating(fresh)

        ownership = Ownership(self.client, REPLICASETS, d, selector_of(d), can_adopt=can_adopt)
        candidates = self.ctl.replica_sets.by_index(NAMESPACE_INDEX, namespace)
        for rs in await ownership.claim(candidates):
            obj = with_type(copy.deepcopy(dict(rs)), REPLICASETS)
            self.rs[obj["metadata"]["name"]] = obj

    # -- replica sets --------------------------------------------------------------------

    def _split(self) -> tuple[Obj | None, bool, list[Obj]]:
        new, in_place = find_new_replica_set(self.d, list(self.rs.values()))
        new_name = None if new is None else new["metadata"]["name"]
        old = [rs for name, rs in self.rs.items() if name != new_name]
        return new, in_place, old

    async def _all_replica_sets(self, *, create: bool) -> tuple[Obj | None, list[Obj]]:
        """``getAllReplicaSetsAndSyncRevision``: the new ReplicaSet (created if asked) with
        its revision synced, and the old ones."""
        existing, in_place, old = self._split()
        new_revision = r.max_revision(old) + 1
        d = self.d
        paused = bool((d.get("spec") or {}).get("paused"))
        if existing is not None:
            rs = copy.deepcopy(existing)
            changed = False
            if in_place and not paused:
                hash_value = (
                    (rs["spec"]["template"].get("metadata") or {}).get("labels") or {}
                ).get(r.POD_TEMPLATE_HASH)
                template = copy.deepcopy(d["spec"]["template"])
                if hash_value:
                    template.setdefault("metadata", {}).setdefault("labels", {})[
                        r.POD_TEMPLATE_HASH
                    ] = hash_value
                rs["spec"]["template"] = template
                changed = True
            annotations = r.new_rs_annotations(d, rs, new_revision, exists=True)
            if annotations != (rs["metadata"].get("annotations") or {}):
                rs["metadata"]["annotations"] = annotations
                changed = True
            min_ready = (d.get("spec") or {}).get("minReadySeconds") or 0
            if ((rs.get("spec") or {}).get("minReadySeconds") or 0) != min_ready:
                rs["spec"]["minReadySeconds"] = min_ready
                changed = True
            if changed:
                rs = await self._update_rs(rs)
                if in_place and not paused:
                    self.ctl.recorder.event(
                        d,
                        "Normal",
                        "InPlaceResize",
                        f"Updated the resources of replica set {rs['metadata']['name']} in "
                        "place: its pods are resized without a rollout",
                    )
                return rs, old
            needs_update = self._set_revision(rs)
            if (
                r.has_progress_deadline(d)
                and r.condition_of(d.get("status") or {}, r.PROGRESSING) is None
            ):
                status = copy.deepcopy(d.get("status") or {})
                r.set_condition(
                    status,
                    r.new_condition(
                        r.PROGRESSING,
                        "True",
                        r.FOUND_NEW_RS_REASON,
                        f'Found new replica set "{rs["metadata"]["name"]}"',
                        self.now_text,
                    ),
                )
                d["status"] = status
                needs_update = True
            if needs_update:
                await self._write_status(d.get("status") or {})
            return rs, old
        if not create:
            return None, old
        return await self._create_new(old, new_revision), old

    def _set_revision(self, rs: Mapping[str, Any]) -> bool:
        revision = ((rs.get("metadata") or {}).get("annotations") or {}).get(r.REVISION)
        annotations = self.d["metadata"].setdefault("annotations", {})
        if revision is None or annotations.get(r.REVISION) == revision:
            return False
        annotations[r.REVISION] = revision
        return True

    async def _create_new(self, old: list[Obj], new_revision: int) -> Obj:
        d = self.d
        spec = d["spec"]
        status = d.get("status") or {}
        template = copy.deepcopy(spec["template"])
        hash_value = r.pod_template_hash(template, status.get("collisionCount"))
        labels = {
            **((template.get("metadata") or {}).get("labels") or {}),
            r.POD_TEMPLATE_HASH: hash_value,
        }
        template.setdefault("metadata", {})["labels"] = labels
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[r.POD_TEMPLATE_HASH] = hash_value
        name = f"{d['metadata']['name']}-{hash_value}"
        rs: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": d["metadata"]["namespace"],
                "labels": labels,
                "ownerReferences": [controller_ref(d)],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": spec.get("minReadySeconds") or 0,
                "selector": selector,
                "template": template,
            },
        }
        rs["spec"]["replicas"] = r.new_rs_new_replicas(d, [*old, rs], rs)
        rs["metadata"]["annotations"] = r.new_rs_annotations(d, rs, new_revision, exists=False)
        already = False
        try:
            created: Obj = await self.client.create(REPLICASETS, rs)
        except APIAlreadyExistsError:
            already = True
            try:
                found = await self.client.get(
                    REPLICASETS, name, namespace=d["metadata"]["namespace"]
                )
            except APINotFoundError:
                raise
            ref = controller_of(found)
            if (
                ref is not None
                and ref.get("uid") == uid_of(d)
                and r.equal_ignoring_hash(spec["template"], found["spec"]["template"])
            ):
                created = found
            else:
                st = copy.deepcopy(status)
                st["collisionCount"] = int(st.get("collisionCount") or 0) + 1
                await self._write_status(st)
                raise RuntimeError(f"hash collision for replica set {name}; retrying") from None
        except APIError as exc:
            message = f'Failed to create new replica set "{name}": {exc.message}'
            if r.has_progress_deadline(d):
                st = copy.deepcopy(status)
                r.set_condition(
                    st,
                    r.new_condition(
                        r.PROGRESSING, "False", r.FAILED_RS_CREATE_REASON, message, self.now_text
                    ),
                )
                try:
                    await self._write_status(st)
                except APIError:
                    pass
            self.ctl.recorder.event(d, "Warning", r.FAILED_RS_CREATE_REASON, message)
            raise
        created = with_type(created, REPLICASETS)
        self.rs[name] = created
        replicas = r.replicas(created)
        if not already and replicas > 0:
            self.ctl.recorder.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {name} from 0 to {replicas}",
            )
        needs_update = self._set_revision(created)
        st = copy.deepcopy(d.get("status") or {})
        if not already and r.has_progress_deadline(d):
            r.set_condition(
                st,
                r.new_condition(
                    r.PROGRESSING,
                    "True",
                    r.NEW_RS_REASON,
                    f'Created new replica set "{name}"',
                    self.now_text,
                ),
            )
            needs_update = True
        if needs_update:
            await self._write_status(st)
        return created

    async def _update_rs(self, rs: Obj) -> Obj:
        updated: Obj = with_type(await self.client.update(REPLICASETS, rs), REPLICASETS)
        self.rs[updated["metadata"]["name"]] = updated
        return updated

    async def _scale(self, rs: Obj, size: int) -> tuple[bool, Obj]:
        """``scaleReplicaSetAndRecordEvent``: set the size and the replica annotations."""
        d = self.d
        current = r.replicas(rs)
        wanted_annotations = r.replica_annotations(d)
        annotations = (rs.get("metadata") or {}).get("annotations") or {}
        size_changed = current != size
        annotations_changed = any(annotations.get(k) != v for k, v in wanted_annotations.items())
        if not size_changed and not annotations_changed:
            return False, rs
        patch = {"metadata": {"annotations": wanted_annotations}, "spec": {"replicas": size}}
        updated: Obj = await self.client.patch(
            REPLICASETS, rs["metadata"]["name"], patch, namespace=rs["metadata"]["namespace"]
        )
        updated = with_type(updated, REPLICASETS)
        self.rs[updated["metadata"]["name"]] = updated
        if size_changed:
            direction = "up" if current < size else "down"
            self.ctl.recorder.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {rs['metadata']['name']} from {current} to {size}",
            )
        return size_changed, updated

    def _is_scaling_event(self) -> bool:
        new, _, old = self._split()
        desired = r.replicas(self.d)
        for rs in r.filter_active([*old, new]):
            annotation = ((rs.get("metadata") or {}).get("annotations") or {}).get(
                r.DESIRED_REPLICAS
            )
            if annotation is None:
                continue
            try:
                if int(annotation) != desired:
                    return True
            except ValueError:
                continue
        return False

    async def _cleanup(self, old: list[Obj]) -> None:
        for rs in r.cleanup_victims(self.d, old):
            try:
                await self.client.delete(
                    REPLICASETS, rs["metadata"]["name"], namespace=rs["metadata"]["namespace"]
                )
            except APINotFoundError:
                pass
            self.rs.pop(rs["metadata"]["name"], None)

    # -- strategies ------------------------------------------------------------------------

    async def _sync(self, *, scale: bool) -> float | None:
        """``sync`` (scale=True: a scaling event or a paused Deployment) and
        ``syncStatusOnly`` (scale=False: a Deployment being deleted)."""
        new, old = await self._all_replica_sets(create=False)
        if scale:
            sizes = r.proportional_scale(self.d, new, old)
            for name, size in sizes.items():
                await self._scale(self.rs[name], size)
            new = self.rs.get(new["metadata"]["name"]) if new is not None else None
            old = [self.rs[o["metadata"]["name"]] for o in old if o["metadata"]["name"] in self.rs]
            if (self.d.get("spec") or {}).get("paused"):
                await self._cleanup(old)
                old = [o for o in old if o["metadata"]["name"] in self.rs]
        status = r.calculate_status(self.d, [*old, new], new, self.now_text)
        await self._write_status_if_changed(status)
        return None

    async def _check_paused_conditions(self) -> None:
        d = self.d
        if not r.has_progress_deadline(d):
            return
        status = copy.deepcopy(d.get("status") or {})
        cond = r.condition_of(status, r.PROGRESSING)
        if cond is not None and cond.get("reason") == r.TIMED_OUT_REASON:
            return
        paused_cond = cond is not None and cond.get("reason") == r.PAUSED_REASON
        paused = bool((d.get("spec") or {}).get("paused"))
        if paused and not paused_cond:
            new = r.new_condition(
                r.PROGRESSING, "Unknown", r.PAUSED_REASON, "Deployment is paused", self.now_text
            )
        elif not paused and paused_cond:
            new = r.new_condition(
                r.PROGRESSING, "Unknown", r.RESUMED_REASON, "Deployment is resumed", self.now_text
            )
        else:
            return
        r.set_condition(status, new)
        await self._write_status(status)

    async def _rollout_rolling(self) -> float | None:
        new, old = await self._all_replica_sets(create=True)
        assert new is not None
        d = self.d
        name = new["metadata"]["name"]
        scaled = False
        desired = r.replicas(d)
        if r.replicas(new) != desired:
            if r.replicas(new) > desired:
                scaled, new = await self._scale(new, desired)
            else:
                target = r.new_rs_new_replicas(d, [*old, new], new)
                scaled, new = await self._scale(new, target)
        if not scaled:
            sizes = r.old_replica_sets_scale_down(d, [*old, new], old, new)
            for rs_name, size in sizes.items():
                changed, _ = await self._scale(self.rs[rs_name], size)
                scaled = scaled or changed
            old = [self.rs[o["metadata"]["name"]] for o in old if o["metadata"]["name"] in self.rs]
        if not scaled and r.deployment_complete(d, d.get("status") or {}):
            await self._cleanup(old)
            old = [o for o in old if o["metadata"]["name"] in self.rs]
        return await self._sync_rollout_status(
            [*old, self.rs.get(name, new)], self.rs.get(name, new)
        )

    async def _rollout_recreate(self) -> float | None:
        new, old = await self._all_replica_sets(create=False)
        scaled_down = False
        for rs in r.filter_active(old):
            changed, _ = await self._scale(dict(rs), 0)
            scaled_down = scaled_down or changed
        old = [self.rs[o["metadata"]["name"]] for o in old if o["metadata"]["name"] in self.rs]
        if scaled_down or self._old_pods_running(new, old):
            return await self._sync_rollout_status([*old, new], new)
        if new is None:
            new, old = await self._all_replica_sets(create=True)
        assert new is not None
        if r.replicas(new) != r.replicas(self.d):
            _, new = await self._scale(new, r.replicas(self.d))
        if r.deployment_complete(self.d, self.d.get("status") or {}):
            await self._cleanup(old)
            old = [o for o in old if o["metadata"]["name"] in self.rs]
        return await self._sync_rollout_status([*old, new], new)

    def _old_pods_running(self, new: Obj | None, old: list[Obj]) -> bool:
        if sum(int((rs.get("status") or {}).get("replicas") or 0) for rs in old) > 0:
            return True
        new_uid = uid_of(new) if new is not None else None
        for rs in self.rs.values():
            if uid_of(rs) == new_uid:
                continue
            for pod in self.ctl.pods.by_index(CONTROLLER_INDEX, uid_of(rs)):
                if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    return True
        return False

    # -- status ------------------------------------------------------------------------------

    async def _sync_rollout_status(self, all_rs: list[Obj | None], new: Obj | None) -> float | None:
        status = r.rollout_status(self.d, all_rs, new, self.now, self.now_text)
        if _same(self.d.get("status") or {}, status):
            return r.requeue_after(self.d, status, self.now)
        await self._write_status(status)
        return None

    async def _write_status_if_changed(self, status: Obj) -> None:
        if not _same(self.d.get("status") or {}, status):
            await self._write_status(status)

    async def _write_status(self, status: Mapping[str, Any]) -> None:
        """PUT the Deployment's status (and its revision annotation, which upstream also
        writes through the status subresource); a 409 is retried by the queue."""
        body = {**self.d, "status": dict(status)}
        updated: Obj = await self.client.update(DEPLOYMENTS, body, subresource="status")
        self.d = with_type(updated, DEPLOYMENTS)


def _normalized(status: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in status.items() if v not in (0, None, [], {})}


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return _normalized(a) == _normalized(b)
