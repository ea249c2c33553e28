"""Checkpoints and VPAs through the real API server: stored, listed, patched as upstream's
recommender does, and bad input refused with a Status naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from inplace.api.annotations import CHECKPOINT_ANNOTATIONS
from inplace.client import (
    VERTICALPODAUTOSCALERCHECKPOINTS,
    VERTICALPODAUTOSCALERS,
    APIBadRequestError,
    APIInvalidError,
    Client,
    ClusterConfig,
)
from inplace.controllers.vpa.checkpoint import (
    checkpoint_objects,
    checkpoint_patch,
    load_checkpoints,
)
from inplace.controllers.vpa.recommender import ContainerKey, Recommender
from inplace.controllers.vpa.settings import MIB, RecommenderSettings
from tests.conftest import InProcessServer
from tests.controllers.vpa.presets import LEARNING_JUMPS

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


async def test_the_learned_jump_and_floor_go_with_the_status_in_one_write(
    apiserver: InProcessServer,
) -> None:
    """The inplace variant's jump and floor, as the checkpoint's annotations: created with
    it, replaced with the status by the controller's one JSON patch (removed when nothing is
    learned any more, others' annotations kept), kept by upstream's status-only patch."""
    rec = Recommender(LEARNING_JUMPS, Clock())
    container = ContainerKey("uid-1", "app")
    for i in range(120):
        rec.add_sample(
            KEY,
            container,
            T0 + 30 * i,
            cpu_millicores=200,
            memory_bytes=(300 if i < 60 else 700) * MIB,
            cpu_request_millicores=250,
        )
    rec.record_oom(KEY, container, T0 + 3600, 700 * MIB)
    (obj,) = checkpoint_objects(rec, KEY)
    assert set(obj["metadata"]["annotations"]) == set(CHECKPOINT_ANNOTATIONS)
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        vpa = await client.create(VERTICALPODAUTOSCALERS, vpa_object(), namespace="default")
        # Stored first as upstream's writer leaves it: no annotations, and histogram buckets
        # this recommender's histogram does not have.
        old = copy.deepcopy(obj)
        del old["metadata"]["annotations"]
        old["status"]["memoryHistogram"]["bucketWeights"] = {"3": 10000, "4": 5000}
        stored = await client.create(VERTICALPODAUTOSCALERCHECKPOINTS, old)
        stored = await client.patch(
            VERTICALPODAUTOSCALERCHECKPOINTS,
            "web-app",
            checkpoint_patch(obj, stored),
            patch_type="json",
            namespace="default",
        )
        assert stored["metadata"]["annotations"] == obj["metadata"]["annotations"]
        assert stored["status"] == obj["status"]  # replaced whole: no stale bucket left
        # Someone else's annotation is left alone by our patch.
        stored = await client.patch(
            VERTICALPODAUTOSCALERCHECKPOINTS,
            "web-app",
            {"metadata": {"annotations": {"example.com/note": "kept"}}},
            namespace="default",
        )
        assert checkpoint_patch(obj, stored) == [
            {"op": "add", "path": "/status", "value": obj["status"]}
        ]
        # Upstream's writer replaces the status alone: the annotations stay.
        await client.patch(
            VERTICALPODAUTOSCALERCHECKPOINTS,
            "web-app",
            [{"op": "replace", "path": "/status", "value": obj["status"]}],
            patch_type="json",
            namespace="default",
        )
        items = (await client.list(VERTICALPODAUTOSCALERCHECKPOINTS, namespace="default"))["items"]
        restarted = Recommender(LEARNING_JUMPS, Clock())
        assert load_checkpoints(restarted, items, [KEY]) == []
        assert restarted.recommendation(KEY, vpa) == rec.recommendation(KEY, vpa)
        # Nothing learned any more (an upstream-settings recommender, say): ours are removed.
        (plain,) = checkpoint_objects(restarted_without_learning(items), KEY)
        stored = await client.patch(
            VERTICALPODAUTOSCALERCHECKPOINTS,
            "web-app",
            checkpoint_patch(plain, items[0]),
            patch_type="json",
            namespace="default",
        )
        assert stored["metadata"]["annotations"] == {"example.com/note": "kept"}
        assert stored["status"] == plain["status"]


def restarted_without_learning(items: list[dict[str, Any]]) -> Recommender:
    """A recommender of upstream's settings, loaded from ``items`` without their annotations."""
    rec = Recommender(RecommenderSettings(), Clock())
    bare = [{**i, "metadata": {**i["metadata"], "annotations": {}}} for i in items]
    assert load_checkpoints(rec, bare, [KEY]) == []
    return rec


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
