"""Calendar days of a time column: the one definition of a day."""

import numpy as np
import pandas as pd

from pipeline.core.days import SECONDS_PER_DAY, day_numbers, day_totals


def test_seconds_since_the_start_count_whole_days():
    seconds = np.array([0, SECONDS_PER_DAY - 1, SECONDS_PER_DAY, 2.5 * SECONDS_PER_DAY])
    np.testing.assert_array_equal(day_numbers(seconds), [0, 0, 1, 2])


def test_a_timestamp_counts_its_own_date_in_its_own_time_zone():
    times = pd.to_datetime(["2026-01-01 23:59", "2026-01-02 00:01"]).tz_localize(
        "Europe/Paris"
    )
    days = day_numbers(pd.Series(times))
    assert days[1] - days[0] == 1  # midnight in Paris, not in UTC
    assert days[0] == (
        np.datetime64("2026-01-01") - np.datetime64("1970-01-01")
    ).astype(int)


def test_day_totals_count_the_rows_of_each_day():
    assert day_totals(np.array([3, 1, 3, 3])) == {1: 1, 3: 3}


def test_day_numbers_of_timestamps_and_of_seconds():
    stamps = pd.to_datetime(
        ["2026-01-01 23:59", "2026-01-02 00:00", "2026-01-03 12:00"]
    )
    days = day_numbers(stamps)
    assert list(days - days[0]) == [0, 1, 2]
    local = pd.Series(stamps).dt.tz_localize("Europe/Brussels")
    assert list(day_numbers(local) - days[0]) == [0, 1, 2]  # the local calendar day
    assert list(day_numbers(np.array([0.0, 86_399.5, 86_400.0, 172_800.0]))) == [
        0,
        0,
        1,
        2,
    ]
