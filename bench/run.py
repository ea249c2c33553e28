"""One benchmark table: every benchmark in ``bench/``, each figure the median of its runs.

Each benchmark runs as its own process (``python bench/<script> ... --json FILE``), three
times (``RUNS``), the rounds interleaved (every benchmark once, then again) so a burst of load
from elsewhere on the machine spreads over all of them rather than sinking one. A figure is
the median of its runs with their spread (min-max); a run that crashes, times out or writes no
figures is an error row, not the end of the table. Where the upstream test bed gives the same
figure (``bench/upstream_*.py --sides upstream``: kube-apiserver, kube-scheduler, the same
node agent under kube-apiserver; the operator bench's stock rollout by
kube-controller-manager), upstream's figure is in its own column, measured in the same run.

``--quick`` runs each benchmark at a short size (the table's labels say which) and, to stay
under five minutes on two cores, gives one run (``quick_runs``) to the slow benchmarks without
a target and to upstream's side; without it each runs at its full size (``Benchmark.full``,
else the script's defaults), which takes hours. No figure fails anything: a missed target is a
row that says so.

    python bench/run.py --quick [--only api,resize] [--runs 3] [--no-upstream]
                        [--json FILE] [--compare FILE]

``--json FILE`` saves the table (with the commit, the load average and how long it took);
``--compare FILE`` prints each figure beside the saved one, the change, and flags a
regression where this run's whole spread is worse than the saved run's whole spread.
``bench/baseline.json`` is the saved table of main the issue started from (issue 28).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

# -- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Benchmark:
    """One script of ``bench/`` and its arguments (``--name value``; ``""`` a bare flag).

    ``side``: the part of the script's JSON to read (the upstream scripts write one object per
    side). ``upstream``: a companion that only feeds the upstream column. ``quick_runs``: how
    many runs ``--quick`` gives it when ``--runs`` is not given (None: ``RUNS``)."""

    name: str
    script: str
    quick: Mapping[str, str]
    full: Mapping[str, str] = field(default_factory=dict)
    side: str | None = None
    upstream: bool = False
    timeout: float = 150.0
    quick_runs: int | None = None

    def runs(self, quick: bool, runs: int | None) -> int:
        if runs is not None:
            return runs
        return (self.quick_runs or RUNS) if quick else RUNS

    def arguments(self, quick: bool) -> dict[str, str]:
        return dict(self.quick if quick else self.full)

    def argv(self, quick: bool, output: Path) -> list[str]:
        argv = [sys.executable, str(BENCH / self.script)]
        for name, value in self.arguments(quick).items():
            argv.append(f"--{name.replace('_', '-')}")
            if value:
                argv.append(value)
        if self.side:
            argv += ["--sides", self.side]
        return [*argv, "--json", str(output)]


@dataclass(frozen=True)
class Target:
    """``op`` (``<=`` or ``>=``) ``value``; with ``per`` the value is for ``per`` objects and
    scales linearly to the size run (``per_argument``), for a figure that grows with size."""

    op: str
    value: float
    per: int = 0
    per_argument: str = "pods"

    def limit(self, arguments: Mapping[str, str]) -> float:
        if self.per and arguments.get(self.per_argument):
            return self.value * int(arguments[self.per_argument]) / self.per
        return self.value

    def met(self, measured: float, arguments: Mapping[str, str]) -> bool:
        limit = self.limit(arguments)
        return measured <= limit if self.op == "<=" else measured >= limit

    def describe(self, unit: str, arguments: Mapping[str, str]) -> str:
        text = f"{'≤' if self.op == '<=' else '≥'} {number(self.limit(arguments))} {unit}"
        if self.per and self.limit(arguments) != self.value:
            text += f" ({number(self.value)} per {self.per:,})"
        return text


@dataclass(frozen=True)
class Figure:
    """One row: ``key`` of ``benchmark``'s JSON, ``label`` formatted with its arguments.
    ``upstream``: (benchmark, key) of the same figure measured on upstream."""

    benchmark: str
    key: str
    label: str
    unit: str
    target: Target | None = None
    higher: bool = False
    upstream: tuple[str, str] | None = None

    @property
    def id(self) -> str:
        return f"{self.benchmark}.{self.key}"


RUNS = 3
"""Runs per benchmark: each figure is their median, shown with their spread."""

API = {"pods": "2000", "watchers": "50", "rate": "200", "seconds": "3"}
API_FULL = {"pods": "10000", "watchers": "50", "rate": "200", "seconds": "10"}
SCHEDULER = {"nodes": "5000", "pods": "1000"}
SCHEDULER_FULL = {"nodes": "5000", "pods": "10000"}
RESIZE = {"pods": "5", "resizes": "30", "restarts": "5"}
RESIZE_FULL = {"pods": "50", "resizes": "200", "restarts": "20"}
MEMORY = {"pods": "10", "settle": "2"}
MEMORY_FULL = {"pods": "100", "settle": "20"}

BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("store", "store_bench.py", {"quick": ""}),
    Benchmark("fieldmanager", "fieldmanager_bench.py", {"rounds": "500"}, {"rounds": "3000"}),
    Benchmark("api", "api_bench.py", API, API_FULL),
    Benchmark("scheduler", "scheduler_bench.py", SCHEDULER, SCHEDULER_FULL),
    Benchmark("resize", "resize_bench.py", RESIZE, RESIZE_FULL),
    Benchmark("memory", "upstream_memory.py", MEMORY, MEMORY_FULL, side="inplace"),
    Benchmark("pause", "pause_bench.py", {"spikes": "5", "restarts": "5"}, quick_runs=1),
    Benchmark(
        "rescue",
        "rescue_bench.py",
        {"nodes": "10", "burst": "50", "hours": "1"},
        {"nodes": "20", "burst": "300", "hours": "3"},
    ),
    Benchmark(
        "workload",
        "workload_bench.py",
        {"replicas": "3", "simulated_replicas": "20", "simulated_nodes": "2"},
        {"replicas": "20", "simulated_replicas": "500", "simulated_nodes": "50"},
        quick_runs=1,
    ),
    Benchmark(
        "operator",
        "operator_bench.py",
        {"quick": "", "replicas": "3"},
        {"replicas": "20"},
        quick_runs=1,
    ),
    Benchmark(
        "dashboard",
        "dashboard_bench.py",
        {"pods": "50", "nodes": "2", "loads": "2", "watch_seconds": "5"},
        {"pods": "1000", "nodes": "20", "loads": "5"},
        quick_runs=1,
    ),
    # upstream's column: the test bed's side of bench/upstream_*.py
    *(
        Benchmark(name, script, quick, full, side="upstream", upstream=True, quick_runs=1)
        for name, script, quick, full in (
            ("api-upstream", "upstream_api.py", API, API_FULL),
            ("scheduler-upstream", "upstream_scheduler.py", SCHEDULER, SCHEDULER_FULL),
            ("resize-upstream", "upstream_resize.py", RESIZE, RESIZE_FULL),
            ("memory-upstream", "upstream_memory.py", MEMORY, MEMORY_FULL),
        )
    ),
)

LE, GE = "<=", ">="
FIGURES: tuple[Figure, ...] = (
    # issue 28's targets first
    Figure(
        "api",
        "patch_p99",
        "PATCH p99 at {rate} writes/s, {pods} pods, {watchers} watchers",
        "ms",
        Target(LE, 10),
        upstream=("api-upstream", "patch_p99"),
    ),
    Figure(
        "api",
        "watch_p99",
        "watch delivery p99, same load",
        "ms",
        Target(LE, 10),
        upstream=("api-upstream", "watch_p99"),
    ),
    Figure(
        "api",
        "list_p50",
        "LIST of {pods} pods (JSON) p50",
        "ms",
        Target(LE, 75, per=10_000),
        upstream=("api-upstream", "list_p50"),
    ),
    Figure(
        "scheduler",
        "pods_per_s",
        "scheduler end to end, {nodes} nodes, {pods} pods",
        "/s",
        Target(GE, 2000),
        higher=True,
        upstream=("scheduler-upstream", "pods_per_s"),
    ),
    Figure(
        "resize",
        "cgroup_p50",
        "resize PATCH → cgroup p50 ({pods} pods, {resizes} resizes)",
        "ms",
        Target(LE, 5),
        upstream=("resize-upstream", "cgroup_p50"),
    ),
    Figure(
        "resize",
        "restart_p50",
        "restart path (delete, create, running) p50",
        "ms",
        Target(LE, 60),
        upstream=("resize-upstream", "restart_p50"),
    ),
    Figure("memory", "shim_pss", "per-container shim PSS ({pods} pods)", "MiB", Target(LE, 1)),
    Figure(
        "memory",
        "control_plane_pss_idle",
        "control plane PSS, idle",
        "MiB",
        Target(LE, 250),
        upstream=("memory-upstream", "control_plane_pss_idle"),
    ),
    # figures without a target
    Figure(
        "api",
        "patch_p50",
        "PATCH p50, same load",
        "ms",
        upstream=("api-upstream", "patch_p50"),
    ),
    Figure(
        "api",
        "watch_p50",
        "watch delivery p50, same load",
        "ms",
        upstream=("api-upstream", "watch_p50"),
    ),
    Figure(
        "api",
        "create_p50",
        "create p50, 50 concurrent",
        "ms",
        upstream=("api-upstream", "create_p50"),
    ),
    Figure(
        "scheduler",
        "baseline_creates_per_s",
        "creates alone (no scheduler), {nodes} nodes",
        "/s",
        higher=True,
    ),
    Figure("scheduler", "resize_decisions_per_s", "resize decisions (arbiter)", "/s", higher=True),
    Figure(
        "resize",
        "status_p50",
        "resize PATCH → status p50",
        "ms",
        upstream=("resize-upstream", "status_p50"),
    ),
    Figure(
        "memory",
        "control_plane_rss_idle",
        "control plane RSS, idle",
        "MiB",
        upstream=("memory-upstream", "control_plane_rss_idle"),
    ),
    Figure(
        "operator",
        "operator_seconds",
        "Deployment resized by the operator, {replicas} pods (upstream: stock rollout)",
        "s",
        upstream=("operator", "stock_seconds"),
    ),
    Figure(
        "workload",
        "in_place_s",
        "Deployment of {replicas} resized in place → all at the new size",
        "s",
    ),
    Figure("workload", "rollout_s", "the same change rolled out (new ReplicaSet)", "s"),
    Figure(
        "workload",
        "simulated_resize_s",
        "{simulated_replicas} replicas on {simulated_nodes} simulated nodes, in place",
        "s",
    ),
    Figure("pause", "pause_p50", "memory spike: paused → running bigger, p50", "ms"),
    Figure("pause", "restart_p50", "memory spike: OOM-killed → running bigger, p50", "ms"),
    Figure(
        "rescue",
        "rescuer_wait_p50",
        "rescue: burst job's wait, {nodes} nodes, {burst} jobs (simulated), p50",
        "s",
    ),
    Figure("rescue", "rescuer_replay_s", "rescue: the replay's wall time", "s"),
    Figure("store", "creates_per_s", "store: durable creates, 64 callers", "/s", higher=True),
    Figure("store", "list_p50", "store: list of 10,000 p50", "ms"),
    Figure("store", "watch_p99", "store: watch delivery to 100 watchers p99", "ms"),
    Figure("fieldmanager", "label_patch_us", "managedFields of a label PATCH", "µs"),
    Figure("fieldmanager", "create_us", "managedFields of a pod create", "µs"),
    Figure("dashboard", "render_p50", "dashboard: {pods} pods page → rows drawn p50", "ms"),
    Figure("dashboard", "rss_peak", "dashboard: RSS peak", "MiB"),
)

# -- pure: statistics, verdicts, comparison, rendering --------------------------------------------


@dataclass(frozen=True)
class Stat:
    """A figure over its runs: the median and the spread, of ``runs`` that gave it."""

    median: float
    low: float
    high: float
    runs: int


@dataclass(frozen=True)
class Run:
    """One run of one benchmark: its figures, or why it gave none."""

    figures: Mapping[str, float] | None
    error: str = ""
    seconds: float = 0.0


def summarize(values: Iterable[float]) -> Stat | None:
    """Median and min-max of the values that are numbers (NaN: a run that could not measure
    it); None when there are none."""
    present = [v for v in values if isinstance(v, int | float) and not math.isnan(v)]
    if not present:
        return None
    return Stat(statistics.median(present), min(present), max(present), len(present))


def stat_of(runs: Sequence[Run], key: str) -> Stat | None:
    return summarize(r.figures[key] for r in runs if r.figures is not None and key in r.figures)


def first_error(runs: Sequence[Run]) -> str:
    return next((r.error for r in runs if r.error), "")


def number(value: float) -> str:
    """Three significant digits at most, thousands separated: 0.84, 12.3, 456, 2,048."""
    if value != value:
        return "-"
    magnitude = abs(value)
    digits = 0 if magnitude >= 100 else 1 if magnitude >= 10 else 2
    return f"{value:,.{digits}f}"


def spread(stat: Stat | None) -> str:
    if stat is None:
        return "-"
    if stat.runs == 1:
        return f"{number(stat.median)} (1 run)"
    return f"{number(stat.median)} [{number(stat.low)}-{number(stat.high)}]"


@dataclass(frozen=True)
class Row:
    """A figure of a table: what ``--json`` saves and ``--compare`` reads back."""

    id: str
    label: str
    unit: str
    higher: bool
    target: str
    met: bool | None
    stat: Stat | None
    upstream: Stat | None
    error: str = ""
    attempts: int = 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            k: v for k, v in self.__dict__.items() if k not in ("stat", "upstream")
        }
        data["stat"] = None if self.stat is None else self.stat.__dict__
        data["upstream"] = None if self.upstream is None else self.upstream.__dict__
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Row:
        return cls(
            **{k: v for k, v in data.items() if k not in ("stat", "upstream")},
            stat=Stat(**data["stat"]) if data.get("stat") else None,
            upstream=Stat(**data["upstream"]) if data.get("upstream") else None,
        )


def rows(
    figures: Sequence[Figure],
    runs: Mapping[str, Sequence[Run]],
    arguments: Mapping[str, Mapping[str, str]],
) -> list[Row]:
    """The table's rows from each benchmark's runs (``runs`` by benchmark name); a figure
    whose benchmark was not run is left out."""
    table = []
    for figure in figures:
        if figure.benchmark not in runs:
            continue
        mine = runs[figure.benchmark]
        args = arguments.get(figure.benchmark, {})
        stat = stat_of(mine, figure.key)
        upstream = None
        if figure.upstream is not None and figure.upstream[0] in runs:
            upstream = stat_of(runs[figure.upstream[0]], figure.upstream[1])
        met = None
        if figure.target is not None and stat is not None:
            met = figure.target.met(stat.median, args)
        table.append(
            Row(
                id=figure.id,
                label=figure.label.format_map(Sizes(args)),
                unit=figure.unit,
                higher=figure.higher,
                target="" if figure.target is None else figure.target.describe(figure.unit, args),
                met=met,
                stat=stat,
                upstream=upstream,
                error=first_error(mine) or ("" if stat is not None else "no such figure"),
                attempts=len(mine),
            )
        )
    return table


class Sizes(dict[str, str]):
    """A benchmark's arguments for a label; one it was not given shows as its name."""

    def __missing__(self, key: str) -> str:
        return f"{{{key}}}"


def measured(row: Row) -> str:
    """This run's cell: the figure, how many runs gave it when some did not, or ERROR (the
    message is under the table)."""
    if row.stat is None:
        return "ERROR"
    if row.attempts > row.stat.runs:
        return f"{spread(row.stat)} ({row.stat.runs} of {row.attempts} runs)"
    return spread(row.stat)


def verdict(row: Row) -> str:
    if row.stat is None:
        return ""
    return "" if row.met is None else "met" if row.met else "missed"


MIN_CHANGE = 0.05
"""A change of the median smaller than this is never flagged, however tight the spreads
(memory figures repeat to within a percent)."""


def change(row: Row, saved: Row | None) -> tuple[str, str]:
    """(the change against the saved figure, a flag): ``REGRESSION`` when this run's whole
    spread is worse than the saved whole spread (and the median moved ``MIN_CHANGE`` or more),
    ``better`` when it is the other way round; within either spread, no flag (the runs do not
    tell the two apart). A figure of one run on either side has no spread: its flag ends in
    ``?``."""
    if saved is None or saved.stat is None or row.stat is None:
        return ("-", "new" if saved is None else "")
    old, new = saved.stat, row.stat
    if not old.median:
        return ("-", "")
    relative = (new.median - old.median) / old.median
    worse = new.high < old.low if row.higher else new.low > old.high
    better = new.low > old.high if row.higher else new.high < old.low
    flag = ""
    if abs(relative) >= MIN_CHANGE and (worse or better):
        flag = "REGRESSION" if worse else "better"
        if min(old.runs, new.runs) == 1:
            flag += "?"
    return (f"{relative:+.0%}", flag)


def render(table: Sequence[Row], saved: Mapping[str, Row] | None = None) -> str:
    """The table as text: figure, target, this run (median [min-max]), met/missed,
    upstream's figure; with ``saved``, also the saved figure, the change and its flag."""
    header = ["figure", "unit", "target", "this run", "met?", "upstream"]
    if saved is not None:
        header += ["saved", "change", "flag"]
    lines = []
    for row in table:
        cells = [
            row.label,
            row.unit,
            row.target,
            measured(row),
            verdict(row) if row.stat else "",
            spread(row.upstream) if row.upstream else "",
        ]
        if saved is not None:
            before = saved.get(row.id)
            cells += [spread(before.stat) if before else "-", *change(row, before)]
        lines.append(cells)
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    out = []
    for line in [header, ["-" * w for w in widths], *lines]:
        out.append("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    errors = dict.fromkeys(f"{row.id.split('.')[0]}: {row.error}" for row in table if row.error)
    if errors:
        out += ["", "errors:", *(f"  {error}" for error in errors)]
    return "\n".join(out)


def selected(names: str, benchmarks: Sequence[Benchmark], upstream: bool) -> list[Benchmark]:
    """The benchmarks ``--only`` names (all when empty), each with its upstream companion
    (``<name>-upstream``) unless ``upstream`` is off."""
    wanted = {n.strip() for n in names.split(",") if n.strip()} or {
        b.name for b in benchmarks if not b.upstream
    }
    known = {b.name for b in benchmarks}
    unknown = wanted - known
    if unknown:
        raise SystemExit(f"no benchmark {', '.join(sorted(unknown))}; known: {', '.join(known)}")
    if upstream:
        wanted |= {f"{n}-upstream" for n in wanted if f"{n}-upstream" in known}
    else:
        wanted = {n for n in wanted if not n.endswith("-upstream")}
    return [b for b in benchmarks if b.name in wanted]


# -- running -------------------------------------------------------------------------------------


def run_once(benchmark: Benchmark, quick: bool, logs: Path, attempt: int) -> Run:
    """One run of ``benchmark`` as its own process group; its output goes to a log file.
    On a timeout it gets SIGINT (its clean-up runs: ``inplace down``, the test bed taken
    down), then SIGKILL a minute later."""
    output = logs / f"{benchmark.name}-{attempt}.json"
    log = logs / f"{benchmark.name}-{attempt}.log"
    started = time.monotonic()
    timeout = benchmark.timeout if quick else 4 * 3600
    with open(log, "wb") as out:
        process = subprocess.Popen(
            benchmark.argv(quick, output),
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            stop(process)
            return Run(None, f"timed out after {timeout:.0f} s (log {log})", timeout)
        except KeyboardInterrupt:
            stop(process)
            raise
    seconds = time.monotonic() - started
    try:
        data = json.loads(output.read_text())
    except (OSError, ValueError):
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        last = lines[-1].strip() if lines else "no output"
        return Run(None, f"exit {process.returncode}: {last} (log {log})", seconds)
    if benchmark.side:
        data = data.get(benchmark.side, {})
    return Run({k: float(v) for k, v in data.items()}, "", seconds)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT to the benchmark's process group (its clean-up runs), SIGKILL after a minute."""
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def machine_load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--", "src", "bench") else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short sizes: under 5 minutes")
    parser.add_argument("--only", default="", help="benchmarks to run, comma-separated")
    parser.add_argument(
        "--runs",
        type=int,
        help=f"runs of every benchmark (default {RUNS}; with --quick, 1 of the slow ones "
        "without a target and of upstream's side)",
    )
    parser.add_argument("--no-upstream", action="store_true", help="no upstream column")
    parser.add_argument("--json", metavar="FILE", help="save the table to FILE")
    parser.add_argument("--compare", metavar="FILE", help="show the change against FILE")
    parser.add_argument("--logs", metavar="DIR", help="keep each run's output in DIR")
    args = parser.parse_args()
    chosen = selected(args.only, BENCHMARKS, upstream=not args.no_upstream)
    saved = None
    if args.compare:
        saved_table = json.loads(Path(args.compare).read_text())
        saved = {row["id"]: Row.from_json(row) for row in saved_table["rows"]}
    logs = Path(args.logs or tempfile.mkdtemp(prefix="inplace-bench-run-"))
    logs.mkdir(parents=True, exist_ok=True)
    load_before = machine_load()
    started = time.monotonic()
    runs: dict[str, list[Run]] = {b.name: [] for b in chosen}
    counts = {b.name: b.runs(args.quick, args.runs) for b in chosen}
    loads: list[float] = []
    for attempt in range(1, max(counts.values()) + 1):
        for benchmark in chosen:
            if attempt > counts[benchmark.name]:
                continue
            run = run_once(benchmark, args.quick, logs, attempt)
            runs[benchmark.name].append(run)
            loads.append(round(os.getloadavg()[0], 2))
            outcome = "ok" if run.figures is not None else run.error
            print(
                f"[{time.monotonic() - started:5.0f} s] {benchmark.name} run {attempt}/"
                f"{counts[benchmark.name]}: {run.seconds:.1f} s, {outcome}; "
                f"load {loads[-1]:.1f}",
                file=sys.stderr,
                flush=True,
            )
    elapsed = time.monotonic() - started
    arguments = {b.name: b.arguments(args.quick) for b in chosen}
    table = rows(FIGURES, runs, arguments)
    load_after = machine_load()
    print(
        f"\nbench/run.py{' --quick' if args.quick else ''} at {commit()}: median [min-max] of "
        f"each benchmark's runs ({', '.join(f'{n} {c}' for n, c in counts.items())}); "
        f"{elapsed:.0f} s; load average {load_before[0]:.1f} before, {max(loads):.1f} at most, "
        f"{load_after[0]:.1f} after ({os.cpu_count()} CPUs); logs in {logs}\n"
    )
    print(render(table, saved))
    if args.json:
        document = {
            "commit": commit(),
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "quick": args.quick,
            "runs": counts,
            "seconds": round(elapsed, 1),
            "cpus": os.cpu_count(),
            "load_average": {"before": load_before, "after": load_after, "runs": loads},
            "benchmarks": {
                b.name: {
                    "arguments": arguments[b.name],
                    "seconds": [round(r.seconds, 1) for r in runs[b.name]],
                }
                for b in chosen
            },
            "rows": [row.to_json() for row in table],
        }
        Path(args.json).write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
