"""The failure this project was born from, the non-finite guard, checkpoints and
resume, model selection, and the GPU options (run here on the CPU)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from pipeline.core.config import GANConfig
from pipeline.core.errors import TrainingError
from pipeline.core.layout import CHECKPOINT_STATE
from pipeline.gan.batches import make_training_dataset
from pipeline.gan.model import ConditionalWGANGP
from pipeline.gan.networks import build_critic, build_generator
from pipeline.gan.penalty import gradient_penalty
from pipeline.gan.trainer import train_cwgan_gp
from tests.helpers import ROOT
from tests.helpers import TINY_GAN as TINY


def _question_critic(n_features: int, seed: int) -> keras.Model:
    """The critic from the original report: Dense 64 -> LeakyReLU(0.25) ->
    Dense 32 -> LeakyReLU -> Dense 2 with tanh."""
    row = keras.Input((n_features,))
    cond = keras.Input((2,))
    h = keras.layers.Concatenate()([row, cond])
    init = keras.initializers.GlorotUniform(seed=seed)
    h = keras.layers.LeakyReLU(negative_slope=0.25)(
        keras.layers.Dense(64, kernel_initializer=init)(h)
    )
    h = keras.layers.LeakyReLU()(keras.layers.Dense(32, kernel_initializer=init)(h))
    out = keras.layers.Dense(2, activation="tanh", kernel_initializer=init)(h)
    return keras.Model([row, cond], out)


def _tf_norm_penalty(critic, real, fake, labels, seed):
    # The textbook penalty with tf.norm, as in the report that started the project.
    alpha = keras.random.uniform((real.shape[0], 1), seed=seed)
    inter = real + alpha * (fake - real)
    with tf.GradientTape() as tape:
        tape.watch(inter)
        score = critic([inter, labels])
    grads = tape.gradient(score, inter)
    return tf.reduce_mean((tf.norm(grads, axis=-1) - 1.0) ** 2)


def _train_critic(penalty, real, steps=3, seed=0):
    critic = _question_critic(real.shape[1], seed)
    optimizer = keras.optimizers.Adam(1e-4, beta_1=0.5, beta_2=0.9)
    seed_gen = keras.random.SeedGenerator(seed)
    labels = tf.one_hot(tf.ones(real.shape[0], tf.int32), 2)
    rng = np.random.default_rng(seed)
    zero_grad_rows = 0
    for _ in range(steps):
        fake = tf.constant(rng.normal(size=real.shape).astype(np.float32))
        with tf.GradientTape() as inner:
            inner.watch(real)
            score = critic([real, labels])
        row_grads = inner.gradient(score, real).numpy()
        zero_grad_rows = max(
            zero_grad_rows, int((np.abs(row_grads).sum(axis=1) == 0).sum())
        )
        with tf.GradientTape() as tape:
            w = tf.reduce_mean(critic([real, labels])) - tf.reduce_mean(
                critic([fake, labels])
            )
            loss = -w + 10.0 * penalty(critic, real, fake, labels, seed_gen)
        grads = tape.gradient(loss, critic.trainable_weights)
        optimizer.apply_gradients(zip(grads, critic.trainable_weights, strict=True))
    return critic, zero_grad_rows


def test_the_seed_failure_nan_with_tf_norm_finite_with_the_safe_penalty(demo_frame):
    # Unscaled Kaggle rows (Time up to 172,792 s) saturate the tanh: those rows'
    # input gradients are exactly zero.
    real = tf.constant(demo_frame.drop(columns="Class").to_numpy(np.float32)[:256])

    def project_penalty(critic, real, fake, labels, seed):
        return gradient_penalty(critic, real, fake, labels, seed=seed)

    broken, zero_rows = _train_critic(_tf_norm_penalty, real)
    assert zero_rows > 0
    assert all(np.isnan(w).all() for w in broken.get_weights() if w.ndim == 2)

    fixed, zero_rows = _train_critic(project_penalty, real)
    assert zero_rows > 0
    assert all(np.isfinite(w).all() for w in fixed.get_weights())


def _tiny_gan(n_features=4):
    g = build_generator(n_features, latent_dim=3, widths=(8,))
    c = build_critic(n_features, widths=(8,))
    gan = ConditionalWGANGP(g, c, latent_dim=3, n_critic=2, seed=0)
    gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3))
    return gan


def test_a_non_finite_step_leaves_weights_and_optimizer_untouched():
    gan = _tiny_gan()
    # NaN real rows make every critic update non-finite (the generator's own
    # update does not see real rows and may proceed).
    before = [v.numpy().copy() for v in gan.critic.weights]
    slots = [v.numpy().copy() for v in gan.c_optimizer.variables]
    x = np.full((2 * 8, 4), np.nan, np.float32)
    cond = tf.one_hot(np.ones(16, np.int32), 2)
    gan.train_step((tf.constant(x), cond))
    after = [v.numpy() for v in gan.critic.weights]
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(slots, (v.numpy() for v in gan.c_optimizer.variables), strict=True):
        np.testing.assert_array_equal(a, b)
    assert int(gan.nonfinite_steps.numpy()) == 1
    # A finite step afterwards is applied.
    gan.train_step((tf.random.normal((16, 4), seed=1), cond))
    assert not np.array_equal(before[0], gan.critic.weights[0].numpy())
    assert int(gan.consecutive_nonfinite.numpy()) == 0


def test_occasional_bad_rows_are_skipped_and_counted(model_space):
    X, y = model_space
    X = X.copy()
    X[np.flatnonzero(y == 1)[0]] = np.nan  # one poisoned fraud row
    # The model space itself (the quantile and mode-specific encodings refuse a
    # non-finite training value up front, see test_gan_encoding).
    config = GANConfig(
        **{**TINY, "steps": 20, "fraud_fraction": 0.5, "encoding": "standard"}
    )
    trained = train_cwgan_gp(X, y, config, random_state=0)
    assert trained.meta["nonfinite_steps"] > 0
    assert trained.meta["recoveries"] == 0
    assert all(np.isfinite(w).all() for w in trained.generator.get_weights())


def test_persistent_non_finite_steps_recover_once_then_stop(model_space):
    X, y = model_space
    X = X.copy()
    X[y == 1] = np.nan  # every fraud row: every step fails
    config = GANConfig(
        **{**TINY, "steps": 30, "max_consecutive_nonfinite": 3, "encoding": "standard"}
    )
    with pytest.raises(
        TrainingError, match="again after restoring the last good state"
    ):
        train_cwgan_gp(X, y, config, random_state=0, log_every=3)


def test_model_selection_keeps_the_best_validation_checkpoint(model_space):
    X, y = model_space
    frauds = X[y == 1]
    config = GANConfig(**{**TINY, "steps": 12, "eval_every": 4})
    trained = train_cwgan_gp(
        X, y, config, random_state=0, validation=frauds, log_every=2
    )
    scores = trained.meta["selection"]
    assert [s["step"] for s in scores] == [4, 8, 12]
    best = min(scores, key=lambda s: s["c2st_auc"])
    assert trained.meta["selected_step"] == best["step"]


EVERY_OPTION = {
    "ema_decay": 0.9,
    "encoding": "quantile",
    "pac": 2,
    "critic_dropout": 0.2,
    "residual": True,
    "critic_learning_rate": 3e-4,
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [{}, EVERY_OPTION, {"encoding": "mode_specific", "filter": "critic"}],
    ids=["default", "options", "mode-specific"],
)
def test_interrupt_saves_a_checkpoint_and_the_rerun_finishes_identically(
    tmp_path, model_space, monkeypatch, options
):
    # Every piece of state is checkpointed: with the generator's moving average,
    # dequantised batches, dropout, packing, batch norm and two learning rates too.
    X, y = model_space
    frauds = X[y == 1]
    config = GANConfig(**{**TINY, "steps": 8, "eval_every": 4, **options})
    kwargs = dict(random_state=3, validation=frauds, log_every=2)
    reference = train_cwgan_gp(X, y, config, **kwargs)

    calls = {"n": 0}
    real_fit = ConditionalWGANGP.fit

    def interrupted_fit(self, *args, **kw):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real_fit(self, *args, **kw)

    monkeypatch.setattr(ConditionalWGANGP, "fit", interrupted_fit)
    with pytest.raises(KeyboardInterrupt):
        train_cwgan_gp(X, y, config, checkpoint_dir=tmp_path, **kwargs)
    monkeypatch.setattr(ConditionalWGANGP, "fit", real_fit)
    assert (tmp_path / CHECKPOINT_STATE).is_file()

    resumed = train_cwgan_gp(X, y, config, checkpoint_dir=tmp_path, **kwargs)
    assert resumed.meta["resumed_from_step"] == 6
    np.testing.assert_array_equal(
        resumed.sample(30, random_state=1), reference.sample(30, random_state=1)
    )
    assert resumed.meta["selected_step"] == reference.meta["selected_step"]
    assert resumed.meta["selection"] == reference.meta["selection"]


def test_a_stop_swallowed_inside_tensorflow_ends_training_at_the_next_step(
    model_space, monkeypatch
):
    """A SIGTERM whose exception CPython swallowed (it landed in a weakref's
    callback inside TensorFlow: a run trained on for minutes) still ends
    training: the trainer asks for it again before each step."""
    from pipeline.core import interrupts

    X, y = model_space
    config = GANConfig(**{**TINY, "steps": 40, "eval_every": 40})
    seen = []

    class SwallowedAtThirdStep(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(batch)
            if batch == 2:
                try:
                    interrupts.on_sigterm(signal.SIGTERM, None)
                except interrupts.Terminated:
                    pass  # what CPython does with it in a callback

    real_fit = ConditionalWGANGP.fit

    def fit(self, *args, callbacks=(), **kw):
        return real_fit(
            self, *args, callbacks=[SwallowedAtThirdStep(), *callbacks], **kw
        )

    monkeypatch.setattr(ConditionalWGANGP, "fit", fit)
    previous = interrupts.install()
    try:
        with pytest.raises(interrupts.Terminated):
            train_cwgan_gp(X, y, config, random_state=0, log_every=40)
    finally:
        interrupts.restore(previous)
    assert seen == [0, 1, 2]  # not one step more of the 40


def test_a_checkpoint_for_other_data_is_ignored(tmp_path, model_space):
    X, y = model_space
    config = GANConfig(**{**TINY, "steps": 4, "eval_every": 2})
    train_cwgan_gp(X, y, config, random_state=0, checkpoint_dir=tmp_path, log_every=2)
    other = train_cwgan_gp(
        X[:-5], y[:-5], config, random_state=0, checkpoint_dir=tmp_path
    )
    assert other.meta["resumed_from_step"] == 0


@pytest.mark.slow
def test_sigkill_mid_training_then_rerun_resumes(tmp_path, model_space):
    X, y = model_space
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, numpy as np
            from pipeline.core.config import GANConfig
            from pipeline.gan.trainer import train_cwgan_gp
            X = np.load({str(tmp_path / "X.npy")!r})
            y = np.load({str(tmp_path / "y.npy")!r})
            config = GANConfig(**{{**{TINY!r}, "steps": 400, "eval_every": 20}})
            out = train_cwgan_gp(X, y, config, random_state=0, log_every=10,
                                 checkpoint_dir={str(tmp_path / "ckpt")!r})
            print(json.dumps(out.meta["resumed_from_step"]))
            """
        )
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    state = tmp_path / "ckpt" / CHECKPOINT_STATE
    deadline = time.monotonic() + 240
    while not state.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert state.exists(), "no checkpoint was written"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    rerun = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    resumed_from = int(rerun.stdout.strip().splitlines()[-1])
    assert 0 < resumed_from < 400


@pytest.mark.slow
def test_bfloat16_and_xla_options_train_on_cpu():
    """In a fresh process (op determinism, which other tests turn on, makes Keras
    drop XLA): bfloat16 layers, XLA really on, finite rows."""
    script = textwrap.dedent(
        """
        import json, numpy as np
        from pipeline.core.config import GANConfig
        from pipeline.gan.trained import generate_rows
        from pipeline.gan.trainer import _Trainer, train_cwgan_gp
        from tests.helpers import TINY_GAN as TINY
        rng = np.random.default_rng(0)
        X = rng.normal(size=(300, 6)); y = (rng.random(300) < 0.2).astype(int)
        config = GANConfig(
            **{**TINY, "steps": 2, "precision": "mixed_bfloat16", "jit_compile": True}
        )
        xla = _Trainer(X, y, config, random_state=0).gan.jit_compile
        trained = train_cwgan_gp(X, y, config, random_state=0)
        rows = generate_rows(trained.generator, 10, latent_dim=TINY["latent_dim"])
        print(json.dumps({
            "xla": bool(xla),
            "dtype": trained.generator.get_layer("dense_0").compute_dtype,
            "finite": bool(np.isfinite(rows).all()),
            "float64": rows.dtype == np.float64,
        }))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"xla": True, "dtype": "bfloat16", "finite": True, "float64": True}


def test_training_past_its_time_limit_stops_with_a_checkpoint(model_space, tmp_path):
    X, y = model_space
    config = GANConfig(**{**TINY, "steps": 10**6, "timeout_seconds": 1})
    start = time.perf_counter()
    with pytest.raises(TrainingError, match=r"ran past gan.timeout_seconds = 1 s"):
        train_cwgan_gp(
            X, y, config, random_state=0, checkpoint_dir=tmp_path, log_every=5
        )
    assert time.perf_counter() - start < 60
    assert any(tmp_path.iterdir())  # the checkpoint a rerun resumes from


def test_xla_asked_for_under_op_determinism_is_an_error(model_space):
    from pipeline.core.errors import ConfigError

    X, y = model_space
    tf.config.experimental.enable_op_determinism()  # as the flow does without XLA
    config = GANConfig(**{**TINY, "steps": 2, "jit_compile": True})
    with pytest.raises(ConfigError, match="disables XLA"):
        train_cwgan_gp(X, y, config, random_state=0)


def test_minority_only_batches(model_space):
    X, y = model_space
    ds = make_training_dataset(
        X, y, batch_size=16, n_critic=1, fraud_fraction=1.0, seed=0
    )
    _, cond = next(iter(ds))
    assert float(tf.reduce_min(cond[:, 1])) == 1.0


def test_too_few_frauds_to_train_the_gan_is_a_data_error():
    from pipeline.core.config import GANConfig
    from pipeline.core.errors import DataValidationError
    from pipeline.gan.trainer import train_cwgan_gp

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 4)), np.r_[np.ones(5), np.zeros(195)].astype(int)
    with pytest.raises(DataValidationError, match=r"only 5 fraud rows .* at least 10"):
        train_cwgan_gp(X, y, GANConfig(steps=2), random_state=0)


def test_the_moving_average_is_scored_and_can_be_the_one_kept(model_space):
    X, y = model_space
    config = GANConfig(**{**TINY, "steps": 12, "eval_every": 4, "ema_decay": 0.8})
    trained = train_cwgan_gp(X, y, config, random_state=0, validation=X[y == 1])
    assert all(
        "ema_c2st_auc" in s and "c2st_auc" in s for s in trained.meta["selection"]
    )
    best = min(
        (v, s["step"], k)
        for s in trained.meta["selection"]
        for k, v in s.items()
        if k != "step"
    )
    assert trained.meta["selected_step"] == best[1]
    kept = "ema" if best[2] == "ema_c2st_auc" else "generator"
    assert trained.meta["selected_weights"] == kept


@pytest.mark.parametrize("kind", ["classifier", "critic"])
def test_a_filter_keeps_the_most_real_looking_draws(tmp_path, model_space, kind):
    import dataclasses

    from pipeline.gan.storage import load_gan, save_gan

    X, y = model_space
    config = GANConfig(**{**TINY, "filter": kind, "filter_share": 0.5})
    trained = train_cwgan_gp(X, y, config, random_state=0)
    rows = trained.sample(40, random_state=2)
    unfiltered = dataclasses.replace(trained, meta={**trained.meta, "filter": "none"})
    pool = unfiltered.sample(80, random_state=2)
    kept = np.array([np.flatnonzero((pool == r).all(axis=1))[0] for r in rows])
    assert len(set(kept)) == 40 and (np.diff(kept) > 0).all()  # a subset, in order
    Z = trained.encoder.encode(pool)
    realness = trained._realness(Z.astype(np.float32), pool, 1)
    dropped = np.setdiff1d(np.arange(80), kept)
    assert realness[kept].min() >= realness[dropped].max() - 1e-6
    save_gan(tmp_path / "gan", trained)
    np.testing.assert_array_equal(
        load_gan(tmp_path / "gan").sample(40, random_state=2), rows
    )


def test_dequantised_batches_stay_in_their_slots(model_space):
    from scipy.special import ndtri

    from pipeline.gan.encoding import ColumnEncoder

    X, y = model_space
    encoder = ColumnEncoder("quantile").fit(X[y == 1])
    low, high = encoder.cdf_bounds(X)
    clip = encoder.uniform_clip()
    kwargs = dict(
        batch_size=16,
        n_critic=1,
        fraud_fraction=1.0,
        seed=4,
        dequantize=(low, high, clip),
    )
    first = [b[0].numpy() for b in make_training_dataset(None, y, **kwargs).take(3)]
    again = [b[0].numpy() for b in make_training_dataset(None, y, **kwargs).take(3)]
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
    lo = ndtri(np.clip(low[y == 1], clip, 1 - clip)).min(axis=0)
    hi = ndtri(np.clip(high[y == 1], clip, 1 - clip)).max(axis=0)
    for batch in first:
        assert ((batch >= lo - 1e-5) & (batch <= hi + 1e-5)).all()
    assert not np.array_equal(first[0], first[1])


def test_option_combinations_that_cannot_work_are_config_errors():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="multiple of pac"):
        GANConfig(batch_size=30, pac=4)
    with pytest.raises(ValidationError, match="packed critic"):
        GANConfig(filter="critic", pac=2)
