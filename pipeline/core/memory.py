"""Process-wide memory settings for a run."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_M_ARENA_MAX = -8  # glibc's mallopt parameter number


@functools.cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        return None if name is None else ctypes.CDLL(name)
    except OSError:
        return None


def limit_malloc_arenas(n: int = 2) -> bool:
    """Cap glibc's malloc arenas at ``n`` for this process and its children.

    glibc gives each thread that allocates concurrently its own arena (up to 8 per
    core) and keeps freed memory in it. A run has many such threads (two task
    workers, the GAN's thread, TensorFlow's and XGBoost's pools); two arenas lower
    a run's peak memory in the same time (``benchmarks``). Call it before threads
    start. Returns whether the cap
    was applied (``False`` off glibc, e.g. on macOS).
    """
    os.environ.setdefault("MALLOC_ARENA_MAX", str(n))  # children read it at start
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(_M_ARENA_MAX, int(os.environ["MALLOC_ARENA_MAX"])))


def release_free_memory() -> None:
    """Hand the memory this process has freed back to the system.

    Freed memory stays with its allocator: Arrow's pool (mimalloc) keeps what a
    Parquet read used, glibc keeps what numpy, pandas and scikit-learn freed
    in its arenas below their top. After preprocessing a 22M-row table the
    process held 2,315 MiB, 301 MiB once both gave theirs back (1,117 MiB of
    it Arrow's); each stage and fit after it started from that floor. Called
    when a stage, a fit or a split's read ends (:func:`metered`,
    :func:`pipeline.run.fit.stage_fit_detector`,
    :meth:`pipeline.features.rows.SplitInputs.load`): what it hands
    back is free, so no result changes, only the resident memory. A no-op where
    neither applies (no pyarrow loaded, no glibc ``malloc_trim``)."""
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)


class LastAnswers:
    """The last ``keep`` answers to questions asked in this process, each worked
    out once even when threads ask it at the same time: a split's rows, a GAN,
    SMOTE's new rows, a neighbour search. Asked again, an answer is given from
    memory (it is the caller's to keep it unchanged: read-only arrays or copies);
    the oldest one asked goes when a new one comes beyond ``keep``.

    Every instance is one of the process's caches: :func:`forget_answers`
    empties them all (the end of every run does, so that a long-lived process —
    ``fraudaug serve``, several runs in one interpreter — holds nothing of a
    finished run), :func:`remembered` counts what they hold."""

    def __init__(self, keep: int):
        self.keep = keep
        self._answers: OrderedDict = OrderedDict()
        self._asking: dict = {}
        self._lock = threading.Lock()
        _EVERY.add(self)

    def __len__(self) -> int:
        with self._lock:
            return len(self._answers)

    def answer(self, question: Hashable, work: Callable[[], Any]) -> Any:
        """The answer to ``question``: remembered, or ``work()`` remembered."""
        with self.asking(question):
            found = self.get(question)
            if found is None:
                found = work()
                self.put(question, found)
            return found

    @contextlib.contextmanager
    def asking(self, question: Hashable) -> Iterator[None]:
        """Hold ``question``: another thread asking it waits until it is answered
        (for callers that build an answer up with :meth:`get` and :meth:`put`)."""
        with self._lock:
            lock = self._asking.setdefault(question, threading.Lock())
        with lock:
            yield

    def get(self, question: Hashable) -> Any:
        """The remembered answer, or ``None``."""
        with self._lock:
            found = self._answers.get(question)
            if found is not None:
                self._answers.move_to_end(question)
            return found

    def put(self, question: Hashable, answer: Any) -> None:
        with self._lock:
            self._answers[question] = answer
            self._answers.move_to_end(question)
            while len(self._answers) > self.keep:
                gone, _ = self._answers.popitem(last=False)
                self._asking.pop(gone, None)

    def forget(self) -> None:
        with self._lock:
            self._answers.clear()
            self._asking.clear()


_EVERY: weakref.WeakSet[LastAnswers] = weakref.WeakSet()
"""The process's caches (:class:`LastAnswers`)."""


def forget_answers() -> None:
    """Empty every cache of this process (:class:`LastAnswers`), and the
    functions TensorFlow's global graph keeps
    (:func:`pipeline.core.backend.forget_graph_functions`)."""
    from pipeline.core.backend import forget_graph_functions

    for answers in list(_EVERY):
        answers.forget()
    forget_graph_functions()


def remembered() -> int:
    """How many answers the process's caches hold."""
    return sum(len(answers) for answers in list(_EVERY))


def rss_bytes() -> int | None:
    """This process's resident memory now (Linux; ``None`` elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class ResourceMeter:
    """Where a run's time and memory go: a daemon thread samples the process's
    resident memory every ``interval`` seconds, and each stage run under
    :meth:`span` records when it ran; :meth:`summary` gives, per stage, its calls,
    seconds (total and longest call) and the peak resident memory while it ran
    (stages that ran at the same time share a peak: two fits run at once)."""

    def __init__(self, interval: float = 0.25):
        self.interval = interval
        self._samples: list[tuple[float, int]] = []
        self._spans: list[tuple[str, float, float]] = []
        self._open: list[tuple[str, float]] = []
        self._raised: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> ResourceMeter:
        if rss_bytes() is not None:
            self._thread = threading.Thread(
                target=self._sample, name="fraudaug-meter", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _sample(self) -> None:
        while not self._stop.is_set():
            value = rss_bytes()
            if value is not None:
                with self._lock:
                    self._samples.append((time.monotonic(), value))
            self._stop.wait(self.interval)

    @contextlib.contextmanager
    def span(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        with self._lock:
            self._open.append((name, start))
        try:
            yield
        except BaseException:
            with self._lock:
                self._raised.append((name, start))
            raise
        finally:
            with self._lock:
                self._open.remove((name, start))
                self._spans.append((name, start, time.monotonic()))

    def running(self) -> list[str]:
        """The stages running now or ended by an exception (where a stopped
        run was: the stage it unwound and the fits still running beside it),
        each once, in the order they started."""
        with self._lock:
            spans = sorted(self._open + self._raised, key=lambda span: span[1])
        return list(dict.fromkeys(name for name, _ in spans))

    def summary(self) -> dict[str, Any]:
        """``peak_rss_mb`` (of the run so far) and ``stages`` (``stage``,
        ``calls``, ``seconds``, ``longest_seconds``, ``peak_rss_mb``), in the order
        the stages first ran."""
        import numpy as np

        with self._lock:
            samples, spans = list(self._samples), list(self._spans)
        times = np.array([t for t, _ in samples]) if samples else np.zeros(0)
        values = np.array([v for _, v in samples]) if samples else np.zeros(0)

        def peak(start: float, end: float) -> float | None:
            inside = values[(times >= start) & (times <= end)] if len(times) else []
            if not len(inside):  # shorter than a sample: the nearest one
                if not len(times):
                    return None
                inside = values[[int(np.argmin(np.abs(times - end)))]]
            return round(float(inside.max()) / 2**20, 1)

        stages: dict[str, dict[str, Any]] = {}
        for name, start, end in spans:
            entry = stages.setdefault(
                name,
                {"stage": name, "calls": 0, "seconds": 0.0, "longest_seconds": 0.0},
            )
            entry["calls"] += 1
            entry["seconds"] = round(entry["seconds"] + end - start, 2)
            entry["longest_seconds"] = round(
                max(entry["longest_seconds"], end - start), 2
            )
            value = peak(start, end)
            if value is not None:
                entry["peak_rss_mb"] = max(entry.get("peak_rss_mb", 0.0), value)
        return {
            "peak_rss_mb": round(float(values.max()) / 2**20, 1)
            if len(values)
            else None,
            "interval_seconds": self.interval,
            "stages": list(stages.values()),
        }


_METER: ResourceMeter | None = None


@contextlib.contextmanager
def metering(meter: ResourceMeter | None) -> Iterator[ResourceMeter | None]:
    """Make ``meter`` the one :func:`metered` stages report to (started and
    stopped here)."""
    global _METER
    previous, _METER = _METER, meter
    if meter is not None:
        meter.start()
    try:
        yield meter
    finally:
        if meter is not None:
            meter.stop()
        _METER = previous


def metered(name: str) -> Callable[[F], F]:
    """Run a stage under the current meter's :meth:`ResourceMeter.span` (none
    without one, e.g. in a Dask worker process); what it freed is handed back
    when it ends (:func:`release_free_memory`)."""

    def wrap(fn: F) -> F:
        return _Metered(name, fn)  # type: ignore[return-value]

    return wrap


class _Metered:
    """A stage run under the current meter (:func:`metered`). A class rather than
    a closure so that it pickles by reference to its stage, as a Dask task runner
    sends it to its workers (a closure would be pickled by value, with this
    module's meter and its lock)."""

    def __init__(self, name: str, fn: Callable[..., Any]):
        self.name = name
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        meter = _METER
        try:
            if meter is None:
                return self.fn(*args, **kwargs)
            with meter.span(self.name):
                return self.fn(*args, **kwargs)
        finally:
            release_free_memory()  # what the stage freed, for the next ones

    def __reduce__(self):
        return (_Metered, (self.name, self.fn))


NEIGHBOUR_WORKING_MB = 64
"""scikit-learn's ``working_memory`` (MB) for the samplers' and fidelity's
neighbour searches. Its default, 1,024 MB, is the size of each chunk of the
distance matrix a brute-force search fills (SMOTENC's sparse rows take that
path): on 23,000 frauds SMOTENC peaked at 2.1 GB with it and 0.25 GB at 64 MB,
with the same neighbours (a row's distances do not depend on the chunk it is
in) and in less time (``benchmarks``)."""


@contextlib.contextmanager
def bounded_neighbour_search() -> Iterator[None]:
    """Run neighbour searches in this thread in chunks of
    :data:`NEIGHBOUR_WORKING_MB`."""
    import sklearn

    with sklearn.config_context(working_memory=NEIGHBOUR_WORKING_MB):
        yield
