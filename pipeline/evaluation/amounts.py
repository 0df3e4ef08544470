"""How many new rows each sampler gets: the amount chosen on validation rows
(per split or pooled over splits), and the fits that failed at some amount."""

from __future__ import annotations

import numpy as np

from pipeline.evaluation.records import AmountChoice, Failure

AMOUNT_RULES = ("per_split", "pooled")


def separate_failures(fits: list[dict]) -> tuple[list[dict], list[dict]]:
    """The fits a comparison can use, and the fits that failed.

    ``fits``: ``{"method", "split", "grid", "failed"?}`` per method and split
    (``failed``: ``{"n_minority", "reason"}`` per amount that raised). A method
    with a split where every amount failed is left out whole, since the paired
    comparisons need every split; a method that lost only some amounts keeps the
    others.

    Returns
    -------
    fits : list of dict
        The usable fits.
    failures : list of dict
        ``{"method", "split", "n_minority", "reason", "left_out"}`` per failed
        amount (``left_out``: the method is out of the comparison).
    """
    left_out = {f["method"] for f in fits if not f["grid"]}
    failures = [
        {
            "method": fit["method"],
            "split": fit["split"],
            **failed,
            "left_out": fit["method"] in left_out,
        }
        for fit in fits
        for failed in fit.get("failed", [])
    ]
    failures.sort(key=lambda f: (f["method"], f["split"]))
    for failure in failures:
        Failure.model_validate(failure)  # every key has its owner
    return [f for f in fits if f["method"] not in left_out], failures


def failed_methods(failures: list[dict]) -> dict[str, str]:
    """Each method left out of the comparison and its first reason."""
    out: dict[str, str] = {}
    for failure in failures:
        if failure["left_out"]:
            out.setdefault(
                failure["method"], f"split {failure['split']}: {failure['reason']}"
            )
    return out


def failures_line(failures: list[dict]) -> str:
    """What a run with failed fits says, in one line (the command's last line,
    the flow's warning, the alert): each method left out and its first reason,
    else how many fits failed at some amounts."""
    left_out = failed_methods(failures)
    if left_out:
        return "; ".join(f"{m} left out ({why})" for m, why in left_out.items())
    methods = ", ".join(sorted({f["method"] for f in failures}))
    return (
        f"{len(failures)} fit(s) of {methods} failed at some amounts "
        "(compared at the others)"
    )


def _search_entry(record: dict) -> dict:
    entry = {
        "sampling_strategy": record["sampling_strategy"],
        "n_added": record["n_added"],
        "validation_auprc": record["validation_auprc"],
        "test_auprc": record["auprc"],
    }
    if record.get("validation_precision_top_k") is not None:
        entry["validation_precision_top_k"] = record["validation_precision_top_k"]
        entry["test_precision_top_k"] = record.get("precision_top_k")
    return entry


def _chosen_positions(
    grids: dict[int, list[dict]], rule: str, metric: str = "auprc", half=None
) -> dict[int, int] | None:
    """Grid position chosen on each split, by the validation rows' ``metric``
    (ties: the smaller amount), or by one of their halves' (``half`` 0 or 1).
    ``pooled`` needs the same number of amounts on every split."""

    def value(record: dict) -> float:
        if half is None:
            return record[f"validation_{metric}"]
        return record["validation_halves"][metric][half]

    if rule == "per_split":
        return {
            split: int(np.argmax([value(r) for r in grid]))
            for split, grid in grids.items()
        }
    lengths = {len(grid) for grid in grids.values()}
    if len(lengths) != 1:
        return None
    mean = np.mean([[value(r) for r in grid] for grid in grids.values()], axis=0)
    return dict.fromkeys(grids, int(np.argmax(mean)))


def _cross_fitted(
    grids: dict[int, list[dict]], rule: str
) -> dict[int, dict[str, float]]:
    """Per split, per metric its halves measure on every amount of every split:
    each half's figure at the amount the other half's chose by ``rule`` (the
    same rule as the amount's own), the two averaged: a figure of rows that did
    not choose it. Empty without halves."""
    records = [r for grid in grids.values() for r in grid]
    if not records or any(not r.get("validation_halves") for r in records):
        return {}
    metrics = [
        m
        for m in records[0]["validation_halves"]
        if all(None not in (r["validation_halves"].get(m) or [None]) for r in records)
    ]
    out: dict[int, dict[str, float]] = {split: {} for split in grids}
    for metric in metrics:
        by = [
            _chosen_positions(grids, rule, metric, half)
            or _chosen_positions(grids, "per_split", metric, half)
            for half in (0, 1)
        ]
        for split, grid in grids.items():
            # the second half at the first's choice, the first at the second's
            other = grid[by[0][split]]["validation_halves"][metric][1]
            first = grid[by[1][split]]["validation_halves"][metric][0]
            out[split][metric] = float((other + first) / 2)
    return out


def choose_amounts(
    fits: list[dict], rule: str = "per_split", metric: str = "auprc"
) -> tuple[list[dict], dict]:
    """Each method at the amount of new minority rows its validation rows prefer.

    Parameters
    ----------
    fits : list of dict
        ``{"method", "split", "grid": [record, ...]}`` per method and split, the
        grid's records in increasing amount (``none``/``class_weight``: one).
    rule : {"per_split", "pooled"}
        ``per_split``: the amount with the best validation ``metric`` on that
        split. ``pooled``: the amount with the best mean validation ``metric`` over
        the splits, used on every split. Test rows never take part.
    metric : {"auprc", "precision_top_k"}
        The primary metric (each record holds ``validation_<metric>``).

    Returns
    -------
    records : list of dict
        One per method and split: the chosen record, with ``amount_search`` (the
        whole grid: ``sampling_strategy``, ``n_added``, ``validation_auprc``,
        ``test_auprc``, and the precision top-k pair when measured),
        ``amount_rule`` and ``validation_crossfit`` (per metric, the validation
        figure of the amount the *other* half of the validation rows chose, the
        halves averaged: what the challenger is chosen by; ``None`` without
        halves).
    choice : dict
        ``rule``, ``metric``, and per resampling method and rule the test
        ``metric`` mean and sd over splits and the amounts chosen (how steady each
        rule is).
    """
    by_method: dict[str, dict[int, list[dict]]] = {}
    for fit in fits:
        by_method.setdefault(fit["method"], {})[fit["split"]] = fit["grid"]
    records = []
    choice: dict = {"rule": rule, "metric": metric, "methods": {}}
    for method, grids in by_method.items():
        positions = _chosen_positions(grids, rule, metric) or _chosen_positions(
            grids, "per_split", metric
        )
        crossfit = _cross_fitted(grids, rule)
        for split, grid in sorted(grids.items()):
            records.append(
                {
                    **grid[positions[split]],
                    "validation_crossfit": crossfit.get(split) or None,
                    "amount_search": [_search_entry(r) for r in grid],
                    "amount_rule": rule,
                }
            )
        if max(len(g) for g in grids.values()) < 2:
            continue
        entry = {}
        for name in AMOUNT_RULES:
            chosen = _chosen_positions(grids, name, metric)
            if chosen is None:
                continue
            test = np.array([grids[s][chosen[s]][metric] for s in sorted(grids)])
            entry[name] = {
                f"test_{metric}_mean": float(test.mean()),
                f"test_{metric}_sd": float(test.std(ddof=1)) if len(test) > 1 else None,
                "n_added": [grids[s][chosen[s]]["n_added"] for s in sorted(grids)],
            }
        choice["methods"][method] = entry
    AmountChoice.model_validate(choice)  # every key has its owner
    return records, choice
