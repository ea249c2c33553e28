"""What the live recommender reads from API objects."""

from __future__ import annotations

from typing import Any

from inplace.api.memorypause import paused_message
from inplace.controllers.vpa.inputs import (
    Sample,
    container_memory,
    memory_at_event,
    oom_kills,
    paused_containers,
    selects_recommender,
    usage_samples,
)

T = "2026-01-01T00:00:10Z"
AT = 1767225610.0


def test_pod_metrics_become_samples() -> None:
    metrics = {
        "timestamp": T,
        "containers": [
            {"name": "app", "usage": {"cpu": "250000000n", "memory": "102400Ki"}},
            {"name": "side", "usage": {"memory": "1Mi"}},
            {"usage": {"cpu": "1"}},
        ],
    }
    assert usage_samples(metrics) == [
        Sample("app", AT, 250, 100 * 2**20),
        Sample("side", AT, None, 2**20),
    ]
    assert usage_samples({"containers": metrics["containers"]}) == []  # no time stamp


def test_oom_kills_are_the_last_terminations_by_the_oom_killer() -> None:
    pod = {
        "status": {
            "containerStatuses": [
                {
                    "name": "a",
                    "lastState": {"terminated": {"reason": "OOMKilled", "finishedAt": T}},
                },
                {"name": "b", "lastState": {"terminated": {"reason": "Error", "finishedAt": T}}},
                {"name": "c", "lastState": {}},
            ]
        }
    }
    assert oom_kills(pod) == [("a", AT)]


def test_paused_containers_come_from_the_memory_paused_condition() -> None:
    pod: dict[str, Any] = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {
                    "type": "MemoryPaused",
                    "status": "True",
                    "reason": "MemoryLimitReached",
                    "message": paused_message(["a", "b"], "cgroup v1 memory.oom_control"),
                    "lastTransitionTime": T,
                },
            ]
        }
    }
    assert paused_containers(pod) == [("a", AT), ("b", AT)]
    pod["status"]["conditions"][1]["status"] = "False"
    assert paused_containers(pod) == []


def test_container_memory_prefers_what_the_node_reports() -> None:
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "resources": {"requests": {"memory": "100Mi"}, "limits": {"memory": "200Mi"}},
                }
            ]
        },
        "status": {
            "containerStatuses": [
                {
                    "name": "app",
                    "resources": {"requests": {"memory": "50Mi"}, "limits": {"memory": "80Mi"}},
                }
            ]
        },
    }
    assert container_memory(pod, "app") == (50 * 2**20, 80 * 2**20)
    del pod["status"]
    assert container_memory(pod, "app") == (100 * 2**20, 200 * 2**20)
    assert container_memory(pod, "missing") == (0, None)


def test_a_vpa_is_the_recommenders_it_names() -> None:
    """Upstream's filterVPAs: no recommenders means the default recommender's alone."""
    plain: dict[str, Any] = {"spec": {}}
    empty: dict[str, Any] = {"spec": {"recommenders": []}}
    named = {"spec": {"recommenders": [{"name": "other"}, {"name": "inplace"}]}}
    other = {"spec": {"recommenders": [{"name": "other"}]}}
    default = {"spec": {"recommenders": [{"name": "default"}]}}
    table = [
        (plain, "inplace", False),
        (plain, "default", True),
        (empty, "inplace", False),
        (empty, "default", True),
        (named, "inplace", True),
        (named, "default", False),
        (other, "inplace", False),
        (default, "default", True),
        (default, "inplace", False),
    ]
    for vpa, name, chosen in table:
        assert selects_recommender(vpa, name) is chosen, (vpa, name)


def test_memory_at_an_event_is_the_request_for_a_kill_and_the_limit_for_a_pause() -> None:
    mib = 2**20
    assert memory_at_event(100 * mib, 200 * mib, kill=True) == 100 * mib  # upstream's rule
    assert memory_at_event(100 * mib, 200 * mib, kill=False) == 200 * mib  # paused there
    assert memory_at_event(100 * mib, None, kill=False) == 100 * mib
