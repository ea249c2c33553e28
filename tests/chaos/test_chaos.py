"""Three seeds of the chaos storm on a real `inplace up --nodes 3`, no violation allowed
(issue 14). A violation prints the seed, the operation log and the offending objects;
`python bench/chaos.py --seed N` replays a seed for longer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.chaos.checker import Violation
from tests.chaos.engine import Settings, run

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory").is_dir(),
    reason="needs root and cgroup v1 (real limits are checked)",
)


def open_finding(violation: Violation) -> bool:
    """The one open finding of issue 14, reported and not yet fixed: a pod's CPU limit
    resized above its node's allocatable CPU cannot be written, because the node cgroup's
    CFS quota is its allocatable and v1's quotas are hierarchical (``EINVAL``); the
    container then waits in back-off at its old size. Every other violation fails."""
    return violation.invariant == "2 resizes" and any(
        "cfs_quota_us: Invalid argument" in str(message)
        for pod in violation.objects
        for cs in (pod.get("status") or {}).get("containerStatuses") or ()
        for message in [((cs.get("lastState") or {}).get("terminated") or {}).get("message")]
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_storm_under_chaos_keeps_the_invariants(seed: int, tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    report = run(
        Settings(seed=seed, seconds=10.0, kill_every=(4.0, 7.0), settle_seconds=60.0), tmp_path
    )
    print(report.summary())
    assert report.operations > 0 and report.checks > 0 and sum(report.kills.values()) > 0
    known = [v for v in report.violations if open_finding(v)]
    if known:
        print(f"seed {seed}: {len(known)} violation(s) of the open finding (issue 14)")
    assert [v for v in report.violations if not open_finding(v)] == [], report.explain()
