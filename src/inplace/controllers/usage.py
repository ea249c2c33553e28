"""Pod usage for the controllers that read it (the autoscaler and the rescuer): one source.

Where ``metrics.k8s.io`` is served (``inplace up``'s API server, or metrics-server on a real
cluster) a LIST of PodMetrics is the answer, as upstream's VPA recommender reads it. Where it
is not (a real cluster without metrics-server), each Node's kubelet Summary API is read
through the API server's node proxy (``/api/v1/nodes/NAME/proxy/stats/summary``, the
``nodes/proxy`` ``get`` permission) and turned into the PodMetrics metrics-server would serve
from it (:func:`summary_pod_metrics`). A switch either way is logged once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from inplace.api.objects import get_path
from inplace.api.resources import CPU, MEMORY
from inplace.client import PODMETRICS, APINotFoundError
from inplace.client.api import Client
from inplace.client.informer import Informer

__all__ = ["PodMetricsSource", "summary_pod_metrics"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def summary_pod_metrics(summary: Mapping[str, Any]) -> list[Obj]:
    """The PodMetrics objects (``metadata``, ``timestamp``, ``containers[].usage``) of a
    kubelet Summary API answer: each container's ``cpu.usageNanoCores`` and
    ``memory.workingSetBytes``, what metrics-server takes from a kubelet. The time stamp is
    the pod's sample time (inplace's agent), else its containers' latest CPU sample time."""
    out = []
    for pod in summary.get("pods") or ():
        ref = get_path(pod, "podRef")
        if not isinstance(ref, Mapping) or not ref.get("name"):
            continue
        containers = []
        times = []
        for container in pod.get("containers") or ():
            if not isinstance(container, Mapping) or not container.get("name"):
                continue
            usage = {}
            cpu = get_path(container, "cpu", "usageNanoCores")
            if isinstance(cpu, int):
                usage[CPU] = f"{cpu}n"
                times.append(str(get_path(container, "cpu", "time") or ""))
            memory = get_path(container, "memory", "workingSetBytes")
            if isinstance(memory, int):
                usage[MEMORY] = str(memory)
            containers.append({"name": str(container["name"]), "usage": usage})
        stamp = pod.get("time") or max((t for t in times if t), default=None)
        out.append(
            {
                "metadata": {"name": ref["name"], "namespace": ref.get("namespace") or ""},
                "timestamp": stamp,
                "containers": containers,
            }
        )
    return out


class PodMetricsSource:
    """Every pod's PodMetrics: ``metrics.k8s.io``'s, else the nodes' Summary API's.

    ``owner`` names the controller in the log lines; ``nodes`` is its Node informer (whose
    nodes are asked for a summary)."""

    def __init__(self, client: Client, nodes: Informer, owner: str) -> None:
        self.client = client
        self.nodes = nodes
        self.owner = owner
        self.from_summaries = False
        """Usage is read from the nodes' Summary API (metrics.k8s.io is not served)."""

    async def read(self) -> list[Obj]:
        try:
            listing = await self.client.list(PODMETRICS)
        except APINotFoundError:
            if not self.from_summaries:
                log.info(
                    "%s: metrics.k8s.io is not served; reading the nodes' Summary API "
                    "through the API server's node proxy",
                    self.owner,
                )
                self.from_summaries = True
            return await self._summaries()
        if self.from_summaries:
            log.info("%s: metrics.k8s.io is served again; reading PodMetrics", self.owner)
            self.from_summaries = False
        return list(listing.get("items") or ())

    async def _summaries(self) -> list[Obj]:
        """PodMetrics from each Node's ``stats/summary`` through the node proxy; a node
        that does not answer is left out, as metrics-server leaves out a kubelet."""
        names = [str((n.get("metadata") or {}).get("name") or "") for n in self.nodes.list()]
        answers = await asyncio.gather(
            *(
                self.client.request(
                    "GET", f"/api/v1/nodes/{name}/proxy/stats/summary", params={"node": name}
                )
                for name in names
            ),
            return_exceptions=True,
        )
        out: list[Obj] = []
        for name, answer in zip(names, answers, strict=True):
            if isinstance(answer, Mapping):
                out.extend(summary_pod_metrics(answer))
            elif isinstance(answer, BaseException):
                log.debug("%s: no summary from node %s: %s", self.owner, name, answer)
        return out
