"""Rescue benchmark: a cluster sized for peaks, a burst of pending pods, with and without rescue.

The replay (:mod:`inplace.controllers.rescue.simulation`) runs the controller's own
decisions on a simulated clock: ``--nodes`` nodes filled to 92% of their requests by
services sized for their peak and running off-peak (70% of them allow shrinking), then
``--burst`` jobs of 1 CPU / 2 GiB arriving over five minutes, each running 30 minutes once
placed. The baseline, in the same run, is the same cluster without the rescuer: jobs wait
for room that other jobs free.

Printed per run: jobs placed, their wait (median, p95, max) and the jobs never placed;
services shrunk, the shrink and growth resizes; the samples at which a shrunk service used
more memory than it was left with; and when every shrunk service was back at its size.

    python bench/rescue_bench.py [--nodes 20] [--burst 300] [--hours 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

from inplace.controllers.rescue.simulation import Result, Scenario, simulate


def _seconds(value: float) -> str:
    if value != value:  # NaN: nothing placed
        return "-"
    if value < 120:
        return f"{value:.1f}s"
    return f"{value / 60:.1f}min"


def report(result: Result, elapsed: float) -> list[str]:
    name = "with the rescuer" if result.rescuer else "without (baseline)"
    lines = [
        f"{name}:",
        f"  jobs placed           {result.placed}/{result.jobs}"
        f" (never placed: {result.jobs - result.placed})",
        f"  wait to be placed     median {_seconds(result.wait(0.5))}, "
        f"p95 {_seconds(result.wait(0.95))}, max {_seconds(result.wait(1.0))}",
    ]
    if result.rescuer:
        restored = (
            f"all back at their size at t={_seconds(result.restored_at)}"
            if result.restored_at is not None
            else f"{result.still_shrunk} still shrunk at the end"
        )
        lines += [
            f"  rescues               {result.rescues} (each a pending pod placed by shrinking)",
            f"  services shrunk       {len(result.shrunk_pods)}/{result.services} "
            f"({result.shrinks} shrink resizes, {result.growths} growth resizes)",
            f"  memory above request  {result.over_request} samples of shrunk services",
            f"  grown back            {restored}",
        ]
    lines.append(f"  (replayed in {elapsed:.1f}s)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--burst", type=int, default=300)
    parser.add_argument("--hours", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    scenario = Scenario(
        nodes=args.nodes, burst=args.burst, duration=args.hours * 3600.0, seed=args.seed
    )
    print(
        f"{scenario.nodes} nodes of {scenario.node_cpu // 1000} CPU / "
        f"{scenario.node_memory // 1024**3} GiB, services requesting {scenario.fill:.0%} "
        f"({scenario.shrinkable:.0%} shrinkable), {scenario.burst} jobs of "
        f"{scenario.job_cpu}m / {scenario.job_memory // 1024**3} GiB for "
        f"{scenario.job_seconds / 60:.0f} min arriving at t={scenario.burst_at / 60:.0f} min "
        f"over {scenario.burst_over / 60:.0f} min; {args.hours:g} h simulated"
    )
    for rescuer in (False, True):
        started = time.perf_counter()
        result = simulate(scenario, rescuer=rescuer)
        print("\n".join(report(result, time.perf_counter() - started)))


if __name__ == "__main__":
    main()
