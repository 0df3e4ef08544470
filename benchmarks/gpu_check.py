"""The GAN benchmark under float32 / mixed_bfloat16 and XLA off / on: one JSON.

Run through ``benchmarks/gpu_check.sh`` (which sets up the environment first), or
directly: ``python -m benchmarks.gpu_check [--data PATH] [--allow-cpu] [--quick]
[--variant PRECISION:XLA ...]`` (default: all four variants).

Each variant runs ``python -m benchmarks --gan-only`` in its own process (a dtype
policy and XLA's compiled kernels stay with the process that made them, and each
variant starts with the whole GPU memory). The JSON holds every variant's trainer
and bare-loop rates, generation rows/s and the device, the best variant, and its
rows/s against the newest CPU figure in ``benchmarks/results/`` (target: 10x).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = (
    ("float32", False),
    ("float32", True),
    ("mixed_bfloat16", False),
    ("mixed_bfloat16", True),
)
TARGET_SPEEDUP = 10.0


def cpu_baseline(results: Path = RESULTS) -> dict | None:
    """The newest full benchmark measured on a CPU (``<date>.json``)."""
    for path in sorted(results.glob("????-??-??.json"), reverse=True):
        data = json.loads(path.read_text())
        rows = data.get("trainer", {}).get("trainer_rows_per_s")
        if (
            data.get("device", {}).get("kind") == "CPU"
            and rows
            and not data.get("quick")
        ):
            return {
                "file": path.name,
                "trainer_rows_per_s": rows,
                "generate_rows_per_s": data.get("generate_rows_per_s"),
                "cpu_cores": data["device"].get("cpu_cores"),
            }
    return None


def run_variant(precision: str, jit: bool, args: argparse.Namespace, out: Path) -> dict:
    command = [
        sys.executable, "-m", "benchmarks", "--gan-only", "--data", args.data,
        "--precision", precision, "--batch-size", str(args.batch_size),
        "--out", str(out),
    ]  # fmt: skip
    if jit:
        command.append("--jit-compile")
    if args.quick:
        command.append("--quick")
    started = time.perf_counter()
    proc = subprocess.run(
        command, capture_output=True, text=True, timeout=args.variant_timeout
    )
    wall = round(time.perf_counter() - started, 1)
    if proc.returncode:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        return {"precision": precision, "jit_compile": jit, "error": tail[0]}
    data = json.loads(out.read_text())
    return {
        "precision": precision,
        "jit_compile": jit,
        "wall_s": wall,
        "trainer_vs_bare_ratio": data["trainer_vs_bare_ratio"],
        **data["trainer"],
        "generate_rows_per_s": data["generate_rows_per_s"],
        "device": data["device"],
        "data": data["data"],
    }


def _variant(text: str) -> tuple[str, bool]:
    precision, _, jit = text.partition(":")
    if precision not in ("float32", "mixed_bfloat16") or jit not in ("0", "1"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected float32 or mixed_bfloat16, ':', and 0 or 1 (XLA)"
        )
    return precision, jit == "1"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/raw/creditcard.csv")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument(
        "--allow-cpu",
        action="store_true",
        help="run without a GPU (to check the script; the figures are CPU's)",
    )
    parser.add_argument("--quick", action="store_true", help="see benchmarks --quick")
    parser.add_argument("--variant-timeout", type=int, default=240)
    parser.add_argument(
        "--variant",
        action="append",
        type=_variant,
        metavar="PRECISION:XLA",
        help="only these variants, e.g. float32:0 or mixed_bfloat16:1 (repeatable; "
        "default: all four)",
    )
    parser.add_argument("--out", help="default: benchmarks/results/gpu-<date>.json")
    args = parser.parse_args(argv)
    if not Path(args.data).is_file():
        sys.exit(f"gpu_check: {args.data}: no such file")
    started = time.perf_counter()
    result: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds")}
    variants = []
    with tempfile.TemporaryDirectory() as tmp:
        for precision, jit in args.variant or VARIANTS:
            out = Path(tmp) / f"{precision}-{int(jit)}.json"
            variants.append(run_variant(precision, jit, args, out))
            print(json.dumps(variants[-1]), file=sys.stderr, flush=True)
    ok = [v for v in variants if "error" not in v]
    if not ok:
        sys.exit(f"gpu_check: every variant failed: {variants[0]['error']}")
    kind = ok[0]["device"]["kind"]
    if kind != "GPU" and not args.allow_cpu:
        sys.exit("gpu_check: TensorFlow sees no GPU (--allow-cpu to run anyway)")
    result["device"] = ok[0]["device"]
    result["data"] = ok[0]["data"]
    if args.quick:
        result["quick"] = True
    result["variants"] = [
        {k: v for k, v in variant.items() if k not in ("device", "data")}
        for variant in variants
    ]
    best = max(ok, key=lambda v: v["trainer_rows_per_s"])
    result["best"] = {k: best[k] for k in ("precision", "jit_compile")}
    result["trainer_rows_per_s"] = best["trainer_rows_per_s"]
    result["generate_rows_per_s"] = max(v["generate_rows_per_s"] for v in ok)
    baseline = cpu_baseline()
    result["cpu_baseline"] = baseline
    if baseline:
        speedup = best["trainer_rows_per_s"] / baseline["trainer_rows_per_s"]
        result["trainer_speedup_vs_cpu"] = round(speedup, 2)
        result["target_speedup"] = TARGET_SPEEDUP
        result["target_met"] = speedup >= TARGET_SPEEDUP
    result["wall_s"] = round(time.perf_counter() - started, 1)
    if args.out:
        out = Path(args.out)
    else:
        suffix = "" if kind == "GPU" else "-cpu"
        out = RESULTS / f"gpu-{result['date'][:10]}{suffix}.json"
    from pipeline.core.artifacts import save_json

    save_json(out, result)
    print(json.dumps(result, indent=2, sort_keys=True))
    return result


if __name__ == "__main__":
    main()
