"""DefaultBinder: ``POST pods/NAME/binding``, as upstream's default bind plugin."""

from __future__ import annotations

from inplace.client import PODS, APIConflictError, APIError, APINotFoundError, Client

from ..framework import PodInfo, Status

__all__ = ["DefaultBinder", "binding_body"]


def binding_body(pod: PodInfo, node: str) -> dict[str, object]:
    """The Binding, with the pod's uid and the resourceVersion the decision was made on as
    preconditions (upstream's scheduler sends only the uid): a pod resized between the
    decision and the binding must not be bound at a size the node was never checked for."""
    metadata: dict[str, str] = {"name": pod.name, "namespace": pod.namespace}
    if pod.uid:
        metadata["uid"] = pod.uid
    version = (pod.obj.get("metadata") or {}).get("resourceVersion")
    if version:
        metadata["resourceVersion"] = str(version)
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


class DefaultBinder:
    """Bind through the API server; a 409 (already bound, or deleting) is an error status."""

    name = "DefaultBinder"

    def __init__(self, client: Client) -> None:
        self.client = client

    async def bind(self, pod: PodInfo, node: str) -> Status:
        try:
            await self.client.create(
                PODS, binding_body(pod, node), namespace=pod.namespace, subresource="binding"
            )
        except (APIConflictError, APINotFoundError) as exc:
            return Status.error(f"binding rejected: {exc}", plugin=self.name)
        except (APIError, ConnectionError) as exc:
            return Status.error(f"binding failed: {exc}", plugin=self.name)
        return Status.success()
