"""Process-wide memory settings for a run."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

_M_ARENA_MAX = -8  # glibc's mallopt parameter number


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
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_ARENA_MAX, int(os.environ["MALLOC_ARENA_MAX"])))
