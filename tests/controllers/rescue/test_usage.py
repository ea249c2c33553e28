"""Recent peaks from PodMetrics readings (controllers/rescue/usage.py)."""

from __future__ import annotations

from inplace.api.timestamps import rfc3339
from inplace.controllers.rescue.model import Size
from inplace.controllers.rescue.usage import UsagePeaks

MI = 1024 * 1024


def metrics(name: str, at: float, cpu: str, memory: str) -> dict[str, object]:
    return {
        "kind": "PodMetrics",
        "metadata": {"name": name, "namespace": "default"},
        "timestamp": rfc3339(at),
        "window": "10s",
        "containers": [{"name": "main", "usage": {"cpu": cpu, "memory": memory}}],
    }


def test_peak_over_the_window_once_the_history_is_long_enough() -> None:
    peaks = UsagePeaks(window=60.0, min_history=10.0)
    assert peaks.record_pod_metrics([metrics("a", 1000.0, "250000000n", "102400Ki")]) == 1
    assert peaks.peak("default/a", "main", 1000.0) is None  # one reading
    assert peaks.record_pod_metrics([metrics("a", 1000.0, "250000000n", "102400Ki")]) == 0
    assert peaks.record_pod_metrics([metrics("a", 1005.0, "50000000n", "51200Ki")]) == 1
    assert peaks.peak("default/a", "main", 1005.0) is None  # watched for 5 s only
    assert peaks.peak("default/a", "main", 1010.0) == Size(250, 100 * MI)
    assert peaks.latest("default/a", "main") == Size(50, 50 * MI)
    peaks.record_pod_metrics([metrics("a", 1062.0, "1000000n", "1024Ki")])
    # The first reading left the window: the peak is the second one now.
    assert peaks.peak("default/a", "main", 1062.0) == Size(50, 50 * MI)
    assert peaks.peak("default/a", "main", 1066.0) == Size(1, MI)
    assert peaks.peak("default/a", "main", 2000.0) is None  # nothing recent
    peaks.forget("default/a")
    assert peaks.peak("default/a", "main", 1066.0) is None
    assert peaks.pods() == []


def test_unreadable_metrics_are_skipped() -> None:
    peaks = UsagePeaks()
    bad = [
        {"metadata": {"name": "a", "namespace": "default"}, "timestamp": "yesterday"},
        metrics("b", 1000.0, "lots", "1Ki"),
    ]
    assert peaks.record_pod_metrics(bad) == 0
