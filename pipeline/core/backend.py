"""TensorFlow, loaded once and quietly, and the device the GAN runs on.

TensorFlow's native libraries log through absl before anything can configure them:
on a machine without a GPU every import prints ``Could not find cuda drivers`` twice
and the first device query an ``E0000 ... failed call to cuInit`` line, whatever
``TF_CPP_MIN_LOG_LEVEL`` says (tensorflow/tensorflow#100442). :func:`load_tensorflow`
therefore imports TensorFlow and Keras and queries the devices with the process's
native stderr (file descriptor 2) pointed at a temporary file; afterwards it passes
on every captured line that is not one of TensorFlow's native log lines (another
thread's log record, a Python warning), so nothing of the project's own is lost.

Set ``FRAUDAUG_TF_LOGS=1`` (``fraudaug --verbose`` does) to see TensorFlow's logs.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from types import ModuleType

VERBOSE_ENV = "FRAUDAUG_TF_LOGS"
"""Set to 1 to let TensorFlow's native and C++ logs through (debugging)."""

# absl's prefix (``I0000 00:00:1796.5 3034 cudart_stub.cc:31]``), TSL's older one
# (``2025-09-17 14:44:05.157831: I external/.../cudart_stub.cc:32]``) and absl's
# notice that logging is not initialised.
_NATIVE_LINE = re.compile(
    r"^(?:WARNING: All log messages before absl::InitializeLog\(\)"
    r"|[IWEF]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+\s+\S+:\d+\]"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] \S+:\d+\])"
)

_lock = threading.Lock()
_tf: ModuleType | None = None


def tensorflow_logs_wanted() -> bool:
    return os.environ.get(VERBOSE_ENV, "").strip().lower() not in ("", "0", "false")


def is_native_log_line(line: str) -> bool:
    """True for a line written by TensorFlow's native logging (absl or TSL)."""
    return bool(_NATIVE_LINE.match(line))


@contextlib.contextmanager
def _native_stderr_filtered() -> Iterator[None]:
    """Send fd 2 to a temporary file; then replay what is not TensorFlow's."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode("utf-8", errors="replace")
    kept = [
        line for line in text.splitlines(keepends=True) if not is_native_log_line(line)
    ]
    if kept:
        os.write(2, "".join(kept).encode())


def load_tensorflow() -> ModuleType:
    """Import TensorFlow and Keras (once per process) without their native log lines
    and return ``tensorflow``.

    Every TensorFlow import of the project goes through here (``pipeline.gan``
    calls it first), so the CLI, the flow, deployment runs, Dask workers and the
    benchmarks are equally quiet.
    """
    global _tf
    if _tf is not None:
        return _tf
    with _lock:
        if _tf is not None:
            return _tf
        verbose = tensorflow_logs_wanted()
        if verbose:
            os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
        else:
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        quiet = contextlib.nullcontext() if verbose else _native_stderr_filtered()
        with quiet:
            import keras  # noqa: F401  (Keras' own import logs nothing natively)
            import tensorflow as tf

            # The device query initialises CUDA, which logs cuInit's failure on a
            # machine without a GPU: do it here, inside the quiet window.
            tf.config.list_physical_devices("GPU")
        # TensorFlow's Python logger keeps its warnings: they are about our code.
        _tf = tf
    return _tf


def forget_graph_functions() -> None:
    """Drop the graphs TensorFlow keeps for good once a training is over, when
    this process has loaded TensorFlow (a no-op otherwise).

    Each GAN training traces its steps; ``tf.custom_gradient`` in graph mode
    (Keras' optimizer reaches it through the distribution strategy's
    ``all_reduce``) registers a gradient function per trace in TensorFlow's
    global gradient registry, and that function holds its whole graph
    (TensorFlow issues 27492 and 97697: fixed upstream after 2.21). A process
    running the flow night after night kept about 50 graphs a night, 6 MB of
    Python objects and 30-50 MB of resident memory (``benchmarks/long_lived.py``).
    The entries are needed only while a gradient is traced: at the end of a run
    none is. Keras' ``clear_session`` then drops its global state (the layers a
    thread built, for their names) and TensorFlow's global default graph, where
    ``tf.data`` adds the functions of every pipeline it builds.
    """
    if _tf is None:
        return
    from pipeline.core.compat import tensorflow_forgets_custom_gradients

    tensorflow_forgets_custom_gradients()
    import keras

    with contextlib.suppress(AssertionError):  # a graph being built: left as is
        keras.backend.clear_session(free_memory=False)


def describe_device() -> str:
    """Where TensorFlow runs the GAN, in the project's words: ``CPU`` or
    ``GPU 0: <name>`` (the first visible GPU; TensorFlow places ops there)."""
    tf = load_tensorflow()
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "CPU"
    try:
        name = tf.config.experimental.get_device_details(gpus[0]).get("device_name")
    except (RuntimeError, ValueError):
        name = None
    more = f" (+{len(gpus) - 1} more)" if len(gpus) > 1 else ""
    return f"GPU 0: {name or gpus[0].name}{more}"
