"""The shared event recorder (inplace.client.events): client-go's correlation, then for real."""

from __future__ import annotations

from typing import Any

from inplace.client import EVENTS, Client, ClusterConfig
from inplace.client.events import (
    COMBINED_PREFIX,
    SPAM_BURST,
    EventCorrelator,
    EventRecorder,
    ObjectRef,
)
from tests.conftest import InProcessServer


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def recorder(clock: Clock, *, host: str = "node-1") -> EventRecorder:
    """A recorder that never posts (no client session is opened until it does)."""
    client = Client(ClusterConfig(server="http://127.0.0.1:9"))
    return EventRecorder(client, component="kubelet", host=host, correlator=EventCorrelator(clock))


POD = ObjectRef("default", "crashy", "u1", field_path="spec.containers{main}")


def make(rec: EventRecorder, message: str, reason: str = "BackOff", ref: ObjectRef = POD) -> Any:
    return rec.make_event(ref, "Warning", reason, message)


def test_an_identical_event_is_counted_on_the_first_one() -> None:
    clock = Clock()
    rec = recorder(clock)
    first = rec.correlator.correlate(make(rec, "Back-off restarting failed container main"))
    assert first is not None and first.patch is None
    name = first.event["metadata"]["name"]
    clock.now += 30
    second = rec.correlator.correlate(make(rec, "Back-off restarting failed container main"))
    clock.now += 30
    third = rec.correlator.correlate(make(rec, "Back-off restarting failed container main"))
    assert second is not None and third is not None
    assert third.event["metadata"]["name"] == name
    assert third.event["count"] == 3
    assert third.event["firstTimestamp"] == first.event["firstTimestamp"]
    assert third.patch == {
        "count": 3,
        "lastTimestamp": third.event["lastTimestamp"],
        "message": "Back-off restarting failed container main",
    }
    assert third.event["lastTimestamp"] != first.event["firstTimestamp"]


def test_similar_events_are_combined_after_ten_within_ten_minutes() -> None:
    clock = Clock()
    rec = recorder(clock)
    results = [rec.correlator.correlate(make(rec, f"message {i}")) for i in range(9)]
    assert all(r is not None and r.patch is None for r in results)
    assert [r.event["message"] for r in results if r] == [f"message {i}" for i in range(9)]
    tenth = rec.correlator.correlate(make(rec, "message 9"))
    assert tenth is not None and tenth.patch is None
    assert tenth.event["message"] == COMBINED_PREFIX + "message 9"
    eleventh = rec.correlator.correlate(make(rec, "message 10"))
    assert eleventh is not None
    assert eleventh.event["metadata"]["name"] == tenth.event["metadata"]["name"]
    assert eleventh.patch is not None and eleventh.patch["count"] == 2
    assert eleventh.patch["message"] == COMBINED_PREFIX + "message 10"
    # Ten minutes of quiet: the next different message stands on its own again.
    clock.now += 601
    fresh = rec.correlator.correlate(make(rec, "message 11"))
    assert fresh is not None and fresh.event["message"] == "message 11"
    # Another reason is another group.
    other = rec.correlator.correlate(make(rec, "x", reason="Killing"))
    assert other is not None and other.event["message"] == "x"


def test_each_source_may_burst_25_events_about_an_object_then_one_per_5_minutes() -> None:
    clock = Clock()
    rec = recorder(clock)
    allowed = [
        rec.correlator.correlate(make(rec, "same")) is not None for _ in range(SPAM_BURST + 5)
    ]
    assert allowed == [True] * SPAM_BURST + [False] * 5
    other_pod = ObjectRef("default", "other", "u2")
    assert rec.correlator.correlate(make(rec, "same", ref=other_pod)) is not None
    other_node = recorder(clock, host="node-2")
    other_node.correlator = rec.correlator
    assert other_node.correlator.correlate(make(other_node, "same")) is not None
    clock.now += 299
    assert rec.correlator.correlate(make(rec, "same")) is None
    clock.now += 2
    assert rec.correlator.correlate(make(rec, "same")) is not None


def test_events_have_upstreams_shape() -> None:
    rec = recorder(Clock())
    event = rec.make_event(POD, "Normal", "Started", "Started container main")
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "default",
        "name": "crashy",
        "uid": "u1",
        "fieldPath": "spec.containers{main}",
    }
    assert event["source"] == {"component": "kubelet", "host": "node-1"}
    assert (event["reportingComponent"], event["reportingInstance"]) == ("kubelet", "node-1")
    assert event["metadata"]["name"].startswith("crashy.")
    assert event["count"] == 1 and event["firstTimestamp"] == event["lastTimestamp"]


async def test_the_recorder_counts_on_the_server_and_recreates_a_deleted_event(
    apiserver: InProcessServer,
) -> None:
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        rec = EventRecorder(client, component="kubelet", host="node-1")
        rec.start()
        try:
            for _ in range(3):
                rec.event(POD, "Warning", "BackOff", "Back-off restarting failed container main")
            rec.event(POD, "Normal", "Started", "Started container main")
            await rec.flush()
            items = (await client.list(EVENTS, namespace="default"))["items"]
            by_reason = {e["reason"]: e for e in items}
            assert len(items) == 2
            assert by_reason["BackOff"]["count"] == 3
            assert by_reason["Started"]["count"] == 1
            # Deleted meanwhile (say, by its TTL): the next occurrence creates it again.
            name = by_reason["BackOff"]["metadata"]["name"]
            await client.delete(EVENTS, name, namespace="default")
            rec.event(POD, "Warning", "BackOff", "Back-off restarting failed container main")
            await rec.flush()
            again = await client.get(EVENTS, name, namespace="default")
            assert again["count"] == 4
            assert rec.posted == 5 and rec.dropped == 0
        finally:
            await rec.stop()
