"""The operator's mutating admission webhook, as a pure function of the AdmissionReview
request: how a resources-only change of a workload is kept from rolling out on a real
cluster, whose controllers replace pods on any template change.

Each workload kind is held the way its upstream controller can be held, in the same write as
the change itself, so no sync of the real controller ever sees the new template unheld:

* **Deployment**: ``spec.paused`` is set. A paused Deployment's sync never creates a
  ReplicaSet (upstream's ``sync`` with ``createIfNotExisted=false``); the operator then
  brings the current ReplicaSet's template to the new size and unpauses, and the deployment
  controller finds that ReplicaSet as the new one (``FindNewReplicaSet``): no rollout.
* **StatefulSet** and **DaemonSet**: ``spec.updateStrategy`` becomes ``OnDelete``. The new
  ControllerRevision is made, no pod is replaced; the operator moves each pod to it by
  relabelling (:mod:`inplace.controllers.workloadresize.revisions`) and restores the
  strategy.
* **Job**: the template is immutable while the Job exists, so the change is taken out of it
  and recorded in :data:`~inplace.api.annotations.TEMPLATE_RESOURCES`; the Job's running
  pods are resized to it, and its later pods (retries, remaining completions) are created at
  it (``pods`` CREATE below).

What the webhook changed is recorded in :data:`~inplace.api.annotations.HELD` so the operator
restores exactly the user's values. A change the in-place rule refuses (anything beyond
containers' cpu and memory, a QoS class change, a ``resizePolicy`` change), a workload with
``inplace.dev/in-place: "false"``, and the operator's own writes pass untouched. With the
webhook down (``failurePolicy: Ignore``) every change rolls out as on any cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from inplace.api.annotations import HELD, IN_PLACE, TEMPLATE_RESOURCES, parse_held
from inplace.api.podtemplates import recorded_resources
from inplace.controllers.workloadresize.model import in_place_verdict

__all__ = [
    "HELD_KINDS",
    "Admission",
    "JobLookup",
    "mutate",
    "review_response",
]

Obj = dict[str, Any]

HELD_KINDS: Final = ("Deployment", "StatefulSet", "DaemonSet", "Job")
"""The workload kinds whose UPDATE the webhook looks at (and pods, for Jobs' later pods)."""

JobLookup = Callable[[str, str], Mapping[str, Any] | None]
"""``(namespace, name)`` → the Job from the operator's cache, or None."""


@dataclass(frozen=True)
class Admission:
    """What the webhook answers: always allowed; a JSON Patch when it changes the object."""

    patch: list[Obj] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _escape(key: str) -> str:
    """A map key as a JSON Pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _annotation_op(obj: Mapping[str, Any], key: str, value: str) -> Obj:
    annotations = (obj.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, Mapping):
        return {"op": "add", "path": "/metadata/annotations", "value": {key: value}}
    return {"op": "add", "path": f"/metadata/annotations/{_escape(key)}", "value": value}


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _template(obj: Mapping[str, Any]) -> Obj:
    return dict((obj.get("spec") or {}).get("template") or {})


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def mutate(
    request: Mapping[str, Any],
    *,
    own_user: str = "",
    job: JobLookup | None = None,
    allow_memory_limit_decrease: bool = True,
) -> Admission:
    """The webhook's answer to one AdmissionReview ``request`` (see the module docstring).
    ``own_user``: the operator's own user name, whose writes pass untouched. ``job``: reads
    a pod's Job, for a pod CREATE. ``allow_memory_limit_decrease``: whether the API server
    lets a memory limit be lowered in place (False on 1.33, where such a change is not held:
    it rolls out, as on any cluster, instead of being left undone)."""
    if own_user and (request.get("userInfo") or {}).get("username") == own_user:
        return Admission()
    kind = str((request.get("kind") or {}).get("kind") or "")
    operation = request.get("operation")
    new = request.get("object") or {}
    if kind == "Pod" and operation == "CREATE" and job is not None:
        return _job_pod(new, str(request.get("namespace") or ""), job)
    old = request.get("oldObject") or {}
    if operation != "UPDATE" or kind not in HELD_KINDS or not new or not old:
        return Admission()
    if _annotations(new).get(IN_PLACE) == "false":
        return Admission()
    if kind == "Job":
        return _job(old, new, allow_memory_limit_decrease)
    verdict = in_place_verdict(
        _template(old), _template(new), allow_memory_limit_decrease=allow_memory_limit_decrease
    )
    held = parse_held(new)
    if not verdict.in_place:
        return Admission()
    if kind == "Deployment":
        return _hold_deployment(new, held)
    return _hold_by_strategy(new, held)


def _hold_deployment(new: Mapping[str, Any], held: Obj | None) -> Admission:
    spec = new.get("spec") or {}
    ops: list[Obj] = []
    if held is None:
        ops.append(_annotation_op(new, HELD, _json({"paused": bool(spec.get("paused"))})))
    if spec.get("paused") is not True:
        ops.append({"op": "add", "path": "/spec/paused", "value": True})
    return Admission(ops)


_ON_DELETE: Final = {"type": "OnDelete"}


def _hold_by_strategy(new: Mapping[str, Any], held: Obj | None) -> Admission:
    strategy = (new.get("spec") or {}).get("updateStrategy") or {}
    if held is not None and strategy == _ON_DELETE:
        return Admission()  # held already, the user's strategy recorded
    if held is None and strategy == _ON_DELETE:
        return Admission()  # OnDelete replaces nothing: nothing to hold
    record = {"updateStrategy": strategy}
    ops = [
        _annotation_op(new, HELD, _json(record)),
        {"op": "add", "path": "/spec/updateStrategy", "value": dict(_ON_DELETE)},
    ]
    return Admission(ops)


def _container_resources(template: Mapping[str, Any]) -> dict[str, Obj]:
    out: dict[str, Obj] = {}
    for container in (template.get("spec") or {}).get("containers") or ():
        if isinstance(container, Mapping) and container.get("name"):
            out[str(container["name"])] = copy.deepcopy(dict(container.get("resources") or {}))
    return out


def _job(old: Mapping[str, Any], new: Mapping[str, Any], allow_decrease: bool) -> Admission:
    old_template, new_template = _template(old), _template(new)
    verdict = in_place_verdict(
        old_template, new_template, allow_memory_limit_decrease=allow_decrease
    )
    if not verdict.in_place:
        return Admission()  # refused by the API server's validation, as upstream
    wanted = _container_resources(new_template)
    ops = [
        {"op": "replace", "path": "/spec/template", "value": old_template},
        _annotation_op(new, TEMPLATE_RESOURCES, _json(wanted)),
    ]
    return Admission(
        ops,
        [
            "inplace: the Job's template is immutable; its pods are resized in place to the "
            f"new resources instead (annotation {TEMPLATE_RESOURCES})"
        ],
    )


def _job_pod(pod: Mapping[str, Any], namespace: str, lookup: JobLookup) -> Admission:
    ref = next(
        (
            r
            for r in (pod.get("metadata") or {}).get("ownerReferences") or ()
            if r.get("controller") is True and r.get("kind") == "Job"
        ),
        None,
    )
    if ref is None:
        return Admission()
    job = lookup(namespace, str(ref.get("name") or ""))
    wanted = recorded_resources(job) if job is not None else {}
    if not wanted:
        return Admission()
    ops = []
    for index, container in enumerate((pod.get("spec") or {}).get("containers") or ()):
        resources = wanted.get(str(container.get("name") or ""))
        if resources is not None:
            ops.append(
                {"op": "add", "path": f"/spec/containers/{index}/resources", "value": resources}
            )
    return Admission(ops)


def review_response(request: Mapping[str, Any], admission: Admission) -> Obj:
    """The AdmissionReview (admission.k8s.io/v1) answering ``request``."""
    import base64

    response: Obj = {"uid": request.get("uid"), "allowed": True}
    if admission.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(admission.patch)).decode()
    if admission.warnings:
        response["warnings"] = list(admission.warnings)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
