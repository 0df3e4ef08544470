import time

import numpy as np
import pytest

from pipeline.core.errors import ConfigError
from pipeline.core.memory import LastAnswers
from pipeline.detector.fitting import fit_detector
from pipeline.detector.model import fraud_scores, make_detector
from pipeline.evaluation.metrics import compute_metrics
from pipeline.resampling import registry
from pipeline.resampling.amounts import amount_targets, keep_targets
from pipeline.resampling.registry import make_sampler
from pipeline.resampling.resample import added_rows, resample
from pipeline.run.plan import load_config
from tests.helpers import TINY_GAN as TINY

METHODS = registry.built_in_names()
ADDS_ROWS = [m.name for m in registry.built_in_methods() if m.amount == "added"]


def _fit(sampler, detector, X_tr, y_tr, X_va, y_va, **kwargs):
    """A method's detector as the fit stage makes it: resample, then fit."""
    weight = kwargs.pop("synthetic_weight", 1.0)
    resampled = resample(sampler, X_tr, y_tr, synthetic_weight=weight)
    fitted = fit_detector(
        detector,
        resampled.X,
        resampled.y,
        X_va,
        y_va,
        sample_weight=resampled.weight,
        **kwargs,
    )
    return resampled, fitted


@pytest.fixture(scope="module")
def split_data(model_space):
    X, y = model_space
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    tr, va, te = np.split(order, [1800, 2400])
    return X[tr], y[tr], X[va], y[va], X[te], y[te]


@pytest.fixture
def searches(monkeypatch):
    """RememberedNeighbors with nothing remembered, and every neighbour search
    scikit-learn makes counted: ``(rows searched among, neighbours asked)``;
    ``searches.delay`` seconds are slept in each (for threads asking at once)."""
    from sklearn.neighbors import NearestNeighbors

    from pipeline.core.neighbours import RememberedNeighbors

    monkeypatch.setattr(RememberedNeighbors, "answers", LastAnswers(keep=4))
    calls = SearchLog()
    original = NearestNeighbors.kneighbors

    def counted(self, X=None, n_neighbors=None, *args, **kwargs):
        calls.append((getattr(self, "n_samples_fit_", None), n_neighbors))
        time.sleep(calls.delay)
        return original(self, X, n_neighbors, *args, **kwargs)

    monkeypatch.setattr(NearestNeighbors, "kneighbors", counted)
    return calls


class SearchLog(list):
    delay = 0.0


@pytest.mark.parametrize("method", METHODS)
def test_every_method_fits_and_scores_real_rows_only(split_data, method):
    X_tr, y_tr, X_va, y_va, X_te, y_te = split_data
    config = load_config(
        "smoke", overrides={"gan": TINY, "detector": {"n_estimators": 30}}
    )
    sampler = make_sampler(method, config.evaluation, random_state=1, gan=config.gan)
    detector = make_detector(config.detector, random_state=2)
    resampled, _ = _fit(sampler, detector, X_tr, y_tr, X_va, y_va)
    scores = fraud_scores(detector, X_te)
    # The sampler acts in fit only: every scored row is a real test row.
    assert scores.shape == (len(y_te),)
    assert ((scores >= 0) & (scores <= 1)).all()
    metrics = compute_metrics(y_te, scores)
    assert 0 < metrics["auprc"] <= 1 and 0.5 < metrics["roc_auc"] <= 1
    if sampler is not None:
        X_res, _ = make_sampler(
            method, config.evaluation, random_state=1, gan=config.gan
        ).fit_resample(X_tr, y_tr)
        assert len(resampled.y) == len(X_res) != len(y_tr)
        if registry.get(method).amount == "kept":  # removes legitimate rows only
            assert resampled.n_added == 0 and len(X_res) < len(y_tr)
        else:
            assert 0 < resampled.n_added <= len(X_res) - (y_tr == 1).sum()
    else:
        assert len(resampled.y) == len(y_tr)
        assert resampled.n_added == 0


@pytest.mark.parametrize("method", ADDS_ROWS)
def test_every_sampler_adds_the_rows_it_is_asked_for(split_data, method):
    X_tr, y_tr, *_ = split_data
    config = load_config("smoke", overrides={"gan": TINY})
    n_min = int((y_tr == 1).sum())
    for target in amount_targets(y_tr, config.evaluation):
        sampler = make_sampler(
            method, config.evaluation, random_state=1, gan=config.gan, n_minority=target
        )
        X_res, y_res = sampler.fit_resample(X_tr, y_tr)
        added = added_rows(sampler, len(y_tr), len(y_res))
        # Added rows are new minority rows; every original fraud is still there
        # unless a cleaner removed it.
        assert (y_res[added] == 1).all()
        if registry.get(method).family == "combined":  # then cleaned
            assert added.sum() <= target - n_min
        elif method == "adasyn":  # ADASYN rounds per neighbourhood
            assert added.sum() == pytest.approx(target - n_min, rel=0.25)
        else:
            assert added.sum() == target - n_min
            np.testing.assert_array_equal(X_res[~added], X_tr)


def test_the_amount_grid_runs_from_one_per_real_fraud_to_the_shared_ratio():
    y = np.r_[np.zeros(100_000, int), np.ones(200, int)]
    config = load_config("default")
    assert amount_targets(y, config.evaluation) == [400, 1_000, 3_400, 10_000]
    # Grid points above the shared ratio are dropped; the ratio stays.
    small = config.evaluation.model_copy(update={"sampling_strategy": 0.005})
    assert amount_targets(y, small) == [400, 500]
    with pytest.raises(ConfigError, match="already hold"):
        amount_targets(np.r_[np.zeros(100, int), np.ones(50, int)], config.evaluation)


def test_undersampling_keeps_every_fraud_and_the_legitimate_rows_asked_for(
    split_data,
):
    X_tr, y_tr, *_ = split_data
    config = load_config("default")
    for keep in keep_targets(y_tr, config.evaluation):
        sampler = make_sampler(
            "random_under", config.evaluation, random_state=1, n_majority=keep
        )
        X_res, y_res = sampler.fit_resample(X_tr, y_tr)
        assert (y_res == 0).sum() == keep and (y_res == 1).sum() == (y_tr == 1).sum()
        # Real training rows only, each at most once.
        kept = sampler.sample_indices_
        assert len(set(kept)) == len(kept)
        np.testing.assert_array_equal(X_res, X_tr[kept])


def test_undersampling_reaches_the_ratios_oversampling_reaches():
    y = np.r_[np.zeros(100_000, int), np.ones(200, int)]
    config = load_config("default")
    keep = keep_targets(y, config.evaluation)
    assert keep == [50_000, 20_000, 5_882, 2_000]  # 100,000 / (1 + m); ratio 0.1
    over = amount_targets(y, config.evaluation)
    np.testing.assert_allclose(
        [200 / k for k in keep], [n / 100_000 for n in over], rtol=1e-3
    )
    with pytest.raises(ConfigError, match="hold only"):
        keep_targets(np.r_[np.zeros(100, int), np.ones(50, int)], config.evaluation)


def test_added_rows_can_weigh_less_than_real_ones(split_data):
    X_tr, y_tr, X_va, y_va, X_te, _ = split_data
    config = load_config("smoke", overrides={"detector": {"n_estimators": 30}})
    scores = {}
    for weight in (1.0, 0.2):
        detector = make_detector(config.detector, random_state=2)
        _fit(
            make_sampler("smote", config.evaluation, random_state=1),
            detector,
            X_tr,
            y_tr,
            X_va,
            y_va,
            synthetic_weight=weight,
        )
        scores[weight] = fraud_scores(detector, X_te)
    # Lighter synthetic frauds: lower fraud scores overall.
    assert scores[0.2].mean() < scores[1.0].mean()


def test_unknown_method():
    with pytest.raises(ConfigError, match="unknown method"):
        make_sampler("gan9000", load_config("smoke").evaluation, random_state=0)


def test_a_fit_on_the_same_rows_is_reused_not_repeated(split_data, tmp_path):
    X_tr, y_tr, X_va, y_va, X_te, _ = split_data
    config = load_config("smoke", overrides={"detector": {"n_estimators": 40}})

    def fit(method, **kwargs):
        detector = make_detector(config.detector, random_state=2)
        _, fitted = _fit(
            make_sampler(method, config.evaluation, random_state=1, **kwargs),
            detector,
            X_tr,
            y_tr,
            X_va,
            y_va,
            reuse_dir=tmp_path,
        )
        return detector, fitted

    (first, fitted), (again, refitted) = fit("smote"), fit("smote")
    assert not fitted.reused and refitted.reused
    np.testing.assert_array_equal(fraud_scores(first, X_te), fraud_scores(again, X_te))
    assert again.best_iteration == first.best_iteration
    # Other rows (another amount) are fitted, not reused.
    target = amount_targets(y_tr, config.evaluation)[0]
    assert not fit("smote", n_minority=target)[1].reused


@pytest.mark.parametrize("strategy", [0.1, "dict"])
def test_smotenc_on_the_frauds_alone_gives_imbalanced_learns_rows_exactly(
    mixed_frame, strategy
):
    """SMOTENC's new rows depend on the frauds alone: run on the frauds and one
    legitimate row (far less memory), the output is imbalanced-learn's own."""
    from imblearn.combine import SMOTETomek
    from imblearn.over_sampling import SMOTENC

    from pipeline.data.detection import detect_schema
    from pipeline.features.transformer import TabularTransformer
    from pipeline.resampling.samplers import DenseNearestNeighbors, MinoritySMOTENC

    schema, _ = detect_schema(
        mixed_frame, label="is_fraud", time="tx_datetime", amount="amount"
    )
    transformer = TabularTransformer(schema).fit(mixed_frame)
    X = transformer.transform(mixed_frame)
    y = (mixed_frame["is_fraud"] == "fraud").to_numpy().astype(int)
    categorical = transformer.categorical_features
    if strategy == "dict":
        strategy = {1: int(3 * y.sum())}
    # The neighbours searched densely, as make_sampler does.
    ours = MinoritySMOTENC(
        categorical,
        sampling_strategy=strategy,
        k_neighbors=DenseNearestNeighbors(n_neighbors=6),
        random_state=3,
    )
    theirs = SMOTENC(categorical, sampling_strategy=strategy, random_state=3)
    for a, b in zip(ours.fit_resample(X, y), theirs.fit_resample(X, y), strict=True):
        np.testing.assert_array_equal(a, b)
    # Inside SMOTE-Tomek too (its cleaning still sees every row).
    a = SMOTETomek(smote=ours, random_state=3).fit_resample(X, y)
    b = SMOTETomek(smote=theirs, random_state=3).fit_resample(X, y)
    for got, expected in zip(a, b, strict=True):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("method", ["borderline_smote", "adasyn"])
def test_neighbourhood_samplers_search_once_for_every_amount(
    split_data, method, searches
):
    """Borderline SMOTE's and ADASYN's search of the frauds' neighbours among all
    rows does not depend on the amount: the later amounts reuse it, and every
    amount's rows are imbalanced-learn's own."""
    from imblearn.over_sampling import ADASYN, BorderlineSMOTE

    X_tr, y_tr, *_ = split_data
    config = load_config("default")
    targets = amount_targets(y_tr, config.evaluation)
    assert len(targets) > 1
    per_amount = []
    for target in targets:
        before = len(searches)
        ours = make_sampler(
            method, config.evaluation, random_state=1, n_minority=target
        )
        theirs = (
            BorderlineSMOTE(sampling_strategy={1: target}, random_state=1)
            if method == "borderline_smote"
            else ADASYN(sampling_strategy={1: target}, random_state=1)
        )
        got = ours.fit_resample(X_tr, y_tr)
        mine = len(searches) - before
        expected = theirs.fit_resample(X_tr, y_tr)
        per_amount.append((mine, len(searches) - before - mine))
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
    (first, plain), *later = per_amount
    assert first == plain  # the first amount searches as imbalanced-learn does
    for mine, plain in later:
        assert mine < plain  # the search of every fraud among all rows is reused


def test_one_neighbour_search_serves_borderline_smote_and_adasyn(split_data, searches):
    """Borderline SMOTE searches every fraud's 11 neighbours among all rows;
    ADASYN, on the same rows, takes its 6 from that answer instead of searching
    again, and both give imbalanced-learn's rows."""
    from imblearn.over_sampling import ADASYN, BorderlineSMOTE

    X_tr, y_tr, *_ = split_data
    config = load_config("default")
    target = amount_targets(y_tr, config.evaluation)[0]
    theirs = {
        "borderline_smote": BorderlineSMOTE(
            sampling_strategy={1: target}, random_state=1
        ),
        "adasyn": ADASYN(sampling_strategy={1: target}, random_state=1),
    }
    for method in ("borderline_smote", "adasyn"):
        searches.clear()
        ours = make_sampler(
            method, config.evaluation, random_state=1, n_minority=target
        )
        got = ours.fit_resample(X_tr, y_tr)
        among_all_rows = [k for n, k in searches if n == len(y_tr)]
        expected = theirs[method].fit_resample(X_tr, y_tr)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
        # borderline SMOTE searches among all rows once; ADASYN never
        assert among_all_rows == ([11] if method == "borderline_smote" else [])


def test_remembered_neighbours_are_scikit_learns_even_with_ties(searches):
    """A query for fewer neighbours is answered from a larger answer only where
    no tie could make it differ from scikit-learn's own answer; with exact
    duplicates among the rows it searches again, and the answer is the same."""
    from sklearn.neighbors import NearestNeighbors

    from pipeline.core.neighbours import RememberedNeighbors

    rng = np.random.default_rng(3)
    distinct = rng.normal(size=(400, 5))
    tied = np.vstack([distinct, distinct[:40]])  # 40 rows twice: distances of 0
    for X, searches_again in ((distinct, False), (tied, True)):
        query = X[::3]
        wide = RememberedNeighbors(n_neighbors=11, search_neighbors=11).fit(X)
        wide.kneighbors(query)
        narrow = RememberedNeighbors(n_neighbors=6, search_neighbors=11).fit(X)
        searches.clear()
        got = narrow.kneighbors(query)
        searched = bool(searches)
        expected = NearestNeighbors(n_neighbors=6).fit(X).kneighbors(query)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(
            narrow.kneighbors(query, return_distance=False), expected[1]
        )
        assert searched is searches_again


def test_two_threads_asking_the_same_neighbours_search_once(searches):
    from concurrent.futures import ThreadPoolExecutor

    from pipeline.core.neighbours import RememberedNeighbors

    searches.delay = 0.3  # the other thread asks while this one searches
    X = np.random.default_rng(4).normal(size=(300, 4))

    def ask(k):
        return (
            RememberedNeighbors(n_neighbors=k, search_neighbors=11)
            .fit(X)
            .kneighbors(X[:50])
        )

    with ThreadPoolExecutor(2) as pool:
        wide, narrow = pool.map(ask, (11, 6))
    assert len(searches) == 1
    np.testing.assert_array_equal(narrow[1], wide[1][:, :6])


@pytest.fixture
def resamples(monkeypatch):
    """SMOTE's remembered new rows forgotten, and every SMOTE resample counted."""
    from imblearn.over_sampling import SMOTE

    from pipeline.core import neighbours

    monkeypatch.setattr(neighbours, "_NEW_ROWS", LastAnswers(keep=6))
    calls = []
    original = SMOTE._fit_resample

    def counted(self, X, y):
        calls.append(len(y))
        return original(self, X, y)

    monkeypatch.setattr(SMOTE, "_fit_resample", counted)
    return calls


def test_smote_tomek_and_enn_reuse_smotes_rows_at_the_same_amount(
    split_data, resamples
):
    """SMOTE, SMOTE-Tomek and SMOTE-ENN at one amount and seed resample once, and
    each gets exactly the rows imbalanced-learn's own SMOTE makes; another amount
    or seed resamples again."""
    from imblearn.combine import SMOTEENN, SMOTETomek
    from imblearn.over_sampling import SMOTE

    X, y = split_data[0], split_data[1]
    config = load_config("default").evaluation
    n = int(4 * y.sum())

    def rows(method, n_minority, seed=7):
        sampler = make_sampler(method, config, random_state=seed, n_minority=n_minority)
        return sampler.fit_resample(X, y)

    smote = rows("smote", n)
    assert len(resamples) == 1
    tomek, enn = rows("smote_tomek", n), rows("smote_enn", n)
    assert len(resamples) == 1  # both from memory
    plain = SMOTE(
        sampling_strategy={1: n}, k_neighbors=config.smote_k_neighbors, random_state=7
    )
    for got, expected in zip(smote, plain.fit_resample(X, y), strict=True):
        np.testing.assert_array_equal(got, expected)
    for combined, got in ((SMOTETomek, tomek), (SMOTEENN, enn)):
        theirs = combined(smote=clone_of(plain), random_state=7).fit_resample(X, y)
        for a, b in zip(got, theirs, strict=True):
            np.testing.assert_array_equal(a, b)
    assert len(enn[1]) < len(smote[1])  # cleaning acted: not a vacuous comparison
    calls = len(resamples)
    rows("smote", n + 10)
    rows("smote", n, seed=8)
    assert len(resamples) == calls + 2


def test_a_sampler_drawing_from_a_random_state_object_is_never_remembered(
    split_data, resamples
):
    from pipeline.resampling.samplers import RememberedSMOTE

    X, y = split_data[0], split_data[1]
    rng = np.random.RandomState(0)
    a = RememberedSMOTE(sampling_strategy=0.5, random_state=rng).fit_resample(X, y)
    b = RememberedSMOTE(sampling_strategy=0.5, random_state=rng).fit_resample(X, y)
    assert len(resamples) == 2
    assert not np.array_equal(a[0], b[0])


def clone_of(estimator):
    from sklearn.base import clone

    return clone(estimator)
