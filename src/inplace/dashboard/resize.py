"""The resize form: from sizes typed for a pod's containers to the patch and the kubectl line.

One implementation serves both the command the page shows and the request its button sends,
so the two can never disagree: :func:`plan_resize` compares the typed sizes with the pod's
spec and keeps only what changes, as a strategic merge patch of ``pods/resize`` (kubectl's
default patch type, so the printed ``kubectl patch pod … --subresource resize -p '…'`` sends
exactly these bytes). A value that is not a quantity is refused here, naming its field as the
API server would; everything else (requests above limits, a QoS class change, a size the node
cannot hold) is the API server's and the scheduler's to decide, and the page shows their
answer.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from inplace.api.quantity import Quantity, QuantityError

__all__ = ["FieldError", "ResizePlan", "kubectl_command", "plan_resize"]

RESOURCES: Final = ("cpu", "memory")
KINDS: Final = ("requests", "limits")


@dataclass(frozen=True, slots=True)
class FieldError:
    field: str
    message: str


@dataclass(frozen=True)
class ResizePlan:
    namespace: str
    name: str
    patch: dict[str, Any] | None
    """The ``pods/resize`` strategic merge patch; None when nothing changes or input is bad."""
    errors: tuple[FieldError, ...] = field(default_factory=tuple)

    @property
    def body(self) -> bytes:
        """The patch as sent (compact JSON, keys in the order they were built)."""
        return orjson.dumps(self.patch) if self.patch is not None else b""

    @property
    def command(self) -> str:
        return kubectl_command(self.namespace, self.name, self.body.decode()) if self.patch else ""


def kubectl_command(namespace: str, name: str, body: str) -> str:
    """``kubectl patch pod NAME -n NS --subresource resize -p 'BODY'``, quoted for a POSIX
    shell."""
    return (
        f"kubectl patch pod {shlex.quote(name)} -n {shlex.quote(namespace)} "
        f"--subresource resize -p {shlex.quote(body)}"
    )


def _spec_value(container: Mapping[str, Any], kind: str, resource: str) -> Quantity | None:
    raw = ((container.get("resources") or {}).get(kind) or {}).get(resource)
    if raw is None:
        return None
    try:
        return Quantity.from_json(raw)
    except QuantityError:
        return None


def plan_resize(pod: Mapping[str, Any], typed: Mapping[str, Any]) -> ResizePlan:
    """The patch that sets the sizes ``typed`` for the pod's containers.

    ``typed`` is ``{container: {"requests": {"cpu": "500m", ...}, "limits": {...}}}`` as the
    form sends it; an empty value leaves that resource as it is.
    """
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    containers = list((pod.get("spec") or {}).get("containers") or ())
    index = {str(c.get("name")): i for i, c in enumerate(containers)}
    errors: list[FieldError] = []
    changes: list[dict[str, Any]] = []
    if not isinstance(typed, Mapping):
        return ResizePlan(namespace, name, None, (FieldError("containers", "must be an object"),))
    for container_name, sizes in typed.items():
        i = index.get(str(container_name))
        if i is None:
            errors.append(
                FieldError(
                    "spec.containers",
                    f"container {container_name!r} is not one of this pod's containers "
                    f"({', '.join(index) or 'none'})",
                )
            )
            continue
        resources: dict[str, dict[str, str]] = {}
        for kind in KINDS:
            values = (sizes or {}).get(kind) or {} if isinstance(sizes, Mapping) else {}
            for resource, raw in values.items() if isinstance(values, Mapping) else ():
                path = f"spec.containers[{i}].resources.{kind}.{resource}"
                if resource not in RESOURCES:
                    errors.append(FieldError(path, "only cpu and memory can be resized"))
                    continue
                text = str(raw if raw is not None else "").strip()
                if not text:
                    continue
                try:
                    wanted = Quantity.parse(text)
                except QuantityError as exc:
                    errors.append(FieldError(path, f"Invalid value: {text!r}: {exc}"))
                    continue
                if wanted == _spec_value(containers[i], kind, resource):
                    continue
                resources.setdefault(kind, {})[resource] = text
        if resources:
            ordered = {k: resources[k] for k in KINDS if k in resources}
            changes.append({"name": str(container_name), "resources": ordered})
    if errors:
        return ResizePlan(namespace, name, None, tuple(errors))
    if not changes:
        return ResizePlan(
            namespace,
            name,
            None,
            (FieldError("spec.containers", "nothing to change: these are the pod's sizes now"),),
        )
    changes.sort(key=lambda c: index[c["name"]])
    return ResizePlan(namespace, name, {"spec": {"containers": changes}})
