"""The metrics.k8s.io kinds, written by hand."""

from __future__ import annotations

from typing import Any

from inplace.registry.kinds import REGISTRY
from inplace.registry.schema.check import check_fields
from inplace.registry.schema.metrics import METRICS, metrics_structs
from inplace.registry.schema.types import Tag


def test_metrics_kinds_have_hand_written_schemas() -> None:
    pod_metrics = REGISTRY.by_kind("metrics.k8s.io", "PodMetrics")
    assert pod_metrics is not None
    obj: dict[str, Any] = {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"name": "p", "namespace": "default"},
        "timestamp": "2025-01-01T00:00:00Z",
        "window": "10s",
        "containers": [{"name": "app", "usage": {"cpu": "5m", "memory": "10Mi"}}],
    }
    assert check_fields(pod_metrics, obj).ok
    obj["containers"][0]["usagee"] = {}
    assert check_fields(pod_metrics, obj).unknown == ["containers[0].usagee"]


def test_upstream_names_required_fields_and_quantity_usage() -> None:
    structs = metrics_structs()
    assert {name: s.name for name, s in structs.items()} == {
        name: f"{METRICS}.{name}" for name in ("PodMetrics", "NodeMetrics", "ContainerMetrics")
    }
    assert structs["NodeMetrics"].required == ["timestamp", "window", "usage"]
    assert structs["PodMetrics"].required == ["timestamp", "window", "containers"]
    usage = structs["ContainerMetrics"].fields["usage"].type
    assert usage.tag is Tag.MAP and usage.elem is not None and usage.elem.tag is Tag.QUANTITY
    containers = structs["PodMetrics"].fields["containers"].type
    assert containers.elem is not None and containers.elem.struct is structs["ContainerMetrics"]
