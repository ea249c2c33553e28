"""The chaos storm for as long as you like: the engine of `tests/chaos` (one engine, two
durations) over several seeds, each a fresh `inplace up --nodes 3` (small nodes, optionally
with simulated ones), with the faults beyond SIGKILL turned on.

Seeds N, N+1, ... run one after another until ``--minutes`` have passed; each storms for
``--storm-seconds`` while the chaos thread kills components (and sometimes `inplace up`),
pauses a node agent past the node grace period, fills the data dir's disk and steps the
cluster's clock. The baseline, measured in the same run: the first seed's storm once more
with no chaos at all, for the acknowledged-write rate and the checks per second a calm cluster
gives. Prints the counts of operations, kills, faults and checks per seed and in total, and
every violation with its seed and operation log (exit status 1).

    python bench/chaos.py --minutes 20 --seed 1 [--storm-seconds 240] [--simulated-nodes 20]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tests.chaos.engine import Report, Settings, run

ALL_FAULTS = ("stop", "disk", "clock")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--storm-seconds", type=float, default=240.0)
    parser.add_argument("--simulated-nodes", type=int, default=0)
    parser.add_argument("--faults", default=",".join(ALL_FAULTS), help="stop,disk,clock or ''")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument(
        "--workdir", type=Path, help="where each seed's cluster runs (default: a temp dir)"
    )
    args = parser.parse_args()
    faults = tuple(f for f in args.faults.split(",") if f)
    deadline = time.monotonic() + args.minutes * 60
    reports: list[Report] = []
    seed = args.seed
    baseline: Report | None = None
    tmp = args.workdir or Path(tempfile.mkdtemp(prefix="inplace-chaos-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        if not args.no_baseline:
            calm = Settings(
                seed=args.seed,
                seconds=min(args.storm_seconds, 60.0),
                simulated_nodes=args.simulated_nodes,
                kill_every=(1e9, 1e9),
            )
            baseline = run(calm, tmp / "baseline")
            print(f"baseline (no chaos): {baseline.summary()}", flush=True)
        while time.monotonic() < deadline:
            left = deadline - time.monotonic()
            settings = Settings(
                seed=seed,
                seconds=max(30.0, min(args.storm_seconds, left - 60)),
                simulated_nodes=args.simulated_nodes,
                faults=faults,
            )
            report = run(settings, tmp / f"seed-{seed}")
            reports.append(report)
            print(report.summary(), flush=True)
            if report.violations:
                print(report.explain(), flush=True)
            seed += 1
    finally:  # a violation's run is kept: its data dir holds every component's log
        for report in reports:
            if not report.violations:
                shutil.rmtree(tmp / f"seed-{report.seed}", ignore_errors=True)
        if baseline is not None and not baseline.violations:
            shutil.rmtree(tmp / "baseline", ignore_errors=True)
        if args.workdir is None and not any(tmp.iterdir()):
            tmp.rmdir()
    return summarize(reports, baseline)


def summarize(reports: list[Report], baseline: Report | None) -> int:
    kills: Counter[str] = Counter()
    for report in reports:
        kills.update(report.kills)
    operations = sum(r.operations for r in reports)
    acknowledged = sum(r.acknowledged for r in reports)
    checks = sum(r.checks for r in reports)
    seconds = sum(r.seconds for r in reports)
    violations = sum(len(r.violations) for r in reports)
    print()
    print(f"seeds:            {', '.join(str(r.seed) for r in reports)}")
    print(f"time:             {seconds / 60:.1f} min")
    print(f"operations:       {operations} ({acknowledged} acknowledged)")
    what = ", ".join(f"{k} {v}" for k, v in sorted(kills.items()))
    print(f"kills and faults: {sum(kills.values())} ({what})")
    events, relists = sum(r.events for r in reports), sum(r.relists for r in reports)
    print(f"checks:           {checks} over {events} watch events, {relists} relists")
    if baseline is not None and baseline.seconds and seconds:
        print(
            f"acknowledged writes/s: {acknowledged / seconds:.2f} under chaos, "
            f"{baseline.acknowledged / baseline.seconds:.2f} calm (baseline, same run)"
        )
    errors: Counter[str] = Counter()
    for report in reports:
        errors.update(report.errors)
    answers = ", ".join(f"{k} x{v}" for k, v in errors.most_common(8))
    print(f"refused writes:   {answers or 'none'}")
    print(f"violations:       {violations}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
