"""The benchmark suite: ``python -m benchmarks`` (or ``make bench``).

Measures, on the real data (``data/raw/creditcard.csv``; ``fraudaug fetch-data``):

- ``trainer_vs_bare_ratio``: the project's GAN trainer (Keras ``fit`` with the
  non-finite guard, trackers and the stateless batch stream) against a minimal
  ``tf.function`` critic/generator step with the same networks and penalty, in the
  same process, batch 512, on split 0's training frauds (the reference runs all its
  steps inside one ``tf.function``). Rates come from the
  difference of two run lengths, so fixed start-up costs cancel.
- ``generate_rows_per_s``: 1,000,000 generated rows (the generator alone).
- ``commands``: ``fraudaug generate`` to Parquet at 1M and 10M rows and ``fraudaug
  score`` on the full file repeated to 10M rows (CSV), each as a subprocess: rows/s
  of the whole command and of its streaming loop alone, and peak RSS;
  ``refusal_generate_n0_s``, how fast ``generate -n 0`` says no.
- ``ingest_csv_s`` / ``ingest_cached_s``: the 150 MB CSV validated and cached, then
  the cache hit (sha256 of the file and of the cached Parquet).
- ``detector_fit_s``: per-method XGBoost fit seconds in the ``default`` run.
- ``default_profile_wall_s`` / ``default_profile_peak_rss_mb``: ``fraudaug run
  --profile default`` end to end in a subprocess, with an empty stage cache.
- ``scaling``: detector fit seconds at 10k, 50k and 284k rows, and seconds per split.
- ``device``.

Prints one JSON object and writes it to ``benchmarks/results/<date>.json``.
``--skip-run`` leaves out the (9-minute) ``default`` run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
BATCH = 512


def _split0(data_path: str, cache: Path, gan: dict | None = None):
    from pipeline.core.config import run_seeds
    from pipeline.features.rows import SplitInputs
    from pipeline.run.plan import load_config
    from pipeline.run.prepare import stage_ingest, stage_preprocess

    config = load_config("default", overrides={"gan": gan} if gan else None)
    ingested = stage_ingest(data_path, cache)
    prepared = stage_preprocess(
        ingested["frame_path"], cache / "run", config, run_seeds(0, 3)["split"], cache
    )
    data = SplitInputs(
        ingested["frame_path"],
        prepared["splits_path"],
        prepared["transformer_paths"][0],
        0,
    ).load()
    return config, ingested, data, prepared["transformer_paths"][0]


def _rate(run, short: int, long: int, repeats: int, tries: int = 3) -> float:
    """Steps per second from ``run(n)`` timings: (long - short) / (t_long - t_short),
    median over repeats. A pair whose long run was not the slower one (set-up noise,
    e.g. XLA compiling, swamped the extra steps on a loaded machine) measured
    nothing: it is taken again, up to ``tries`` times."""
    rates = []
    for _ in range(repeats):
        for _ in range(tries):
            t0 = time.perf_counter()
            run(short)
            t1 = time.perf_counter()
            run(long)
            t2 = time.perf_counter()
            extra = (t2 - t1) - (t1 - t0)
            if extra > 0:
                rates.append((long - short) / extra)
                break
        else:
            raise RuntimeError(
                f"{tries} timing pairs of {short} and {long} steps: the longer run was "
                "never the slower; the machine is too noisy to measure"
            )
    return float(np.median(rates))


def bench_trainer(
    config, X, y, repeats: int, batch_size: int = BATCH, lengths=(60, 260)
) -> dict:
    """Trainer and bare reference at ``batch_size``, both under ``config.gan``'s
    ``precision`` and ``jit_compile``."""
    from pipeline.core.backend import load_tensorflow

    tf = load_tensorflow()
    import keras

    from pipeline.gan.networks import build_critic, build_generator
    from pipeline.gan.penalty import gradient_penalty
    from pipeline.gan.trainer import train_cwgan_gp

    gan = config.gan.model_copy(update={"batch_size": batch_size, "eval_every": 10**6})
    rows_per_step = gan.batch_size * gan.n_critic

    def trainer(steps: int) -> None:
        train_cwgan_gp(X, y, gan.model_copy(update={"steps": steps}), random_state=0)

    frauds = tf.constant(X[y == 1], dtype="float32")
    n_features = X.shape[1]
    generator = build_generator(
        n_features,
        latent_dim=gan.latent_dim,
        widths=gan.generator_widths,
        dtype=gan.precision,
    )
    critic = build_critic(n_features, widths=gan.critic_widths, dtype=gan.precision)
    g_opt = keras.optimizers.Adam(gan.learning_rate, gan.beta_1, gan.beta_2)
    c_opt = keras.optimizers.Adam(gan.learning_rate, gan.beta_1, gan.beta_2)
    condition = tf.one_hot(tf.ones(gan.batch_size, "int32"), 2)

    def bare_step():
        for _ in range(gan.n_critic):
            idx = tf.random.uniform((gan.batch_size,), 0, tf.shape(frauds)[0], "int32")
            real = tf.gather(frauds, idx)
            with tf.GradientTape() as tape:
                z = tf.random.normal((gan.batch_size, gan.latent_dim))
                fake = generator([z, condition], training=True)
                w = tf.reduce_mean(
                    critic([real, condition], training=True)
                ) - tf.reduce_mean(critic([fake, condition], training=True))
                gp = gradient_penalty(critic, real, fake, condition)
                loss = -w + gan.gp_weight * gp
            grads = tape.gradient(loss, critic.trainable_weights)
            c_opt.apply_gradients(zip(grads, critic.trainable_weights, strict=True))
        with tf.GradientTape() as tape:
            z = tf.random.normal((gan.batch_size, gan.latent_dim))
            loss = -tf.reduce_mean(critic([generator([z, condition]), condition]))
        grads = tape.gradient(loss, generator.trainable_weights)
        g_opt.apply_gradients(zip(grads, generator.trainable_weights, strict=True))

    @tf.function(jit_compile=gan.jit_compile)
    def run_bare(n):
        # The whole loop in one graph: the reference at its fastest.
        for _ in tf.range(n):
            bare_step()

    def bare(steps: int) -> None:
        run_bare(tf.constant(steps))

    bare(5)  # trace once
    trainer(2)  # the process's first training pays one-time costs: not in a timing
    trainer_steps = _rate(trainer, *lengths, repeats)
    bare_steps = _rate(bare, *lengths, repeats)
    return {
        "batch_size": gan.batch_size,
        "n_critic": gan.n_critic,
        "precision": gan.precision,
        "jit_compile": gan.jit_compile,
        "trainer_steps_per_s": round(trainer_steps, 2),
        "trainer_rows_per_s": round(trainer_steps * rows_per_step),
        "bare_steps_per_s": round(bare_steps, 2),
        "bare_rows_per_s": round(bare_steps * rows_per_step),
        "trainer_vs_bare_ratio": round(trainer_steps / bare_steps, 3),
    }


def bench_generate(config, X, y, n_rows: int = 1_000_000) -> dict:
    from pipeline.gan.trained import generate_rows
    from pipeline.gan.trainer import train_cwgan_gp

    trained = train_cwgan_gp(
        X, y, config.gan.model_copy(update={"steps": 20}), random_state=0
    )
    generate_rows(trained.generator, 10_000, latent_dim=trained.latent_dim)  # warm up
    times = []
    for seed in range(3):
        t0 = time.perf_counter()
        rows = generate_rows(
            trained.generator,
            n_rows,
            latent_dim=trained.latent_dim,
            random_state=seed,
        )
        times.append(time.perf_counter() - t0)
    assert rows.shape[0] == n_rows
    return {"generate_rows_per_s": round(n_rows / float(np.median(times)))}


def _command(argv: list[str], **kwargs) -> tuple[float, int, int, str]:
    """Run ``fraudaug ARGV``: wall seconds, peak RSS in MB (GNU time), exit code,
    stderr."""
    fraudaug = str(Path(sys.executable).parent / "fraudaug")
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", rss.name, fraudaug, *argv],
            capture_output=True,
            text=True,
            **kwargs,
        )
        wall = time.perf_counter() - t0
        peak_mb = round(int(rss.read().split()[-1]) / 1024)
    return wall, peak_mb, proc.returncode, proc.stderr


def _streaming_rate(stderr: str) -> int | None:
    """Rows/s of the streaming loop alone (the command's closing progress line),
    without the start-up (imports, loading the model)."""
    match = re.search(r"done, ([\d,]+) rows in ([\d.]+) s", stderr)
    if match is None:
        return None
    return round(int(match.group(1).replace(",", "")) / float(match.group(2)))


def bench_commands(
    config,
    data_path: str,
    frame_path: str,
    data,
    transformer_path: str,
    work: Path,
    quick: bool,
) -> dict:
    """``fraudaug generate`` (1M and 10M rows to Parquet), ``fraudaug score`` (the
    full file repeated to 10M rows, CSV) and the refusal latency of ``generate -n
    0``, each a subprocess as a user runs it, with its peak RSS.

    The GAN is the default profile's network trained for 20 steps on split 0 (its
    speed, not its quality, is measured); the champion is split 0's ``none``
    detector at the default profile's settings."""
    from pipeline.core.artifacts import file_sha256, load_json, load_parquet_rows
    from pipeline.data.schema import KAGGLE
    from pipeline.detector.fitting import fit_detector
    from pipeline.detector.model import make_detector
    from pipeline.evaluation.metrics import choose_threshold
    from pipeline.gan.storage import save_gan
    from pipeline.gan.trainer import train_cwgan_gp
    from pipeline.registry.promotion import ChampionRule, HeldOut, record_challenger
    from pipeline.registry.tracking import finish_tracking, start_tracking

    X, y = data["train"]["X"], data["train"]["y"]
    run = work / "run"
    trained = train_cwgan_gp(
        X, y, config.gan.model_copy(update={"steps": 20}), random_state=0
    )
    save_gan(run / "split-0" / "gan", trained, load_json(transformer_path))
    out: dict = {}
    refuse = ["generate", "--run", str(run), "-n", "0", "--out", str(work / "x.csv")]
    latencies = []
    for _ in range(5):
        wall, _, rc, err = _command(refuse)
        if rc != 2:
            raise RuntimeError(f"generate -n 0 did not refuse: {err[-500:]}")
        latencies.append(wall)
    out["refusal_generate_n0_s"] = round(float(np.median(latencies)), 3)
    for n in (100_000, 1_000_000) if quick else (1_000_000, 10_000_000):
        target = work / f"generated-{n}.parquet"
        wall, peak, rc, err = _command(
            ["generate", "--run", str(run), "-n", str(n), "--out", str(target)]
        )
        if rc:
            raise RuntimeError(f"generate failed: {err[-1000:]}")
        out[f"generate_{n}"] = {
            "wall_s": round(wall, 1),
            "rows_per_s": round(n / wall),
            "streaming_rows_per_s": _streaming_rate(err),
            "peak_rss_mb": peak,
        }
        target.unlink()
    # The champion: split 0's `none` detector.
    xgb = make_detector(config.detector, random_state=0)
    fit_detector(xgb, X, y, data["validation"]["X"], data["validation"]["y"])
    xgb.save_model(work / "detector.ubj")
    scores = xgb.predict_proba(data["test"]["X"])[:, 1]
    validation = xgb.predict_proba(data["validation"]["X"])[:, 1]
    store = f"sqlite:///{work / 'mlflow.db'}"
    tracking = start_tracking(store, run_name="bench", config={}, tags={})
    record_challenger(
        tracking,
        run_id="bench",
        method="none",
        detector_path=work / "detector.ubj",
        transformer_path=transformer_path,
        schema=KAGGLE,
        threshold=choose_threshold(data["validation"]["y"], validation),
        metrics={},
        data_sha256=file_sha256(data_path),
        fit_rows=np.r_[data["train"]["rows"], data["validation"]["rows"]],
        held_out=HeldOut(
            rows=data["test"]["rows"],
            frame=load_parquet_rows(frame_path, data["test"]["rows"]),
            scores=scores,
        ),
        rule=ChampionRule(rope=0.0, n_resamples=0, random_state=0),
        view_rows=config.registry.view_rows,
    )
    finish_tracking(tracking)
    # The full file repeated (header once) to >= 10M rows.
    n_target = 1_000_000 if quick else 10_000_000
    big = work / "transactions.csv"
    with open(data_path, "rb") as fh:
        header, body = fh.readline(), fh.read()
    if not body.endswith(b"\n"):
        body += b"\n"
    per_copy = body.count(b"\n")
    copies = -(-n_target // per_copy)
    with open(big, "wb") as fh:
        fh.write(header)
        for _ in range(copies):
            fh.write(body)
    del body
    n_rows = copies * per_copy
    wall, peak, rc, err = _command(
        ["score", "--in", str(big), "--out", str(work / "scores.parquet"),
         "--tracking-uri", store]
    )  # fmt: skip
    if rc:
        raise RuntimeError(f"score failed: {err[-1000:]}")
    out["score_csv"] = {
        "rows": n_rows,
        "input_mb": round(big.stat().st_size / 2**20),
        "wall_s": round(wall, 1),
        "rows_per_s": round(n_rows / wall),
        "streaming_rows_per_s": _streaming_rate(err),
        "peak_rss_mb": peak,
    }
    big.unlink()
    return out


def bench_ingest(data_path: str, repeats: int) -> dict:
    from pipeline.run.prepare import stage_ingest

    fresh, cached = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            first = stage_ingest(data_path, tmp)
            t1 = time.perf_counter()
            second = stage_ingest(data_path, tmp)
            t2 = time.perf_counter()
            assert not first["cached"] and second["cached"]
            fresh.append(t1 - t0)
            cached.append(t2 - t1)
    return {
        "ingest_csv_s": round(float(np.median(fresh)), 3),
        "ingest_cached_s": round(float(np.median(cached)), 3),
    }


def bench_scaling(config, ingested) -> dict:
    """Detector fit seconds (``none`` and ``smote``) on stratified subsets."""
    from sklearn.model_selection import train_test_split

    from pipeline.core.artifacts import load_parquet
    from pipeline.detector.fitting import fit_detector
    from pipeline.detector.model import make_detector
    from pipeline.features.transformer import TabularTransformer
    from pipeline.resampling.registry import make_sampler
    from pipeline.resampling.resample import resample

    frame = load_parquet(ingested["frame_path"])
    out = {}
    for n in (10_000, 50_000, len(frame)):
        part = (
            frame
            if n == len(frame)
            else train_test_split(
                frame, train_size=n, stratify=frame["Class"], random_state=0
            )[0]
        )
        train, rest = train_test_split(
            part, train_size=0.6, stratify=part["Class"], random_state=0
        )
        transformer = TabularTransformer().fit(train)
        Xt, yt = transformer.transform(train), train["Class"].to_numpy()
        Xv, yv = transformer.transform(rest), rest["Class"].to_numpy()
        row = {}
        for method in ("none", "smote"):
            sampler = make_sampler(method, config.evaluation, random_state=0)
            detector = make_detector(config.detector, random_state=0)
            t0 = time.perf_counter()
            rows = resample(sampler, Xt, yt)
            fit_detector(detector, rows.X, rows.y, Xv, yv, sample_weight=rows.weight)
            row[f"{method}_fit_s"] = round(time.perf_counter() - t0, 2)
        out[str(len(part))] = row
    return out


def bench_default_run(data_path: str) -> dict:
    """``fraudaug run --profile default`` in a subprocess, empty stage cache."""
    fraudaug = str(Path(sys.executable).parent / "fraudaug")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [
                fraudaug, "run", "--data", data_path, "--profile", "default",
                "--reports", f"{tmp}/reports", "--models", f"{tmp}/models",
                "--set", f"data.cache_dir={json.dumps(tmp + '/cache')}",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PREFECT_HOME": f"{tmp}/prefect"},
        )  # fmt: skip
        wall = time.perf_counter() - t0
        if proc.returncode:
            raise RuntimeError(f"default run failed: {proc.stderr[-2000:]}")
        report = Path(proc.stdout.strip().splitlines()[-1])
        metrics = json.loads((report.parent / "metrics.json").read_text())
        report_mb = round(report.stat().st_size / 2**20, 3)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    fit: dict[str, list[float]] = {}
    for r in metrics["results"]:
        fit.setdefault(r["method"], []).append(r["fit_seconds"])
    flow_s = metrics["duration_seconds"]
    return {
        "default_profile_wall_s": round(wall, 1),
        "default_profile_flow_s": flow_s,
        "default_profile_peak_rss_mb": round(peak_kb / 1024),
        "default_profile_report_mb": report_mb,
        "seconds_per_split": round(flow_s / metrics["n_splits"], 1),
        "gan_train_s": [g["train_seconds"] for g in metrics["gan"]["splits"]],
        "detector_fit_s": {m: round(float(np.median(v)), 2) for m, v in fit.items()},
        "run_id": metrics["run_id"],
    }


def device() -> dict:
    from pipeline.core.backend import load_tensorflow

    tf = load_tensorflow()

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpus = tf.config.list_physical_devices("GPU")
    return {
        "kind": "GPU" if gpus else "CPU",
        "gpus": [g.name for g in gpus],
        "cpu": cpu,
        "cpu_cores": os.cpu_count(),
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/raw/creditcard.csv")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--skip-run", action="store_true", help="no default-profile run"
    )
    parser.add_argument(
        "--gan-only",
        action="store_true",
        help="only the GAN figures (trainer vs bare, generation) and the device; "
        "what benchmarks/gpu_check.sh runs",
    )
    parser.add_argument(
        "--precision", choices=("float32", "mixed_bfloat16"), default="float32"
    )
    parser.add_argument(
        "--jit-compile", action="store_true", help="XLA-compile the training steps"
    )
    parser.add_argument("--batch-size", type=int, default=BATCH)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a check that the benchmark runs, not a measurement (one repeat, "
        "few steps, 100k generated rows)",
    )
    parser.add_argument("--out", help="default: benchmarks/results/<date>.json")
    args = parser.parse_args(argv)
    if not Path(args.data).is_file():
        sys.exit(f"benchmarks: {args.data}: no such file (run `fraudaug fetch-data`)")
    started = time.perf_counter()
    repeats, lengths, n_rows = args.repeats, (60, 260), 1_000_000
    if args.quick:
        repeats, lengths, n_rows = 1, (20, 120), 100_000
    result: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds")}
    if args.quick:
        result["quick"] = True
    result["device"] = device()
    if not args.gan_only:
        result.update(bench_ingest(args.data, repeats))
    gan = {"precision": args.precision, "jit_compile": args.jit_compile}
    with tempfile.TemporaryDirectory() as tmp:
        config, ingested, data, transformer_path = _split0(args.data, Path(tmp), gan)
        result["data"] = {"path": args.data, "rows": ingested["rows"]}
        X, y = data["train"]["X"], data["train"]["y"]
        trainer = bench_trainer(config, X, y, repeats, args.batch_size, lengths)
        result["trainer_vs_bare_ratio"] = trainer.pop("trainer_vs_bare_ratio")
        result["trainer"] = trainer
        result.update(bench_generate(config, X, y, n_rows))
        if not args.gan_only:
            result["commands"] = bench_commands(
                config,
                args.data,
                ingested["frame_path"],
                data,
                transformer_path,
                Path(tmp),
                args.quick,
            )
            result["scaling"] = {
                "detector_fit_s_by_rows": bench_scaling(config, ingested)
            }
    if not args.gan_only:
        if args.skip_run:
            result["default_profile_wall_s"] = None
            result["default_profile_peak_rss_mb"] = None
        else:
            run = bench_default_run(args.data)
            result["default_profile_wall_s"] = run.pop("default_profile_wall_s")
            result["default_profile_peak_rss_mb"] = run.pop(
                "default_profile_peak_rss_mb"
            )
            result["detector_fit_s"] = run.pop("detector_fit_s")
            result["scaling"]["seconds_per_split"] = run.pop("seconds_per_split")
            result["default_run"] = run
    result["bench_wall_s"] = round(time.perf_counter() - started, 1)
    out = Path(args.out) if args.out else RESULTS / f"{result['date'][:10]}.json"
    from pipeline.core.artifacts import save_json

    save_json(out, result)
    print(json.dumps(result, indent=2, sort_keys=True))
    return result


if __name__ == "__main__":
    main()
