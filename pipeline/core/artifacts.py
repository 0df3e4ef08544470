"""Every save_*/load_* of the project, the atomic-write helper and the run manifest.

All files are written to a temporary file in the destination folder and moved into
place with :func:`os.replace`, so a reader (or a crash) never sees a torn file.
Formats are safe to load: JSON, Parquet, ``.keras`` (safe mode on), XGBoost UBJ.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.core.errors import ArtifactError
from pipeline.core.layout import MANIFEST_FILE
from pipeline.core.paths import check_output_table

_PACKAGES = (
    "fraudaug",
    "numpy",
    "pandas",
    "pyarrow",
    "scikit-learn",
    "imbalanced-learn",
    "xgboost",
    "tensorflow",
    "keras",
    "prefect",
    "jinja2",
    "pydantic",
)


def file_sha256(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """sha256 of a file's bytes, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it into place on success.

    On an exception the temporary file is removed and ``path`` is left as it was.
    ``suffix`` keeps libraries that infer the format from the name happy (``.keras``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=suffix or ".tmp", dir=path.parent
    )
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o644)  # mkstemp's 0600 would hide reports from other users
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_dir(
    path: str | Path, *, replace: bool | Callable[[], bool] = True
) -> Iterator[Path]:
    """Yield a temporary folder beside ``path``; rename it into place on success.

    An existing ``path`` is replaced, or kept as it is with ``replace=False`` (the
    new copy is then dropped); a callable ``replace`` is asked once the new copy
    is complete. On an exception the temporary folder is removed.
    """
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        yield tmp
        if path.exists() and not (replace() if callable(replace) else replace):
            shutil.rmtree(tmp)
            return
        shutil.rmtree(path, ignore_errors=True)
        tmp.rename(path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def file_lock(path: str | Path) -> Iterator[None]:
    """An exclusive advisory lock (``flock``) on ``path``, created if needed;
    blocks until free. Released when the block ends or the process dies."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def save_text(path: str | Path, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def save_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as indented, key-sorted JSON (NaN is refused: it is not JSON)."""
    return save_text(path, json.dumps(obj, indent=2, sort_keys=True, allow_nan=False))


def load_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ArtifactError(f"{path}: missing") from exc
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path}: unreadable JSON ({exc})") from exc


def save_parquet(path: str | Path, frame: pd.DataFrame) -> Path:
    with atomic_path(path, suffix=".parquet") as tmp:
        frame.to_parquet(tmp, index=False)
    return Path(path)


def load_parquet(path: str | Path, columns: list[str] | None = None) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"{path}: missing")
    return pd.read_parquet(path, columns=columns)


def load_parquet_rows(
    path: str | Path, rows: np.ndarray, columns: list[str] | None = None
) -> pd.DataFrame:
    """Rows ``rows`` (distinct positions in the file, in any order) of a Parquet
    file, as ``load_parquet(path, columns).iloc[rows]`` gives them (index
    0..n-1), reading only the row groups that hold them: a task's memory follows
    the rows it uses, not the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"{path}: missing")
    given = np.asarray(rows, dtype=np.int64)
    order = None
    if len(given) > 1 and (np.diff(given) <= 0).any():
        order = np.argsort(given, kind="stable")
    rows = given if order is None else given[order]
    with pq.ParquetFile(path) as parquet:
        meta = parquet.metadata
        starts = np.cumsum(
            [0] + [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        )
        bounds = np.searchsorted(rows, starts)
        pieces = []
        for g in range(meta.num_row_groups):
            lo, hi = bounds[g], bounds[g + 1]
            if lo == hi:
                continue
            group = parquet.read_row_group(g, columns=columns)
            pieces.append(group.take(pa.array(rows[lo:hi] - starts[g])))
        if not pieces:  # no row: the columns and their types, empty
            empty = parquet.schema_arrow.empty_table()
            pieces.append(empty if columns is None else empty.select(columns))
        table = pa.concat_tables(pieces)
    if order is not None:  # back to the order asked for
        table = table.take(pa.array(np.argsort(order, kind="stable")))
    return table.to_pandas()


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_commit(cwd: str | Path | None = None) -> str | None:
    """The commit of the source tree, with ``-dirty`` when it has local changes."""
    where = Path(cwd) if cwd else Path(__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}-dirty" if dirty else commit


def hash_artifacts(run_dir: str | Path) -> dict[str, str]:
    """sha256 of every file under ``run_dir`` (relative POSIX paths), but the
    manifest itself."""
    run_dir = Path(run_dir)
    return {
        p.relative_to(run_dir).as_posix(): file_sha256(p)
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name != MANIFEST_FILE and not p.name.startswith(".")
    }


def write_manifest(run_dir: str | Path, **fields: Any) -> Path:
    """Write ``manifest.json``: the given fields plus versions, commit and hashes."""
    run_dir = Path(run_dir)
    manifest = {
        **fields,
        "package_versions": package_versions(),
        "git_commit": git_commit(),
        "artifacts": hash_artifacts(run_dir),
    }
    return save_json(run_dir / MANIFEST_FILE, manifest)


def verify_artifact(run_dir: str | Path, relative: str) -> Path:
    """Return ``run_dir/relative`` after checking its hash against the manifest.

    Raises
    ------
    ArtifactError
        The manifest or the file is missing, or the file's sha256 differs.
    """
    run_dir = Path(run_dir)
    manifest = load_json(run_dir / MANIFEST_FILE)
    expected = manifest.get("artifacts", {}).get(relative)
    path = run_dir / relative
    if expected is None:
        raise ArtifactError(f"{path}: not listed in {run_dir / MANIFEST_FILE}")
    if not path.is_file():
        raise ArtifactError(f"{path}: missing")
    actual = file_sha256(path)
    if actual != expected:
        raise ArtifactError(
            f"{path}: sha256 {actual[:12]}… does not match the manifest's "
            f"{expected[:12]}…; the file was changed after the run"
        )
    return path


class TableWriter:
    """Append ``DataFrame`` chunks to a ``.csv`` or ``.parquet`` file that appears,
    complete, only when the writer closes without an error.

    Parquet gets one row group per chunk (pyarrow's ``ParquetWriter``), CSV one
    Kaggle-style quoted header and then the rows (pyarrow's ``CSVWriter``). Rows go
    to a hidden temporary file beside ``out``, renamed into place by
    :meth:`close`; an exception (or :class:`KeyboardInterrupt`) removes it and
    leaves ``out`` as it was. Every chunk must have the first one's columns and
    types.
    """

    def __init__(self, out: str | Path):
        self.out = check_output_table(out)
        self.suffix = self.out.suffix.lower()
        self.rows = 0
        self._writer = None
        self._schema = None
        self.out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{self.out.name}.", suffix=self.suffix, dir=self.out.parent
        )
        os.close(fd)
        os.chmod(tmp, 0o644)
        self._tmp = Path(tmp)

    def write(self, frame: pd.DataFrame) -> None:
        import pyarrow as pa

        table = pa.Table.from_pandas(frame, preserve_index=False, schema=self._schema)
        if self._writer is None:
            self._schema = table.schema
            if self.suffix == ".parquet":
                import pyarrow.parquet as pq

                # Dictionary pages only for columns that repeat (measured: on
                # float columns they make writing 4x slower and files larger).
                repeating = [
                    f.name for f in table.schema if not pa.types.is_floating(f.type)
                ]
                self._writer = pq.ParquetWriter(
                    self._tmp, table.schema, use_dictionary=repeating or False
                )
            else:
                import pyarrow.csv as pacsv

                self._writer = pacsv.CSVWriter(self._tmp, table.schema)
        self._writer.write_table(table)
        self.rows += len(frame)

    def close(self) -> Path:
        """Finish the file and move it into place; returns ``out``."""
        try:
            if self._writer is not None:
                self._writer.close()
            os.replace(self._tmp, self.out)
        except BaseException:
            self._tmp.unlink(missing_ok=True)
            raise
        return self.out

    def abort(self) -> None:
        """Drop the temporary file; ``out`` is left as it was."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_table(frame: pd.DataFrame, out: str | Path) -> Path:
    """Write ``.csv`` (Kaggle-style quoted header) or ``.parquet``, atomically."""
    with TableWriter(out) as writer:
        writer.write(frame)
    return writer.out
