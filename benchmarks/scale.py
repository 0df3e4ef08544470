"""The cost curve: ``python -m benchmarks.scale --rows 350000 1400000 5600000``.

For each size, the demo transactions table (``fraudaug demo-data --kind
transactions --rows N``: 90 days, about 2 % fraud; generated once into
``--work`` and reused), its schema (``fraudaug schema`` with the label, time,
amount and entity named), then ``fraudaug run --split-mode rolling`` with each
``--profile`` in a fresh process, one after another (never two at once: the
machine's cores are shared). Per run: wall seconds, the process's peak resident
memory (``os.wait4``), seconds per million rows, the training rows each fold
kept (``sampling``), and where the time and memory went stage by stage (the
run's ``metrics.json`` → ``resources``). Prints one JSON object and writes it to
``benchmarks/results/scale-DATE.json``, and the cost curve beside it as an SVG
chart (``--chart-of FILE.json`` draws it again from a result).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import write_result

FRAUDAUG = [sys.executable, "-m", "flows"]


def _table(work: Path, rows: int) -> tuple[Path, Path]:
    data = work / f"transactions-{rows}.parquet"
    schema = work / f"transactions-{rows}.schema.json"
    if not data.is_file():
        subprocess.run(
            [*FRAUDAUG, "demo-data", "--kind", "transactions", "--rows", str(rows),
             "--out", str(data)],
            check=True, capture_output=True,
        )  # fmt: skip
    if not schema.is_file():
        subprocess.run(
            [*FRAUDAUG, "schema", str(data), "--label", "is_fraud", "--time",
             "tx_datetime", "--amount", "amount", "--entity", "customer_id",
             "--out", str(schema)],
            check=True, capture_output=True,
        )  # fmt: skip
    return data, schema


def _run(data: Path, schema: Path, profile: str, out: Path, extra: list[str]) -> dict:
    """One ``fraudaug run`` in its own process: wall, peak RSS, its metrics."""
    out.mkdir(parents=True, exist_ok=True)
    log = out / "run.log"
    start = time.perf_counter()
    with open(log, "w") as sink:
        process = subprocess.Popen(
            [*FRAUDAUG, "run", "--data", str(data), "--schema", str(schema),
             "--profile", profile, "--split-mode", "rolling",
             "--reports", str(out / "reports"),
             "--tracking-uri", f"sqlite:///{out / 'mlflow.db'}",
             "--set", f"data.cache_dir={out / 'cache'}", *extra],
            stdout=sink, stderr=subprocess.STDOUT, cwd=out,
        )  # fmt: skip
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    result = {
        "profile": profile,
        "exit_code": code,
        "wall_seconds": round(wall, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
    }
    metrics_path = out / "reports" / "latest" / "metrics.json"
    if code in (0, 3) and metrics_path.is_file():
        metrics = json.loads(metrics_path.read_text())
        result["status"] = metrics.get("status")
        result["failures"] = metrics.get("failures")
        result["sampling"] = metrics.get("sampling")
        result["resources"] = metrics.get("resources")
        result["summary"] = {
            s["method"]: {
                k: round(s[k], 4)
                for k in ("auprc_mean", "precision_top_k_mean")
                if s.get(k) is not None
            }
            for s in metrics["summary"]
        }
    else:
        result["log_tail"] = log.read_text()[-3000:]
    return result


def chart(result: dict) -> str:
    """The cost curve of a result: seconds per million rows and peak resident
    memory against the table's rows, a line per profile (a standalone SVG)."""
    from pipeline.report import charts

    profiles = sorted({r["profile"] for r in result["runs"]})
    colour = charts.colours(profiles)
    done = [r for r in result["runs"] if r["exit_code"] in (0, 3)]

    def series(value):
        lines = []
        for profile in profiles:
            runs = sorted(
                (r for r in done if r["profile"] == profile), key=lambda r: r["rows"]
            )
            lines.append({
                "name": profile,
                "x": [r["rows"] / 1e6 for r in runs],
                "y": [value(r) for r in runs],
                "colour": colour[profile],
            })  # fmt: skip
        return lines

    when = result["measured_at"][:10]
    cores = result["cpu_count"]
    panels = (
        (f"Minutes per million rows ({cores} cores, {when})", "minutes a million rows",
         lambda r: r["seconds_per_million_rows"] / 60),
        ("Peak resident memory of the run", "GiB", lambda r: r["peak_rss_mb"] / 1024),
    )  # fmt: skip
    sizes = sorted({r["rows"] / 1e6 for r in done})
    drawn = []
    for title, y_label, value in panels:
        lines = series(value)
        top = max((y for line in lines for y in line["y"]), default=1.0)
        drawn.append(
            charts.line_chart(
                lines,
                title=title,
                x_label="rows of the table (millions)",
                y_label=y_label,
                y_range=(0.0, top * 1.15),
                x_ticks=[(x, f"{x:.1f}") for x in sizes],
            )
        )
    return charts.standalone(*drawn)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[350_000, 1_400_000])
    parser.add_argument("--profiles", nargs="+", default=["smoke"])
    parser.add_argument("--work", default="benchmarks/scale-work")
    parser.add_argument(
        "--set", action="append", default=[], help="SECTION.KEY=VALUE for every run"
    )
    parser.add_argument(
        "--out", default=None, help="JSON file (default: results/scale-DATE.json)"
    )
    parser.add_argument(
        "--chart-of", default=None, help="draw the chart of this result JSON and stop"
    )
    args = parser.parse_args(argv)
    if args.chart_of:
        result = json.loads(Path(args.chart_of).read_text())
        _write_chart(result, Path(args.chart_of))
        return result
    work = Path(args.work).absolute()
    work.mkdir(parents=True, exist_ok=True)
    extra = [x for item in args.set for x in ("--set", item)]
    import pyarrow.parquet as pq

    runs = []
    for rows in args.rows:
        data, schema = _table(work, rows)
        meta = pq.ParquetFile(data).metadata
        for profile in args.profiles:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            folder = work / f"run-{rows}-{profile}-{stamp}"
            result = _run(data, schema, profile, folder, extra)
            result["rows"] = meta.num_rows
            result["columns"] = meta.num_columns
            result["seconds_per_million_rows"] = round(
                result["wall_seconds"] / (result["rows"] / 1e6), 1
            )
            runs.append(result)
            print(json.dumps({k: v for k, v in result.items() if k != "resources"}))
    out = {
        "runs": runs,
        "set": args.set,
        "cpu_count": len(os.sched_getaffinity(0)),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _write_chart(out, write_result(out, "scale", args.out))
    return out


def _write_chart(result: dict, json_path: Path) -> None:
    svg = json_path.with_suffix(".svg")
    svg.write_text(chart(result))
    print(f"chart: {svg}", file=sys.stderr)


if __name__ == "__main__":
    main()
