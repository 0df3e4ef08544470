"""Helpers of the commands that stream rows (``fraudaug generate``, ``score``).

:class:`RowProgress`: on a terminal a rich progress bar on stderr (rows, rows/s,
ETA); otherwise (a log file, CI, a pipe) a plain log line every ``every_s`` seconds
and one at the end. :func:`prefetched`: produce the next chunks in a background
thread while the caller consumes the current one.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")

CHUNK_ROWS = 32_768
"""Rows per chunk of every streaming reader and writer (``fraudaug validate``,
``generate``, ``score``): a Parquet row group of about 8 MB."""
_END = object()


def prefetched(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """The items of ``items``, in order, produced by a background thread up to
    ``depth`` ahead of the consumer.

    Reading and parsing (pyarrow), prediction (XGBoost) and the generator network
    (TensorFlow) release the GIL, so producing the next chunk overlaps consuming
    this one (``benchmarks`` measures the rows/s). An exception of the producer
    is raised in the consumer; when the consumer stops early (an error,
    Ctrl-C), the producer stops at its next item.
    """
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry) -> bool:
        while not stop.is_set():
            try:
                ready.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((True, item)):
                    return
            put((True, _END))
        except BaseException as exc:  # handed to the consumer, raised there
            put((False, exc))

    thread = threading.Thread(target=produce, name="fraudaug-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            ok, item = ready.get()
            if not ok:
                raise item
            if item is _END:
                return
            yield item
    finally:
        stop.set()


class RowProgress:
    """Report rows done out of ``total`` (or a ``fraction`` of an input whose row
    count is not known in advance, e.g. bytes of a CSV read so far).

    Use as a context manager; call :meth:`advance` after each chunk.
    """

    def __init__(
        self,
        description: str,
        total: int | None = None,
        *,
        every_s: float = 10.0,
        terminal: bool | None = None,
    ):
        self.description = description
        self.total = total
        self.every_s = every_s
        self.rows = 0
        self.fraction = 0.0
        self._terminal = sys.stderr.isatty() if terminal is None else terminal
        self._started = time.perf_counter()
        self._last_line = self._started
        self._bar = None
        self._task = None

    def __enter__(self) -> RowProgress:
        if self._terminal:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[rows]:,} rows"),
                TextColumn("{task.fields[rate]:,.0f} rows/s"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(
                self.description, total=1.0, rows=0, rate=0.0
            )
        return self

    def advance(self, rows: int, fraction: float | None = None) -> None:
        self.rows += rows
        if fraction is not None:
            self.fraction = min(max(fraction, 0.0), 1.0)
        elif self.total:
            self.fraction = min(self.rows / self.total, 1.0)
        now = time.perf_counter()
        if self._bar is not None:
            self._bar.update(
                self._task, completed=self.fraction, rows=self.rows, rate=self.rate
            )
        elif now - self._last_line >= self.every_s:
            self._last_line = now
            logger.info("%s: %s", self.description, self._line(now))

    @property
    def rate(self) -> float:
        elapsed = time.perf_counter() - self._started
        return self.rows / elapsed if elapsed > 0 else 0.0

    def _line(self, now: float) -> str:
        elapsed = now - self._started
        of = f"/{self.total:,}" if self.total else ""
        text = f"{self.rows:,}{of} rows ({self.fraction:.0%}), {self.rate:,.0f} rows/s"
        if 0 < self.fraction < 1:
            text += f", ETA {elapsed * (1 - self.fraction) / self.fraction:,.0f} s"
        return text

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif exc_type is None:
            logger.info(
                "%s: done, %s rows in %.1f s (%s rows/s)",
                self.description,
                f"{self.rows:,}",
                time.perf_counter() - self._started,
                f"{self.rate:,.0f}",
            )
