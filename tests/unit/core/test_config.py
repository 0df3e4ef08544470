import pytest

from pipeline.core.config import run_seeds
from pipeline.core.errors import ConfigError
from pipeline.run.plan import load_config


@pytest.mark.parametrize(
    ("profile", "n_splits"), [("smoke", 1), ("default", 3), ("full", 10)]
)
def test_profiles_set_the_number_of_splits(profile, n_splits):
    config = load_config(profile)
    assert config.profile == profile
    assert config.split.n_splits == n_splits


def test_unknown_profile_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown profile 'fast'"):
        load_config("fast")


def test_a_typo_in_an_override_is_an_error_not_ignored():
    with pytest.raises(ConfigError, match="gan.stepz"):
        load_config("smoke", overrides={"gan": {"stepz": 3}})


def test_out_of_range_value_is_rejected():
    with pytest.raises(ConfigError, match="split.test_size"):
        load_config("smoke", overrides={"split": {"test_size": 0.9}})


def test_overrides_and_seed_apply():
    config = load_config("smoke", seed=5, overrides={"gan": {"steps": 7}})
    assert config.seed == 5 and config.gan.steps == 7
    assert config.split.n_splits == 1  # the rest of the profile is kept


def test_config_is_frozen():
    config = load_config("smoke")
    with pytest.raises(Exception, match="frozen"):
        config.seed = 3


def test_fingerprint_changes_with_any_value():
    assert load_config("smoke").fingerprint() == load_config("smoke").fingerprint()
    assert (
        load_config("smoke").fingerprint() != load_config("smoke", seed=1).fingerprint()
    )


def test_run_seeds_are_stable_and_independent():
    seeds = run_seeds(0, 3)
    assert seeds == run_seeds(0, 3)
    assert set(seeds) == {"split", "gan", "sampler", "detector", "rows", "halves"}
    # The rows and halves streams came later: the earlier streams' seeds are as
    # they were before them (so are every run's figures).
    assert {k: v for k, v in seeds.items() if k not in ("rows", "halves")} == {
        "split": [4088532484, 3581274545, 1008912121],
        "gan": [3953331965, 3613627650, 1016617948],
        "sampler": [1961512366, 1663335698, 1902154619],
        "detector": [2377455350, 1321936645, 361673562],
    }
    assert all(len(v) == 3 for v in seeds.values())
    # Adding splits never changes the seeds of the existing ones.
    assert {k: v[:3] for k, v in run_seeds(0, 5).items()} == seeds
    assert run_seeds(1, 3) != seeds
    flat = [s for v in seeds.values() for s in v]
    assert len(set(flat)) == len(flat)
