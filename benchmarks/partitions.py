"""Reading a partitioned source: ``python -m benchmarks.partitions DATA --schema FILE``.

Writes the rows of ``DATA`` (a multi-day table with a time column, e.g.
``fraudaug demo-data --kind transactions --rows 350000``) as one Parquet file per
day, then ingests, each in a fresh subprocess with an empty cache (as a first
run does): the one file, the folder of daily partitions, the folder again (the
cache hit) and the folder after one more day arrived (one partition parsed).
Prints one JSON object: wall seconds and peak RSS of each, the folder/file time
ratio (the target is <= 1.2), and writes it to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

_INGEST = (
    "import sys, json, resource, time\n"
    "from pipeline.schema import load_schema\n"
    "from pipeline.stages import stage_ingest\n"
    "t = time.perf_counter()\n"
    "r = stage_ingest(sys.argv[1], sys.argv[2], load_schema(sys.argv[3]))\n"
    "print(json.dumps({'seconds': time.perf_counter() - t, 'rows': r['rows'],\n"
    "  'cached': r['cached'], 'peak_rss_mb':\n"
    "  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
)


def _ingest(source: str | Path, cache: Path, schema: str) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _INGEST, str(source), str(cache), schema],
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_seconds"] = time.perf_counter() - start
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a multi-day table (.parquet or .csv)")
    parser.add_argument("--schema", required=True, help="its schema file")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)

    import pandas as pd

    from pipeline.ingest import read_transactions
    from pipeline.schema import load_schema

    schema = load_schema(args.schema)
    frame, _ = read_transactions(args.data, schema)
    days = pd.to_datetime(frame[schema.time]).dt.strftime("%Y-%m-%d")
    result: dict = {"data": str(args.data), "rows": len(frame)}
    with tempfile.TemporaryDirectory(prefix="fraudaug-bench-") as tmp:
        tmp = Path(tmp)
        one = tmp / "one.parquet"
        frame.to_parquet(one, index=False)
        folder = tmp / "daily"
        groups = list(frame.groupby(days, sort=True))
        for day, rows in groups[:-1]:
            (folder / f"date={day}").mkdir(parents=True)
            rows.to_parquet(folder / f"date={day}" / "part-0.parquet", index=False)
        result["partitions"] = len(groups) - 1
        del frame
        runs: dict[str, list[dict]] = {"file": [], "folder": []}
        for i in range(args.repeats):  # alternate, each with an empty cache
            runs["file"].append(_ingest(one, tmp / f"cache-file-{i}", args.schema))
            runs["folder"].append(
                _ingest(folder, tmp / f"cache-folder-{i}", args.schema)
            )
        cache = tmp / "cache-folder-0"
        result["folder_cached"] = _ingest(folder, cache, args.schema)
        day, rows = groups[-1]
        (folder / f"date={day}").mkdir(parents=True)
        rows.to_parquet(folder / f"date={day}" / "part-0.parquet", index=False)
        result["folder_one_new_day"] = _ingest(folder, cache, args.schema)
    result["file"] = runs["file"]
    result["folder"] = runs["folder"]
    best = {k: min(r["seconds"] for r in v) for k, v in runs.items()}
    result["folder_over_file"] = round(best["folder"] / best["file"], 3)
    result["peak_rss_mb"] = {
        k: max(r["peak_rss_mb"] for r in v) for k, v in runs.items()
    }
    result["cpu_count"] = len(os.sched_getaffinity(0))
    result["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"partitions-{result['measured_at'][:10]}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
