"""Pod and workload subresources beyond status and resize: binding, eviction, scale, log."""

from __future__ import annotations

import asyncio
import copy
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from inplace.api.kinds import Kind
from inplace.api.selectors import LabelSelector, SelectorError
from inplace.apiserver.errors import StatusError, bad_request, conflict
from inplace.apiserver.rest import REST
from inplace.store import ConflictError


async def bind(rest: REST, pods: Kind, namespace: str, name: str, body: Any) -> dict[str, Any]:
    """pods/binding: set spec.nodeName once, and the PodScheduled condition, as upstream."""
    if not isinstance(body, dict):
        raise bad_request("the body of a binding must be a Binding object")
    target = (body.get("target") or {}).get("name")
    if not target:
        raise StatusError(422, "target.name: Required value")
    for _ in range(8):
        entry = await rest.get_entry(pods, namespace, name)
        pod = copy.deepcopy(entry.value)
        spec = pod.setdefault("spec", {})
        if pod["metadata"].get("deletionTimestamp"):
            raise conflict(
                pods.plural, "", name, "pod is being deleted, cannot be assigned to a host"
            )
        if spec.get("nodeName"):
            raise conflict(
                pods.plural,
                "",
                name,
                f'pod {name} is already assigned to node "{spec["nodeName"]}"',
            )
        spec["nodeName"] = target
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions", []) if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": rest.now(),
            }
        )
        status["conditions"] = conditions
        try:
            await rest.store.update(entry.key, pod, expected_revision=entry.revision)
        except ConflictError:
            continue
        return _success()
    raise conflict(pods.plural, "", name)


async def evict(
    rest: REST, pods: Kind, pdbs: Kind, namespace: str, name: str, body: Any
) -> dict[str, Any]:
    """pods/eviction: delete the pod unless a PodDisruptionBudget forbids it (429).

    As upstream: a pod that is not running (pending, finished, already terminating) may always
    be evicted; otherwise every budget selecting the pod must allow a disruption, and the one
    that does is charged (disruptionsAllowed - 1, the pod recorded in disruptedPods) before
    the pod is deleted, so two evictions cannot spend the same disruption.
    """
    options = (body or {}).get("deleteOptions") or {} if isinstance(body, dict) else {}
    entry = await rest.get_entry(pods, namespace, name)
    pod = entry.value
    phase = pod.get("status", {}).get("phase")
    if pod["metadata"].get("deletionTimestamp") or phase in ("Pending", "Succeeded", "Failed"):
        await rest.delete(pods, namespace, name, options)
        return _success(201)
    labels = pod["metadata"].get("labels") or {}
    matching = []
    for budget in rest.cache.entries(pdbs, namespace):
        try:
            selector = LabelSelector.from_dict(budget.value.get("spec", {}).get("selector"))
        except SelectorError:
            continue
        if selector.matches(labels):
            matching.append(budget)
    if len(matching) > 1:
        raise StatusError(
            500,
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support.",
        )
    if matching:
        budget = matching[0]
        spec_status = budget.value.get("status", {})
        budget_name = budget.value["metadata"]["name"]
        generation = budget.value["metadata"].get("generation", 1)
        if spec_status.get("observedGeneration", 0) < generation:
            raise _too_many(
                budget_name,
                f"The disruption budget {budget_name} is still being processed by the server.",
            )
        allowed = int(spec_status.get("disruptionsAllowed", 0))
        if allowed <= 0:
            raise _too_many(
                budget_name,
                f"The disruption budget {budget_name} needs "
                f"{spec_status.get('desiredHealthy', 0)} healthy pods and has "
                f"{spec_status.get('currentHealthy', 0)} currently",
            )
        charged = copy.deepcopy(budget.value)
        charged["status"]["disruptionsAllowed"] = allowed - 1
        charged["status"].setdefault("disruptedPods", {})[name] = rest.now()
        try:
            await rest.store.update(budget.key, charged, expected_revision=budget.revision)
        except ConflictError:
            raise StatusError(
                429,
                "Operation cannot be fulfilled: the disruption budget changed; retry",
                reason="TooManyRequests",
            ) from None
    await rest.delete(pods, namespace, name, options)
    return _success(201)


def _too_many(budget: str, message: str) -> StatusError:
    return StatusError(
        429,
        "Cannot evict pod as it would violate the pod's disruption budget.",
        reason="TooManyRequests",
        details={"causes": [{"reason": "DisruptionBudget", "message": message}], "name": budget},
    )


def _success(code: int = 201) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}


def scale_of(kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale view of a Deployment or ReplicaSet."""
    meta = obj["metadata"]
    selector = obj.get("spec", {}).get("selector") or {}
    try:
        selector_text = str(LabelSelector.from_dict(selector))
    except SelectorError:
        selector_text = ""
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": obj.get("spec", {}).get("replicas", 0)},
        "status": {"replicas": obj.get("status", {}).get("replicas", 0), "selector": selector_text},
    }


def log_path(log_root: Path, pod: dict[str, Any], container: str, *, previous: bool) -> Path:
    """Where the node agent writes a container's log: kubelet's /var/log/pods layout."""
    meta = pod["metadata"]
    directory = log_root / f"{meta['namespace']}_{meta['name']}_{meta['uid']}" / container
    restarts = 0
    for status in (pod.get("status", {}).get("containerStatuses") or []) + (
        pod.get("status", {}).get("initContainerStatuses") or []
    ):
        if status.get("name") == container:
            restarts = int(status.get("restartCount", 0))
    index = restarts - 1 if previous else restarts
    if index < 0:
        raise bad_request(
            f'previous terminated container "{container}" in pod "{meta["name"]}" not found'
        )
    return directory / f"{index}.log"


async def follow_file(
    path: Path, *, tail: int | None, follow: bool, still_running: Any
) -> AsyncIterator[bytes]:
    """Yield the file's lines (the last `tail` if given), then new ones while `follow`."""

    def read_initial() -> tuple[bytes, int]:
        with open(path, "rb") as handle:
            data = handle.read()
        return data, len(data)

    data, offset = await asyncio.to_thread(read_initial)
    if tail is not None:
        lines = data.splitlines(keepends=True)
        data = b"".join(lines[-tail:]) if tail > 0 else b""
    if data:
        yield data
    while follow:
        await asyncio.sleep(0.2)
        size = os.stat(path).st_size
        if size > offset:
            with open(path, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read(size - offset)
            offset = size
            yield chunk
        elif not await still_running():
            return
