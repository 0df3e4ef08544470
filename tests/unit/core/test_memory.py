"""Where a run's time and memory go: the resource meter."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pipeline.core import memory
from pipeline.core.memory import (
    LastAnswers,
    ResourceMeter,
    metered,
    metering,
    release_free_memory,
    rss_bytes,
)

GLIBC = getattr(memory._libc(), "malloc_trim", None) is not None


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


def test_a_stopped_run_knows_the_stages_it_was_in():
    """What a stopped run's message names: the stage it unwound (ended by the
    stop) and the one still running in another thread, in the order they
    started; a stage that ended normally is not among them."""
    started, release = threading.Event(), threading.Event()

    @metered("done")
    def done():
        pass

    @metered("fit")
    def fit():
        started.set()
        release.wait(10)

    @metered("train")
    def train():
        raise KeyboardInterrupt

    with metering(ResourceMeter()) as meter, ThreadPoolExecutor(1) as pool:
        done()
        future = pool.submit(fit)
        started.wait(10)
        with pytest.raises(KeyboardInterrupt):
            train()
        assert meter.running() == ["fit", "train"]
        release.set()
        future.result()
        assert meter.running() == ["train"]


def test_without_a_meter_a_metered_stage_just_runs():
    assert metered("x")(lambda a, b=1: a + b)(1, b=2) == 3


@pytest.mark.skipif(rss_bytes() is None or not GLIBC, reason="needs Linux glibc")
def test_memory_freed_below_the_heap_top_goes_back_to_the_system():
    # 4,000 blocks of 64 kB (below glibc's mmap threshold: they live in its
    # heap); the last one kept, so the heap's top cannot shrink on its own.
    blocks = [np.ones(8_000) for _ in range(4_000)]
    kept = blocks[-1]
    del blocks
    before = rss_bytes()
    release_free_memory()
    after = rss_bytes()
    assert before - after >= 200 * 2**20
    assert kept.sum() == 8_000


def test_a_metered_stage_hands_back_what_it_freed_even_when_it_fails(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "release_free_memory", lambda: calls.append(1))

    @metered("boom")
    def boom():
        raise ValueError("no")

    with pytest.raises(ValueError):
        boom()
    with metering(ResourceMeter(interval=0.02)):
        assert metered("ok")(lambda: 5)() == 5
    assert calls == [1, 1]


def test_last_answers_works_a_question_out_once_and_keeps_the_last_ones():
    answers, worked = LastAnswers(keep=2), []
    started = threading.Barrier(3)

    def work(q):
        worked.append(q)
        time.sleep(0.2)  # the other threads ask meanwhile
        return q * 10

    def ask(q):
        started.wait()
        return answers.answer(q, lambda: work(q))

    with ThreadPoolExecutor(3) as pool:
        assert list(pool.map(ask, [1, 1, 1])) == [10, 10, 10]
    assert worked == [1]
    answers.answer(2, lambda: work(2))
    answers.answer(1, lambda: work(1))  # remembered: now the newest
    answers.answer(3, lambda: work(3))  # 2 goes
    assert (answers.get(1), answers.get(2), answers.get(3)) == (10, None, 30)
    answers.forget()
    assert answers.get(1) is None and worked == [1, 2, 3]


def test_every_cache_of_the_process_is_emptied_in_one_place():
    """The end of a run empties every :class:`LastAnswers` of the process (a
    split's rows, GANs, new rows, neighbours) through one call."""
    from pipeline.core import neighbours
    from pipeline.core.memory import forget_answers, remembered
    from pipeline.core.neighbours import RememberedNeighbors
    from pipeline.features import rows
    from pipeline.gan import storage

    ours = LastAnswers(keep=2)
    ours.answer("a", lambda: 1)
    rows._LOADED.put("rows", {"x": 1})
    assert remembered() >= 2
    caches = {id(rows._LOADED), id(storage._LOADED), id(ours)}
    caches |= {id(RememberedNeighbors.answers), id(neighbours._NEW_ROWS)}
    assert caches <= {id(a) for a in memory._EVERY}
    forget_answers()
    assert remembered() == 0 and len(ours) == 0 and ours.get("a") is None
