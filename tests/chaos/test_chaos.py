"""Three seeds of the chaos storm on a real `inplace up --nodes 3`, no violation allowed
(issue 14). A violation prints the seed, the operation log and the offending objects;
`python bench/chaos.py --seed N` replays a seed for longer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.chaos.engine import Settings, run

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory").is_dir(),
    reason="needs root and cgroup v1 (real limits are checked)",
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
    assert report.violations == [], report.explain()
