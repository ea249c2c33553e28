"""The metrics.k8s.io/v1beta1 kinds (`kubectl top`), written by hand.

Neither the client package nor a CRD carries them: upstream's metrics-server serves them
from its own Go types (k8s.io/metrics `PodMetrics`, `NodeMetrics`, `ContainerMetrics`), whose
fields and descriptions are copied here.
"""

from __future__ import annotations

import functools
from typing import Final

from inplace.registry.schema.builtin import model_struct
from inplace.registry.schema.types import (
    OBJECT_META_DOC,
    QUANTITY,
    STRING,
    TIME,
    Field,
    Struct,
    Tag,
    Type,
    type_meta_fields,
)

METRICS: Final = "io.k8s.metrics.pkg.apis.metrics.v1beta1"

_TIMESTAMP_DOC: Final = (
    "The following fields define time interval from which metrics were collected from the "
    "interval [Timestamp-Window, Timestamp]."
)


def _metric_fields(extra: dict[str, Field]) -> dict[str, Field]:
    fields = type_meta_fields()
    fields["metadata"] = Field(
        "metadata", Type(Tag.STRUCT, struct=model_struct("V1ObjectMeta")), OBJECT_META_DOC
    )
    fields["timestamp"] = Field("timestamp", TIME, _TIMESTAMP_DOC, required=True)
    fields["window"] = Field("window", STRING, "", required=True)
    fields.update(extra)
    return fields


@functools.cache
def metrics_structs() -> dict[str, Struct]:
    """PodMetrics, NodeMetrics and ContainerMetrics, by their kind."""
    usage = Type(Tag.MAP, elem=QUANTITY)
    container = Struct(
        f"{METRICS}.ContainerMetrics",
        "ContainerMetrics",
        "ContainerMetrics sets resource usage metrics of a container.",
        {
            "name": Field(
                "name",
                STRING,
                "Container name corresponding to the one from pod.spec.containers.",
                required=True,
            ),
            "usage": Field(
                "usage", usage, "The memory usage is the memory working set.", required=True
            ),
        },
    )
    pod = Struct(
        f"{METRICS}.PodMetrics",
        "PodMetrics",
        "PodMetrics sets resource usage metrics of a pod.",
        _metric_fields(
            {
                "containers": Field(
                    "containers",
                    Type(Tag.LIST, elem=Type(Tag.STRUCT, struct=container)),
                    "Metrics for all containers are collected within the same time window.",
                    required=True,
                )
            }
        ),
    )
    node = Struct(
        f"{METRICS}.NodeMetrics",
        "NodeMetrics",
        "NodeMetrics sets resource usage metrics of a node.",
        _metric_fields(
            {
                "usage": Field(
                    "usage", usage, "The memory usage is the memory working set.", required=True
                )
            }
        ),
    )
    return {"PodMetrics": pod, "NodeMetrics": node, "ContainerMetrics": container}
