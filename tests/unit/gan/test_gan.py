import keras
import numpy as np
import pytest
import tensorflow as tf
from imblearn.over_sampling import SMOTE, RandomOverSampler

from pipeline.core.config import GANConfig
from pipeline.core.errors import ArtifactError, DataValidationError
from pipeline.gan.batches import make_training_dataset
from pipeline.gan.penalty import gradient_penalty, safe_norm
from pipeline.gan.sampler import GANOverSampler
from pipeline.gan.storage import load_gan, save_gan
from pipeline.gan.trained import generate_rows
from pipeline.gan.trainer import train_cwgan_gp
from tests.helpers import TINY_GAN as TINY


def test_tf_norm_gradient_at_zero_is_nan_and_safe_norm_is_finite():
    x = tf.zeros((3, 5))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        unsafe = tf.reduce_sum(tf.norm(x, axis=-1))
        safe = tf.reduce_sum(safe_norm(x))
    assert np.isnan(tape.gradient(unsafe, x).numpy()).all()
    grad = tape.gradient(safe, x).numpy()
    assert np.isfinite(grad).all() and (grad == 0).all()


def test_safe_norm_matches_the_norm_away_from_zero_and_is_float32():
    x = tf.constant(np.random.default_rng(0).normal(size=(4, 6)), dtype=tf.float16)
    out = safe_norm(x)
    assert out.dtype == tf.float32
    np.testing.assert_allclose(
        out.numpy(), np.linalg.norm(x.numpy().astype(np.float32), axis=-1), rtol=1e-3
    )


def _dead_critic():
    # A ReLU layer whose bias kills every unit: the critic is flat, so each row's
    # input gradient is exactly zero -- the situation that produced the NaNs.
    row = keras.Input((3,))
    cond = keras.Input((2,))
    h = keras.layers.Concatenate()([row, cond])
    h = keras.layers.Dense(
        4, activation="relu", bias_initializer=keras.initializers.Constant(-100.0)
    )(h)
    return keras.Model([row, cond], keras.layers.Dense(1)(h))


def test_gradient_penalty_stays_finite_when_input_gradients_are_zero():
    critic = _dead_critic()
    real = tf.random.normal((8, 3), seed=1)
    fake = tf.random.normal((8, 3), seed=2)
    labels = tf.one_hot(tf.zeros(8, tf.int32), 2)
    with tf.GradientTape() as tape:
        gp = gradient_penalty(critic, real, fake, labels, seed=3)
    grads = tape.gradient(gp, critic.trainable_weights)
    assert np.isfinite(float(gp)) and float(gp) == pytest.approx(1.0, abs=1e-5)
    assert all(np.isfinite(g.numpy()).all() for g in grads if g is not None)

    # The same computation with tf.norm gives NaN gradients for the weights.
    with tf.GradientTape() as tape:
        inter = real + 0.5 * (fake - real)
        with tf.GradientTape() as inner:
            inner.watch(inter)
            score = critic([inter, labels])
        g = inner.gradient(score, inter)
        bad = tf.reduce_mean((tf.norm(g, axis=-1) - 1.0) ** 2)
    bad_grads = tape.gradient(bad, critic.trainable_weights)
    assert any(np.isnan(b.numpy()).any() for b in bad_grads if b is not None)


def test_training_dataset_is_class_balanced_and_deterministic(model_space):
    X, y = model_space
    ds = make_training_dataset(
        X, y, batch_size=64, n_critic=3, fraud_fraction=0.5, seed=5
    )
    batches = [b for _, b in zip(range(3), ds, strict=False)]
    x0, c0 = batches[0]
    assert x0.shape == (3 * 64, X.shape[1])
    assert float(tf.reduce_mean(c0[:, 1])) == pytest.approx(0.5)
    assert not np.array_equal(batches[0][0].numpy(), batches[1][0].numpy())
    again = next(
        iter(
            make_training_dataset(
                X, y, batch_size=64, n_critic=3, fraud_fraction=0.5, seed=5
            )
        )
    )
    np.testing.assert_array_equal(again[0].numpy(), x0.numpy())


@pytest.fixture(scope="module")
def tiny_gan(model_space):
    X, y = model_space
    return train_cwgan_gp(X, y, GANConfig(**TINY), random_state=0)


def test_training_gives_finite_losses_and_history(tiny_gan):
    assert tiny_gan.history and tiny_gan.history[-1]["step"] == 12
    for point in tiny_gan.history:
        assert all(np.isfinite(v) for v in point.values())
    assert all(np.isfinite(w).all() for w in tiny_gan.generator.get_weights())
    assert tiny_gan.meta["device"] in ("CPU",) or tiny_gan.meta["device"].startswith(
        "GPU"
    )


def test_same_seed_same_rows(model_space, tiny_gan):
    X, y = model_space
    again = train_cwgan_gp(X, y, GANConfig(**TINY), random_state=0)
    a = generate_rows(tiny_gan.generator, 50, latent_dim=8, random_state=1)
    b = generate_rows(again.generator, 50, latent_dim=8, random_state=1)
    np.testing.assert_array_equal(a, b)
    c = generate_rows(tiny_gan.generator, 50, latent_dim=8, random_state=2)
    assert not np.array_equal(a, c)


def test_save_and_load_round_trip(tmp_path, tiny_gan):
    save_gan(tmp_path / "gan", tiny_gan)
    loaded = load_gan(tmp_path / "gan")
    assert loaded.fingerprint == tiny_gan.fingerprint
    np.testing.assert_array_equal(
        generate_rows(loaded.generator, 20, latent_dim=8, random_state=4),
        generate_rows(tiny_gan.generator, 20, latent_dim=8, random_state=4),
    )


def test_too_few_frauds_is_a_clear_error(model_space):
    X, y = model_space
    y = np.zeros_like(y)
    y[:3] = 1
    with pytest.raises(DataValidationError, match="only 3 fraud rows"):
        train_cwgan_gp(X, y, GANConfig(**TINY), random_state=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: RandomOverSampler(sampling_strategy=0.2, random_state=0),
        lambda: SMOTE(sampling_strategy=0.2, random_state=0),
        lambda: GANOverSampler(sampling_strategy=0.2, random_state=0, gan_params=TINY),
    ],
    ids=["random_over", "smote", "cwgan_gp"],
)
def test_sampler_contract(model_space, make):
    X, y = model_space
    sampler = make()
    X_res, y_res = sampler.fit_resample(X, y)
    n_new = sampler.sampling_strategy_[1]
    assert len(y_res) == len(y) + n_new
    assert (y_res[len(y) :] == 1).all()
    # Originals come first, untouched.
    np.testing.assert_array_equal(X_res[: len(y)], X)
    np.testing.assert_array_equal(y_res[: len(y)], y)
    assert X_res.dtype == X.dtype
    assert (y_res == 1).sum() / (y_res == 0).sum() == pytest.approx(0.2, abs=0.01)


def test_gan_sampler_reuses_a_pretrained_gan_only_for_its_own_rows(
    tmp_path, model_space, tiny_gan
):
    X, y = model_space
    save_gan(tmp_path / "gan", tiny_gan)
    sampler = GANOverSampler(
        sampling_strategy=0.2, random_state=0, pretrained=tmp_path / "gan"
    )
    X_res, _ = sampler.fit_resample(X, y)
    assert len(X_res) > len(X)
    other = GANOverSampler(
        sampling_strategy=0.2, random_state=0, pretrained=tmp_path / "gan"
    )
    with pytest.raises(ArtifactError, match="fitted on other rows"):
        other.fit_resample(X[:-10], y[:-10])


def test_exactly_the_configured_number_of_steps(model_space):
    X, y = model_space
    trained = train_cwgan_gp(
        X, y, GANConfig(**{**TINY, "steps": 7}), random_state=0, log_every=3
    )
    assert [p["step"] for p in trained.history] == [3, 6, 7]
    assert trained.meta["steps"] == 7


def test_a_resumed_stream_continues_where_it_stopped(model_space):
    X, y = model_space
    kwargs = dict(batch_size=16, n_critic=1, fraud_fraction=0.5, seed=9)
    whole = [
        b[0].numpy()
        for _, b in zip(range(5), make_training_dataset(X, y, **kwargs), strict=False)
    ]
    tail = next(iter(make_training_dataset(X, y, start_step=3, **kwargs)))[0].numpy()
    np.testing.assert_array_equal(tail, whole[3])


def test_sampling_many_generators_never_retraces(caplog):
    # Each network is traced once for every batch size; TensorFlow keys its
    # retracing statistics by the traced function's code, shared by all networks,
    # so per-network traces at new batch sizes used to add up to its WARNING.
    from pipeline.gan.networks import build_generator
    from pipeline.gan.trained import generate_rows

    caplog.set_level("WARNING", logger="tensorflow")
    for k in range(8):
        generator = build_generator(4, latent_dim=8, widths=(16,))
        for n in (98, 293, 1_172, 5 + k):
            rows = generate_rows(generator, n, latent_dim=8, random_state=k)
            assert rows.shape == (n, 4)
        z = np.random.default_rng(k).standard_normal((5 + k, 8), dtype=np.float32)
        eager = generator([z, np.tile([[0.0, 1.0]], (5 + k, 1))], training=False)
        np.testing.assert_allclose(rows, np.asarray(eager), rtol=1e-6, atol=1e-6)
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]


def test_a_training_leaves_no_gradient_graph_once_the_run_forgets(model_space):
    """TensorFlow's gradient registry kept every traced training step's graph
    (``tf.custom_gradient``, reached by Keras' optimizer): about 50 graphs and
    30-50 MB a night in a process that runs the flow night after night
    (``benchmarks/long_lived.py``). The end of a run drops them, and the same
    seed still gives the same rows after it."""
    from tensorflow.python.framework import ops

    from pipeline.core.memory import forget_answers

    def held() -> list[str]:
        return [n for n in ops._gradient_registry._registry if "CustomGradient" in n]

    X, y = model_space
    rows = []
    for _ in range(2):
        trained = train_cwgan_gp(X, y, GANConfig(**TINY), random_state=0)
        rows.append(generate_rows(trained.generator, 20, latent_dim=8, random_state=1))
        assert held()  # while it trains: TensorFlow's own
        del trained
        forget_answers()  # what the end of every run calls
        assert held() == []
    np.testing.assert_array_equal(rows[0], rows[1])
