"""Checkpoints and VPAs through the real API server: stored, listed, patched as upstream's
recommender does, and bad input refused with a Status naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.client import (
    VERTICALPODAUTOSCALERCHECKPOINTS,
    VERTICALPODAUTOSCALERS,
    APIBadRequestError,
    APIInvalidError,
    Client,
    ClusterConfig,
)
from inplace.controllers.vpa.checkpoint import checkpoint_objects, load_checkpoints
from inplace.controllers.vpa.recommender import ContainerKey, Recommender
from inplace.controllers.vpa.settings import MIB, RecommenderSettings
from tests.conftest import InProcessServer

T0 = 1767571200.0
KEY = ("default", "web")


class Clock:
    def now(self) -> float:
        return T0 + 3600


def vpa_object(**policy: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate"},
            "resourcePolicy": {"containerPolicies": [{"containerName": "*", **policy}]},
        },
    }


def recommender_with_history() -> Recommender:
    rec = Recommender(RecommenderSettings(), Clock())
    for i in range(120):
        rec.add_sample(
            KEY,
            ContainerKey("uid-1", "app"),
            T0 + 30 * i,
            cpu_millicores=200 + (i % 9) * 20,
            memory_bytes=(300 + i) * MIB,
            cpu_request_millicores=250,
        )
    return rec


async def test_checkpoints_survive_a_recommender_restart(apiserver: InProcessServer) -> None:
    rec = recommender_with_history()
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        await client.create(VERTICALPODAUTOSCALERS, vpa_object(), namespace="default")
        for obj in checkpoint_objects(rec, KEY):
            stored = await client.create(VERTICALPODAUTOSCALERCHECKPOINTS, obj)
            assert stored["status"] == obj["status"]
        # Upstream's writer replaces the status with a JSON patch on the object itself.
        (obj,) = checkpoint_objects(rec, KEY)
        obj["status"]["totalSamplesCount"] = 121
        await client.patch(
            VERTICALPODAUTOSCALERCHECKPOINTS,
            "web-app",
            [{"op": "replace", "path": "/status", "value": obj["status"]}],
            patch_type="json",
            namespace="default",
        )
        listed = await client.list(VERTICALPODAUTOSCALERCHECKPOINTS, namespace="default")
        items = listed["items"]
        assert [i["metadata"]["name"] for i in items] == ["web-app"]
        assert items[0]["status"]["totalSamplesCount"] == 121
        restarted = Recommender(RecommenderSettings(), Clock())
        assert load_checkpoints(restarted, items, [KEY]) == []
        vpa = await client.get(VERTICALPODAUTOSCALERS, "web", namespace="default")
        assert restarted.recommendation(KEY, vpa) == rec.recommendation(KEY, vpa)


async def test_a_never_sampled_checkpoint_with_null_times_is_stored(
    apiserver: InProcessServer,
) -> None:
    obj = {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscalerCheckpoint",
        "metadata": {"name": "web-idle", "namespace": "default"},
        "spec": {"vpaObjectName": "web", "containerName": "idle"},
        "status": {
            "lastUpdateTime": "2026-01-05T01:00:00Z",
            "version": "v3",
            "cpuHistogram": {"referenceTimestamp": None},
            "memoryHistogram": {"referenceTimestamp": None},
            "firstSampleStart": None,
            "lastSampleStart": None,
        },
    }
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        stored = await client.create(VERTICALPODAUTOSCALERCHECKPOINTS, obj)
        assert stored["status"]["firstSampleStart"] is None
        with pytest.raises(APIBadRequestError) as unknown:
            bad = dict(obj, metadata={"name": "web-bad", "namespace": "default"})
            bad["spec"] = {"vpaObjectName": "web", "containerName": "x", "colour": "red"}
            await client.request(
                "POST",
                VERTICALPODAUTOSCALERCHECKPOINTS.path(namespace="default"),
                params={"fieldValidation": "Strict"},
                body=bad,
            )
        assert "colour" in str(unknown.value)


async def test_min_above_max_is_a_422_naming_the_field(apiserver: InProcessServer) -> None:
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        with pytest.raises(APIInvalidError) as invalid:
            await client.create(
                VERTICALPODAUTOSCALERS,
                vpa_object(minAllowed={"memory": "2Gi"}, maxAllowed={"memory": "1Gi"}),
                namespace="default",
            )
        assert invalid.value.status == 422
        fields = [cause.get("field") for cause in invalid.value.causes]
        assert fields == ["spec.resourcePolicy.containerPolicies[0].maxAllowed[memory]"]
        assert 'max resource for memory is lower than min of "2Gi"' in str(invalid.value)
