"""bench/run.py: the table's figures, medians, verdicts and comparison (pure, fast), and one
end-to-end run of its fastest benchmark."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_run", REPO / "bench" / "run.py")
assert _spec is not None and _spec.loader is not None
bench_run = importlib.util.module_from_spec(_spec)
sys.modules["bench_run"] = bench_run
_spec.loader.exec_module(bench_run)

Run, Stat, Figure, Target = bench_run.Run, bench_run.Stat, bench_run.Figure, bench_run.Target


def test_summarize_is_the_median_and_the_spread_of_the_numbers() -> None:
    assert bench_run.summarize([3.0, 1.0, 2.0]) == Stat(2.0, 1.0, 3.0, 3)
    assert bench_run.summarize([4.0, 2.0]) == Stat(3.0, 2.0, 4.0, 2)
    assert bench_run.summarize([5.0, math.nan]) == Stat(5.0, 5.0, 5.0, 1)
    assert bench_run.summarize([]) is None
    assert bench_run.summarize([math.nan]) is None


@pytest.mark.parametrize(
    ("target", "arguments", "measured", "met", "described"),
    [
        (Target("<=", 10), {}, 10.0, True, "≤ 10.0 ms"),
        (Target("<=", 10), {}, 10.5, False, "≤ 10.0 ms"),
        (Target(">=", 2000), {}, 1999.0, False, "≥ 2,000 ms"),
        (Target("<=", 75, per=10_000), {"pods": "2000"}, 15.0, True, "≤ 15.0 ms (75.0 per 10,000)"),
        (
            Target("<=", 75, per=10_000),
            {"pods": "2000"},
            16.0,
            False,
            "≤ 15.0 ms (75.0 per 10,000)",
        ),
        (Target("<=", 75, per=10_000), {"pods": "10000"}, 70.0, True, "≤ 75.0 ms"),
    ],
)
def test_a_target_scales_with_the_size_run_when_it_is_per_object(
    target: object, arguments: dict[str, str], measured: float, met: bool, described: str
) -> None:
    assert target.met(measured, arguments) is met  # type: ignore[attr-defined]
    assert target.describe("ms", arguments) == described  # type: ignore[attr-defined]


FIGURES = (
    Figure(
        "api",
        "patch_p99",
        "PATCH p99, {pods} pods",
        "ms",
        Target("<=", 10),
        upstream=("up", "patch_p99"),
    ),
    Figure("api", "creates", "creates", "/s", higher=True),
    Figure("broken", "x", "never measured", "ms", Target("<=", 1)),
    Figure("absent", "y", "not run", "ms"),
)


def test_rows_take_the_median_of_the_runs_that_gave_figures() -> None:
    runs = {
        "api": [
            Run({"patch_p99": 12.0, "creates": 900.0}),
            Run(None, "exit 1: Traceback"),
            Run({"patch_p99": 8.0, "creates": 1100.0}),
        ],
        "up": [Run({"patch_p99": 300.0})],
        "broken": [Run(None, "timed out after 150 s"), Run(None, "exit 1: boom")],
    }
    table = bench_run.rows(FIGURES, runs, {"api": {"pods": "2000"}})
    assert [row.id for row in table] == ["api.patch_p99", "api.creates", "broken.x"]
    patch, creates, broken = table
    assert patch.label == "PATCH p99, 2000 pods"
    assert patch.stat == Stat(10.0, 8.0, 12.0, 2)
    assert patch.upstream == Stat(300.0, 300.0, 300.0, 1)
    assert patch.met is True and bench_run.verdict(patch) == "met"
    assert bench_run.measured(patch) == "10.0 [8.00-12.0] (2 of 3 runs)"
    assert patch.error == "exit 1: Traceback"
    assert creates.met is None and bench_run.verdict(creates) == ""
    assert broken.stat is None and broken.error == "timed out after 150 s"
    assert bench_run.verdict(broken) == "" and bench_run.measured(broken) == "ERROR"


def test_a_label_keeps_a_size_the_benchmark_was_not_given() -> None:
    (row,) = bench_run.rows(FIGURES[:1], {"api": [Run({"patch_p99": 1.0})]}, {})
    assert row.label == "PATCH p99, {pods} pods"


def _row(stat: Stat, higher: bool = False) -> object:
    return bench_run.Row("f", "f", "ms", higher, "", None, stat, None)


@pytest.mark.parametrize(
    ("saved", "now", "higher", "expected"),
    [
        (Stat(10, 9, 11, 3), Stat(10.5, 10, 12, 3), False, ("+5%", "")),
        (Stat(100, 99, 100, 3), Stat(102, 101, 103, 3), False, ("+2%", "")),
        (Stat(10, 10, 10, 1), Stat(12, 12, 12, 1), False, ("+20%", "REGRESSION?")),
        (Stat(10, 9, 11, 3), Stat(15, 12, 16, 3), False, ("+50%", "REGRESSION")),
        (Stat(10, 9, 11, 3), Stat(5, 4, 6, 3), False, ("-50%", "better")),
        (Stat(1000, 900, 1100, 3), Stat(500, 400, 600, 3), True, ("-50%", "REGRESSION")),
        (Stat(1000, 900, 1100, 3), Stat(1500, 1200, 1600, 3), True, ("+50%", "better")),
    ],
)
def test_a_change_is_flagged_only_beyond_both_spreads(
    saved: Stat, now: Stat, higher: bool, expected: tuple[str, str]
) -> None:
    assert bench_run.change(_row(now, higher), _row(saved, higher)) == expected


def test_a_figure_missing_from_the_saved_table_is_new() -> None:
    assert bench_run.change(_row(Stat(1, 1, 1, 1)), None) == ("-", "new")


def test_a_row_survives_the_saved_json() -> None:
    runs = {"api": [Run({"patch_p99": 12.0})], "up": [Run({"patch_p99": 3.0})]}
    row = bench_run.rows(FIGURES[:1], runs, {"api": {"pods": "5"}})[0]
    assert bench_run.Row.from_json(json.loads(json.dumps(row.to_json()))) == row


def test_render_shows_the_verdict_the_upstream_column_and_the_comparison() -> None:
    runs = {
        "api": [Run({"patch_p99": 12.0, "creates": 900.0}), Run({"patch_p99": 14.0})],
        "up": [Run({"patch_p99": 300.0})],
        "broken": [Run(None, "exit 1: boom")],
    }
    table = bench_run.rows(FIGURES, runs, {"api": {"pods": "2000"}})
    text = bench_run.render(table)
    assert "13.0 [12.0-14.0]" in text and "missed" in text and "300 (1 run)" in text
    assert "ERROR" in text and "errors:\n  broken: exit 1: boom" in text
    saved = {row.id: row for row in bench_run.rows(FIGURES, {"api": [Run({"patch_p99": 1.0})]}, {})}
    compared = bench_run.render(table, saved)
    assert "REGRESSION" in compared and "new" in compared


def test_only_selects_benchmarks_with_their_upstream_companions() -> None:
    names = [b.name for b in bench_run.selected("api,store", bench_run.BENCHMARKS, upstream=True)]
    assert sorted(names) == ["api", "api-upstream", "store"]
    names = [b.name for b in bench_run.selected("api", bench_run.BENCHMARKS, upstream=False)]
    assert names == ["api"]
    every = bench_run.selected("", bench_run.BENCHMARKS, upstream=True)
    assert len(every) == len(bench_run.BENCHMARKS)
    with pytest.raises(SystemExit):
        bench_run.selected("nonesuch", bench_run.BENCHMARKS, upstream=True)


def test_argv_passes_sizes_flags_the_side_and_the_json_file() -> None:
    benchmark = bench_run.Benchmark("x", "x.py", {"quick": "", "sim_nodes": "5"}, side="upstream")
    argv = benchmark.argv(True, Path("/tmp/out.json"))
    assert argv[2:] == [
        "--quick",
        "--sim-nodes",
        "5",
        "--sides",
        "upstream",
        "--json",
        "/tmp/out.json",
    ]
    assert benchmark.argv(False, Path("o"))[2:] == ["--sides", "upstream", "--json", "o"]


def test_the_table_names_only_benchmarks_that_exist_and_writes_json() -> None:
    by_name = {b.name: b for b in bench_run.BENCHMARKS}
    for benchmark in bench_run.BENCHMARKS:
        script = (REPO / "bench" / benchmark.script).read_text()
        assert '"--json"' in script, benchmark.script
        if benchmark.side:
            assert '"--sides"' in script, benchmark.script
    for figure in bench_run.FIGURES:
        assert figure.benchmark in by_name, figure.id
        if figure.upstream:
            assert figure.upstream[0] in by_name, figure.id
        for quick in (True, False):
            sizes = bench_run.Sizes(by_name[figure.benchmark].arguments(quick))
            assert "{" not in figure.label.format_map(sizes), (figure.id, quick)
    assert len({f.id for f in bench_run.FIGURES}) == len(bench_run.FIGURES)


def test_the_fastest_benchmark_end_to_end(tmp_path: Path) -> None:
    saved = tmp_path / "table.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "run.py"),
            "--quick",
            "--only",
            "fieldmanager",
            "--json",
            str(saved),
            "--logs",
            str(tmp_path / "logs"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "managedFields of a label PATCH" in done.stdout
    document = json.loads(saved.read_text())
    assert document["runs"] == {"fieldmanager": 3} and document["quick"] is True
    rows = {row["id"]: row for row in document["rows"]}
    assert rows["fieldmanager.label_patch_us"]["stat"]["runs"] == 3
    compared = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "run.py"),
            "--quick",
            "--only",
            "fieldmanager",
            "--runs",
            "1",
            "--compare",
            str(saved),
            "--logs",
            str(tmp_path / "logs2"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "saved" in compared.stdout and "change" in compared.stdout


def test_quick_gives_the_slow_benchmarks_one_run_unless_runs_is_given() -> None:
    slow = bench_run.Benchmark("x", "x.py", {}, quick_runs=1)
    plain = bench_run.Benchmark("y", "y.py", {})
    assert (slow.runs(True, None), plain.runs(True, None)) == (1, bench_run.RUNS)
    assert (slow.runs(False, None), slow.runs(True, 3), plain.runs(True, 5)) == (3, 3, 5)
