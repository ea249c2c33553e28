"""metrics.k8s.io reads: get and list over whatever the provider reports; no writes."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.apiserver.errors import StatusError
from inplace.apiserver.nodemetrics import read_metrics
from inplace.apiserver.routing import RequestInfo
from inplace.registry.kinds import REGISTRY

POD_METRICS = REGISTRY.by_kind("metrics.k8s.io", "PodMetrics")


def info(verb: str, name: str | None = None) -> RequestInfo:
    assert POD_METRICS is not None
    return RequestInfo(verb, POD_METRICS, "default", name, None)


async def provider(kind: str, namespace: str | None) -> list[dict[str, Any]]:
    assert (kind, namespace) == ("PodMetrics", "default")
    return [{"kind": "PodMetrics", "metadata": {"name": n, "namespace": namespace}} for n in "ab"]


async def test_list_and_get_read_the_provider() -> None:
    listed = await read_metrics(provider, info("list"))
    assert listed["kind"] == "PodMetricsList"
    assert listed["apiVersion"] == "metrics.k8s.io/v1beta1"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]
    assert (await read_metrics(provider, info("get", "b")))["metadata"]["name"] == "b"


async def test_a_missing_object_is_404_and_a_write_is_405() -> None:
    with pytest.raises(StatusError) as caught:
        await read_metrics(provider, info("get", "zz"))
    assert caught.value.code == 404
    assert caught.value.message == 'pods.metrics.k8s.io "zz" not found'
    with pytest.raises(StatusError) as caught:
        await read_metrics(provider, info("delete", "a"))
    assert caught.value.code == 405


async def test_without_a_provider_every_list_is_empty() -> None:
    assert (await read_metrics(None, info("list")))["items"] == []
