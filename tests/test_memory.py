"""Where a run's time and memory go: the resource meter."""

import time

import pytest

from pipeline.memory import ResourceMeter, metered, metering, rss_bytes


@pytest.mark.skipif(rss_bytes() is None, reason="needs /proc (Linux)")
def test_each_stage_gets_its_calls_seconds_and_peak_memory():
    @metered("big")
    def big():
        block = bytearray(300 * 2**20)  # 300 MB, touched
        block[::4096] = b"x" * len(block[::4096])
        time.sleep(0.3)
        return len(block)

    @metered("small")
    def small(seconds):
        time.sleep(seconds)

    with metering(ResourceMeter(interval=0.02)) as meter:
        assert big() == 300 * 2**20
        small(0.1)
        small(0.2)
    summary = meter.summary()
    stages = {s["stage"]: s for s in summary["stages"]}
    assert list(stages) == ["big", "small"]
    assert stages["small"]["calls"] == 2
    assert stages["small"]["seconds"] == pytest.approx(0.3, abs=0.1)
    assert stages["small"]["longest_seconds"] == pytest.approx(0.2, abs=0.07)
    assert stages["big"]["peak_rss_mb"] >= stages["small"]["peak_rss_mb"] + 200
    assert summary["peak_rss_mb"] == stages["big"]["peak_rss_mb"]


def test_without_a_meter_a_metered_stage_just_runs():
    assert metered("x")(lambda a, b=1: a + b)(1, b=2) == 3
