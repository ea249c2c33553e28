"""VerticalPodAutoscalerCheckpoint objects: upstream's JSON, round trips, bad input, and
what the inplace variant learns (the memory jump and floor) in the objects' annotations."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from inplace.api.annotations import (
    MEMORY_FLOOR,
    MEMORY_FLOOR_TIME,
    MEMORY_JUMP,
    MEMORY_JUMP_TIME,
)
from inplace.api.quantity import Quantity
from inplace.controllers.vpa.checkpoint import (
    checkpoint_name,
    checkpoint_objects,
    checkpoint_patch,
    load_checkpoint,
    load_checkpoints,
)
from inplace.controllers.vpa.histogram import CheckpointError
from inplace.controllers.vpa.model import AggregateContainerState
from inplace.controllers.vpa.recommender import ContainerKey, Recommender
from inplace.controllers.vpa.settings import MIB, RecommenderSettings
from tests.controllers.vpa.presets import LEARNING_JUMPS

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


# -- what the inplace variant learns: the memory jump and the floor, as annotations ----------

INPLACE = LEARNING_JUMPS
LEARNED = (MEMORY_JUMP, MEMORY_JUMP_TIME, MEMORY_FLOOR, MEMORY_FLOOR_TIME)


def learning_recommender(clock: Clock) -> Recommender:
    """Under the inplace settings: memory steps from 200Mi to 500Mi (a jump of 300Mi),
    then an OOM kill at 520Mi (a floor of 520Mi x 1.2)."""
    rec = Recommender(INPLACE, clock)
    container = ContainerKey("uid-1", "hamster")
    for i in range(60):
        rec.add_sample(
            KEY,
            container,
            T0 + 30 * i,
            cpu_millicores=200,
            memory_bytes=(200 if i < 30 else 500) * MIB,
            cpu_request_millicores=250,
        )
    assert rec.record_oom(KEY, container, T0 + 30 * 60, 520 * MIB)
    return rec


def test_the_jump_and_the_floor_are_annotations_beside_upstreams_status() -> None:
    clock = Clock()
    rec = learning_recommender(clock)
    agg = rec.aggregates(KEY)["hamster"]
    assert agg.memory_jump == 300 * MIB  # the kill's rise, 124Mi, is smaller
    assert agg.memory_floor == 624 * MIB  # max(520Mi + 100Mi, 520Mi x 1.2)
    (obj,) = checkpoint_objects(rec, KEY)
    assert obj["metadata"]["annotations"] == {
        MEMORY_JUMP: str(300 * MIB),
        MEMORY_JUMP_TIME: "2026-01-05T00:15:00.000000Z",
        MEMORY_FLOOR: str(624 * MIB),
        MEMORY_FLOOR_TIME: "2026-01-05T00:30:00.000000Z",
    }
    # The status is upstream's, field for field.
    assert set(obj["status"]) == set(UPSTREAM_CHECKPOINT["status"])


def test_the_jump_and_the_floor_survive_a_round_trip() -> None:
    clock = Clock()
    rec = learning_recommender(clock)
    objects = orjson.loads(orjson.dumps(checkpoint_objects(rec, KEY)))
    restarted = Recommender(INPLACE, clock)
    assert load_checkpoints(restarted, objects, [KEY]) == []
    before, after = rec.aggregates(KEY)["hamster"], restarted.aggregates(KEY)["hamster"]
    now = clock.now()
    assert after.jump(now) == before.jump(now) > 0
    assert after.floor(now) == before.floor(now) > 0
    assert restarted.recommendation(KEY, VPA) == rec.recommendation(KEY, VPA)
    assert checkpoint_objects(restarted, KEY) == objects
    # Both decay on from the time they were learned, not from the restart.
    clock.t += 3600
    assert restarted.recommendation(KEY, VPA) == rec.recommendation(KEY, VPA)
    # And they matter: without them the recommendation is lower.
    forgetful = Recommender(INPLACE, clock)
    for obj in objects:
        del obj["metadata"]["annotations"]
    assert load_checkpoints(forgetful, objects, [KEY]) == []
    memory = target_memory(forgetful)
    assert memory < target_memory(rec)


def target_memory(rec: Recommender) -> int:
    out = rec.recommendation(KEY, VPA)
    assert out is not None
    return Quantity.parse(out["containerRecommendations"][0]["target"]["memory"]).value()


@pytest.mark.parametrize(
    ("annotations", "jump", "floor"),
    [
        ({}, False, False),
        ({MEMORY_JUMP: "1048576"}, False, False),  # no time
        ({MEMORY_FLOOR_TIME: "2026-01-05T00:00:00Z"}, False, False),  # no value
        ({MEMORY_JUMP: "lots", MEMORY_JUMP_TIME: "2026-01-05T00:00:00Z"}, False, False),
        ({MEMORY_JUMP: "-5", MEMORY_JUMP_TIME: "2026-01-05T00:00:00Z"}, False, False),
        ({MEMORY_JUMP: "0", MEMORY_JUMP_TIME: "2026-01-05T00:00:00Z"}, False, False),
        ({MEMORY_JUMP: "1e9", MEMORY_JUMP_TIME: "2026-01-05T00:00:00Z"}, False, False),
        ({MEMORY_JUMP: "1Gi", MEMORY_JUMP_TIME: "2026-01-05T00:00:00Z"}, False, False),
        ({MEMORY_JUMP: " 7", MEMORY_JUMP_TIME: "2026-01-05T00:00:00Z"}, False, False),
        ({MEMORY_JUMP: "9" * 30, MEMORY_JUMP_TIME: "2026-01-05T00:00:00Z"}, False, False),
        ({MEMORY_FLOOR: "1048576", MEMORY_FLOOR_TIME: "yesterday"}, False, False),
        ({MEMORY_FLOOR: "1048576", MEMORY_FLOOR_TIME: "9999-12-31T23:59:59-23:59"}, False, False),
        ({MEMORY_FLOOR: 1048576, MEMORY_FLOOR_TIME: "2026-01-05T00:00:00Z"}, False, False),
        # One garbled pair leaves the other.
        (
            {
                MEMORY_JUMP: "x",
                MEMORY_JUMP_TIME: "2026-01-05T00:00:00Z",
                MEMORY_FLOOR: "1048576",
                MEMORY_FLOOR_TIME: "2026-01-05T00:00:00Z",
            },
            False,
            True,
        ),
        (
            {
                MEMORY_JUMP: "1048576",
                MEMORY_JUMP_TIME: "2026-01-05T00:00:00.5Z",
                MEMORY_FLOOR: "1048576",
                MEMORY_FLOOR_TIME: "",
            },
            True,
            False,
        ),
    ],
)
def test_missing_or_garbled_annotations_mean_nothing_learned(
    annotations: dict[str, Any], jump: bool, floor: bool
) -> None:
    obj = copy.deepcopy(UPSTREAM_CHECKPOINT)
    obj["metadata"]["annotations"] = {"other.example/keep": "me", **annotations}
    rec = Recommender(INPLACE, Clock())
    assert load_checkpoints(rec, [obj], [KEY]) == []
    agg = rec.aggregates(KEY)["hamster"]
    assert agg.total_samples_count == 1440  # the history loaded all the same
    assert (agg.memory_jump == 1048576) is jump
    assert (agg.memory_floor == 1048576) is floor
    assert bool(agg.memory_jump) is jump
    assert bool(agg.memory_floor) is floor


@pytest.mark.parametrize("annotations", [None, "not a map", ["a"], 7])
def test_annotations_that_are_not_a_map_are_ignored(annotations: Any) -> None:
    obj = copy.deepcopy(UPSTREAM_CHECKPOINT)
    obj["metadata"]["annotations"] = annotations
    rec = Recommender(INPLACE, Clock())
    assert load_checkpoints(rec, [obj], [KEY]) == []
    agg = rec.aggregates(KEY)["hamster"]
    assert (agg.memory_jump, agg.memory_floor) == (0.0, 0.0)


def test_an_upstream_checkpoint_loads_as_nothing_learned_and_is_written_back_as_upstreams() -> None:
    clock = Clock()
    rec = Recommender(INPLACE, clock)
    assert load_checkpoint(rec, UPSTREAM_CHECKPOINT) == KEY
    agg = rec.aggregates(KEY)["hamster"]
    assert (agg.memory_jump, agg.memory_floor) == (0.0, 0.0)
    (obj,) = checkpoint_objects(rec, KEY)
    assert obj["metadata"] == UPSTREAM_CHECKPOINT["metadata"]  # no annotations
    # Written over upstream's checkpoint: the status alone, as upstream's writer does.
    assert checkpoint_patch(obj, UPSTREAM_CHECKPOINT) == [
        {"op": "add", "path": "/status", "value": obj["status"]}
    ]
    # Over one that has ours from before: they are removed, others' annotations kept.
    stored = copy.deepcopy(UPSTREAM_CHECKPOINT)
    stored["metadata"]["annotations"] = {"other.example/keep": "me", **dict.fromkeys(LEARNED, "1")}
    assert checkpoint_patch(obj, stored) == [
        {"op": "add", "path": "/status", "value": obj["status"]},
        {"op": "add", "path": "/metadata/annotations", "value": {"other.example/keep": "me"}},
    ]


def test_the_patch_writes_status_and_annotations_together() -> None:
    (obj,) = checkpoint_objects(learning_recommender(Clock()), KEY)
    learned = obj["metadata"]["annotations"]
    assert set(learned) == set(LEARNED)
    # The whole status, as upstream replaces it: a merge patch would keep stored buckets.
    assert checkpoint_patch(obj, UPSTREAM_CHECKPOINT) == [
        {"op": "add", "path": "/status", "value": obj["status"]},
        {"op": "add", "path": "/metadata/annotations", "value": learned},
    ]
    stored = copy.deepcopy(UPSTREAM_CHECKPOINT)
    stored["metadata"]["annotations"] = {"other.example/keep": "me", MEMORY_JUMP: "1"}
    assert checkpoint_patch(obj, stored)[1:] == [
        {
            "op": "add",
            "path": "/metadata/annotations",
            "value": {"other.example/keep": "me", **learned},
        }
    ]
    # Nothing to change in the annotations: the status alone.
    stored["metadata"]["annotations"] = {"other.example/keep": "me", **learned}
    assert checkpoint_patch(obj, stored) == [
        {"op": "add", "path": "/status", "value": obj["status"]}
    ]


def test_upstream_settings_learn_nothing_and_write_no_annotations() -> None:
    rec = Recommender(RecommenderSettings(), Clock())
    container = ContainerKey("uid-1", "hamster")
    for i in range(20):
        rec.add_sample(KEY, container, T0 + 30 * i, cpu_millicores=10, memory_bytes=i * 10 * MIB)
    rec.record_oom(KEY, container, T0 + 600, 200 * MIB)
    (obj,) = checkpoint_objects(rec, KEY)
    assert "annotations" not in obj["metadata"]


def _with_learned(jump: tuple[float, float], floor: tuple[float, float]) -> AggregateContainerState:
    agg = AggregateContainerState(INPLACE, creation_time=T0)
    agg.memory_jump, agg.memory_jump_at = jump
    agg.memory_floor, agg.memory_floor_at = floor
    return agg


@pytest.mark.parametrize(
    ("mine", "theirs", "kept"),
    [
        # The larger once both are brought to the later time: a jump halves in a day.
        ((100.0, T0), (150.0, T0 - 86400), (100.0, T0)),  # 150 then is 75 now
        ((100.0, T0), (250.0, T0 - 86400), (250.0, T0 - 86400)),  # 125 now
        ((100.0, T0 - 86400), (60.0, T0), (60.0, T0)),  # 50 then
        ((100.0, T0), (100.0, T0), (100.0, T0)),
        ((0.0, 0.0), (80.0, T0), (80.0, T0)),
        ((80.0, T0), (0.0, 0.0), (80.0, T0)),
    ],
)
def test_merge_keeps_the_larger_jump(
    mine: tuple[float, float], theirs: tuple[float, float], kept: tuple[float, float]
) -> None:
    agg = _with_learned(mine, (0.0, 0.0))
    agg.merge(_with_learned(theirs, (0.0, 0.0)))
    assert (agg.memory_jump, agg.memory_jump_at) == kept
    # Whatever the order, the one kept is the one larger at every later time.
    other = _with_learned(theirs, (0.0, 0.0))
    other.merge(_with_learned(mine, (0.0, 0.0)))
    later = T0 + 3 * 86400
    assert other.jump(later) == pytest.approx(agg.jump(later))


def test_merge_keeps_the_larger_floor() -> None:
    half_life = INPLACE.memory_event_floor_half_life
    assert half_life is not None
    agg = _with_learned((0.0, 0.0), (400.0, T0 - half_life))  # 200 at T0
    agg.merge(_with_learned((0.0, 0.0), (300.0, T0)))
    assert (agg.memory_floor, agg.memory_floor_at) == (300.0, T0)
    agg.merge(_with_learned((0.0, 0.0), (500.0, T0 - 2 * half_life)))  # 125 at T0
    assert (agg.memory_floor, agg.memory_floor_at) == (300.0, T0)
