"""VerticalPodAutoscalerCheckpoint objects: upstream's JSON, round trips, bad input."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from inplace.controllers.vpa.checkpoint import (
    checkpoint_name,
    checkpoint_objects,
    load_checkpoint,
    load_checkpoints,
)
from inplace.controllers.vpa.histogram import CheckpointError
from inplace.controllers.vpa.recommender import ContainerKey, Recommender
from inplace.controllers.vpa.settings import MIB, RecommenderSettings

T0 = 1767571200.0  # 2026-01-05T00:00:00Z
KEY = ("default", "hamster-vpa")
VPA = {"metadata": {"name": "hamster-vpa", "namespace": "default"}, "spec": {}}


class Clock:
    def __init__(self) -> None:
        self.t = T0 + 3600

    def now(self) -> float:
        return self.t


# As upstream's recommender writes it (field order aside): 4/5 of the CPU weight in bucket 1
# [10m, 20.5m), 1/5 in bucket 2 [20.5m, 31.525m); one memory peak in bucket 40.
UPSTREAM_CHECKPOINT: dict[str, Any] = {
    "apiVersion": "autoscaling.k8s.io/v1",
    "kind": "VerticalPodAutoscalerCheckpoint",
    "metadata": {"name": "hamster-vpa-hamster", "namespace": "default"},
    "spec": {"containerName": "hamster", "vpaObjectName": "hamster-vpa"},
    "status": {
        "cpuHistogram": {
            "bucketWeights": {"1": 10000, "2": 2500},
            "referenceTimestamp": "2026-01-05T00:00:00Z",
            "totalWeight": 5.0,
        },
        "firstSampleStart": "2026-01-04T00:00:00Z",
        "lastSampleStart": "2026-01-05T00:00:00Z",
        "lastUpdateTime": "2026-01-05T00:01:00Z",
        "memoryHistogram": {
            "bucketWeights": {"40": 10000},
            "referenceTimestamp": "2026-01-06T00:00:00Z",
            "totalWeight": 1.0,
        },
        "totalSamplesCount": 1440,
        "version": "v3",
    },
}


def test_an_upstream_checkpoint_loads_and_drives_the_recommendation() -> None:
    rec = Recommender(RecommenderSettings(), Clock())
    assert load_checkpoint(rec, UPSTREAM_CHECKPOINT) == KEY
    agg = rec.aggregates(KEY)["hamster"]
    assert agg.total_samples_count == 1440
    assert agg.cpu.weights[1] == pytest.approx(4.0)
    assert agg.cpu.weights[2] == pytest.approx(1.0)
    out = rec.recommendation(KEY, VPA)
    assert out is not None
    (entry,) = out["containerRecommendations"]
    # p90 = end of bucket 2 = 31.525m -> 31m + 15% (4m) = 35m; p50 = end of bucket 1 =
    # 20.5m -> 20m + 3m = 23m, times (1 + 0.001/1)^-2, under the 25m minimum.
    assert entry["target"]["cpu"] == "35m"
    assert entry["lowerBound"]["cpu"] == "25m"
    memory_end = 1e7 * (1.05**41 - 1) / 0.05
    assert entry["target"]["memory"] == str(int(memory_end) + int(int(memory_end) * 0.15))


def test_objects_are_named_and_shaped_as_upstream() -> None:
    clock = Clock()
    rec = Recommender(RecommenderSettings(), clock)
    for i in range(30):
        rec.add_sample(
            KEY,
            ContainerKey("uid-1", "hamster"),
            T0 + 60 * i,
            cpu_millicores=150,
            memory_bytes=300 * MIB,
            cpu_request_millicores=100,
        )
    (obj,) = checkpoint_objects(rec, KEY)
    assert obj["metadata"] == {"name": "hamster-vpa-hamster", "namespace": "default"}
    assert checkpoint_name("hamster-vpa", "hamster") == "hamster-vpa-hamster"
    assert obj["spec"] == {"vpaObjectName": "hamster-vpa", "containerName": "hamster"}
    status = obj["status"]
    assert status["version"] == "v3"
    assert status["lastUpdateTime"] == "2026-01-05T01:00:00Z"
    assert status["firstSampleStart"] == "2026-01-05T00:00:00Z"
    assert status["lastSampleStart"] == "2026-01-05T00:29:00Z"
    assert status["totalSamplesCount"] == 30
    assert set(status["cpuHistogram"]) == {"referenceTimestamp", "bucketWeights", "totalWeight"}
    assert max(status["cpuHistogram"]["bucketWeights"].values()) == 10000
    orjson.dumps(obj)  # plain JSON


def test_round_trip_gives_the_same_recommendation_and_document() -> None:
    clock = Clock()
    rec = Recommender(RecommenderSettings(), clock)
    for i in range(500):
        rec.add_sample(
            KEY,
            ContainerKey("uid-1", "hamster"),
            T0 + 30 * i,
            cpu_millicores=100 + (i * 37) % 400,
            memory_bytes=(200 + (i * 13) % 300) * MIB,
            cpu_request_millicores=250,
        )
    objects = checkpoint_objects(rec, KEY)
    restarted = Recommender(RecommenderSettings(), clock)
    assert load_checkpoints(restarted, orjson.loads(orjson.dumps(objects)), [KEY]) == []
    assert restarted.recommendation(KEY, VPA) == rec.recommendation(KEY, VPA)
    assert checkpoint_objects(restarted, KEY) == objects


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda c: c["status"].update(version="v2"), "unsupported checkpoint version v2"),
        (lambda c: c["spec"].pop("containerName"), "spec.containerName is required"),
        (
            lambda c: c["status"]["cpuHistogram"].update(bucketWeights={"999": 1}),
            "exceeding histogram buckets",
        ),
        (lambda c: c["status"].update(lastSampleStart="yesterday"), "bad time stamp"),
        (lambda c: c["spec"].update(vpaObjectName="gone"), "missing VPA object gone"),
    ],
)
def test_bad_checkpoints_are_skipped_and_change_nothing(change: Any, reason: str) -> None:
    bad = copy.deepcopy(UPSTREAM_CHECKPOINT)
    change(bad)
    rec = Recommender(RecommenderSettings(), Clock())
    skipped = load_checkpoints(rec, [bad], [KEY])
    assert len(skipped) == 1
    assert skipped[0][0] == "hamster-vpa-hamster"
    assert reason in skipped[0][1]
    assert rec.recommendation(KEY, VPA) is None


def test_load_checkpoint_raises_for_bad_data() -> None:
    with pytest.raises(CheckpointError):
        load_checkpoint(Recommender(RecommenderSettings(), Clock()), {"spec": {}})
