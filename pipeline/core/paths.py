"""Checks of input and output paths that need nothing but the standard library.

The CLI runs them before it imports pandas, TensorFlow, XGBoost or Prefect, so a
wrong argument is refused in a fraction of a second; the readers and writers call
the same functions, so the rules live in one place. :func:`check_workers` has every
Dask worker of a cluster run :func:`probe_paths` (it takes the client; nothing of
Dask is imported here).
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.core.errors import ConfigError, DataValidationError

INPUT_KINDS = {".csv": "csv", ".gz": "csv", ".zip": "csv", ".parquet": "parquet"}
"""Transactions files by suffix (``.gz``: a gzipped CSV; ``.zip``: one CSV inside)."""
OUTPUT_SUFFIXES = (".csv", ".parquet")
"""Tables the project writes."""


def check_input_table(path: str | Path) -> str:
    """``"csv"`` or ``"parquet"`` for a readable transactions file.

    Raises
    ------
    DataValidationError
        The file is missing, a folder, empty, or of an unsupported type.
    """
    path = Path(path)
    if not path.exists():
        raise DataValidationError(f"{path}: no such file")
    if path.is_dir():
        raise DataValidationError(
            f"{path}: is a directory; expected a .csv, .csv.gz, .zip or .parquet file"
        )
    kind = INPUT_KINDS.get(path.suffix.lower())
    if kind is None:
        raise DataValidationError(
            f"{path}: unsupported file type {path.suffix or '(none)'!r}; "
            "expected .csv, .csv.gz, .zip or .parquet"
        )
    if path.stat().st_size == 0:
        raise DataValidationError(f"{path}: file is empty; expected a header")
    return kind


def nearest_existing(path: str | Path) -> Path:
    """``path`` or, when it does not exist yet, its nearest existing parent."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_writable(path: str | Path, what: str) -> Path:
    """Fail before any work when folder ``path`` cannot be created or written."""
    path = Path(path).absolute()
    existing = nearest_existing(path)
    if not existing.is_dir():
        raise ConfigError(
            f"{path}: cannot create the {what} folder: {existing} is a file"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{path}: the {what} folder is not writable ({existing})")
    return path


OUTPUT_ROOT_ENV = "FRAUDAUG_OUTPUT_ROOT"
"""The folder a served deployment's runs write inside (:func:`check_output_paths`)."""


def check_output_paths(root: str | Path | None, **paths: str | Path) -> None:
    """Refuse output folders outside ``root`` (``fraudaug serve`` sets it to the
    folder it was started in), so a deployment parameter such as
    ``reports_dir=/etc`` or ``../..`` cannot write anywhere else."""
    if not root:
        return
    base = Path(root).resolve()
    for name, path in paths.items():
        # Where the run would really write: relative paths from the working folder,
        # symbolic links followed.
        if not Path(path).resolve().is_relative_to(base):
            raise ConfigError(
                f"{name}={str(path)!r} is outside the output root {base} "
                f"({OUTPUT_ROOT_ENV}); choose a folder inside it"
            )


def check_output_table(path: str | Path) -> Path:
    """``path`` if it names a ``.csv`` or ``.parquet`` file that can be written
    (its folder may not exist yet); it is replaced whole when the writer finishes.

    Raises
    ------
    ConfigError
        Another suffix, a folder in its place, or a folder that cannot be written.
    """
    path = Path(path)
    if path.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ConfigError(f"{path}: expected a .csv or .parquet file name")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory; expected a file name")
    check_writable(path.parent, "output")
    return path


def probe_paths(read: list[str], write: list[str]) -> list[str]:
    """What this process cannot do of: read the first byte of each file in
    ``read``, create and remove a file in each folder of ``write``. Returns one
    line per failure (empty when all is well).

    Run on every Dask worker before a run hands them paths: tasks pass file paths,
    so each worker must see the input, the cache and the run folder at the same
    paths as the flow.
    """
    problems = []
    for path in read:
        try:
            with open(path, "rb") as fh:
                fh.read(1)
        except OSError as exc:
            problems.append(f"cannot read {path} ({exc.strerror or exc})")
    for folder in write:
        probe = Path(folder) / f".fraudaug-probe-{os.getpid()}-{os.urandom(4).hex()}"
        try:
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            problems.append(f"cannot write in {folder} ({exc.strerror or exc})")
    return problems


def check_workers(client, *, read: list[str], write: list[str]) -> None:
    """Fail at once, with one line naming the worker and the path, when a Dask
    worker cannot read the input or write the run folder (tasks pass paths: every
    worker needs them at the same place, e.g. one shared filesystem mounted at the
    same path on every machine)."""
    answers = client.run(probe_paths, read, write)
    for worker, problems in sorted(answers.items()):
        if problems:
            relative = any(not Path(p).is_absolute() for p in (*read, *write))
            hint = (
                "; relative paths are resolved in each worker's working folder: pass "
                "absolute ones"
                if relative
                else ""
            )
            raise ConfigError(
                f"Dask worker {worker}: {problems[0]}; every worker must see the "
                "input, the cache and the run folder at the same paths (a shared "
                f"filesystem mounted at the same path on every machine){hint}"
            )
