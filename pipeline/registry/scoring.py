"""Scoring transactions with a registered detector (default: the champion),
fetched from the registry, checked file by file and loaded once
(``fraudaug score``)."""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING, Any

from pipeline.registry.store import (
    DEFAULT_MODEL_URI,
    fetch_version,
    load_detector,
    missing_model,
    parse_model_uri,
)

if TYPE_CHECKING:
    import pandas as pd


class RegisteredScorer:
    """A registered detector (default: the champion), fetched, checked and loaded
    once, scoring batch after batch.

    Raises
    ------
    PipelineError
        There is no such version (e.g. no champion yet).
    ArtifactError
        A file is missing, changed or unexpected.
    """

    def __init__(
        self, model_uri: str = DEFAULT_MODEL_URI, tracking_uri: str | None = None
    ):
        from pipeline.registry.tracking import resolve_tracking_uri

        uri = resolve_tracking_uri(tracking_uri)
        name, alias, version = parse_model_uri(model_uri)
        with tempfile.TemporaryDirectory(prefix="fraudaug-model-") as tmp:
            found = fetch_version(uri, name, alias=alias, version=version, dst=tmp)
            if found is None:
                raise missing_model(model_uri, alias, f"not in {uri}")
            self.model, self.transformer = load_detector(found["path"])
        self.champion = found
        self.schema = self.transformer.schema
        self.threshold = float(found["threshold"])
        self.unseen: dict[str, int] = {}
        """Rows with a category never seen in training, per column, so far."""

    def score(self, frame: pd.DataFrame, first_row: int = 0) -> pd.DataFrame:
        """The schema's id columns present in ``frame``, then ``row``
        (``first_row`` + position), ``fraud_probability`` and ``flagged`` (at the
        detector's threshold) for each row of ``frame`` (validated by
        :attr:`schema`). A category never seen in training is scored as "unseen"
        and counted in :attr:`unseen`."""
        import numpy as np
        import pandas as pd

        X = self.transformer.transform(frame, unseen=self.unseen)
        probability = self.model.predict_proba(X)[:, 1]
        ids = {c: frame[c].to_numpy() for c in self.schema.id_columns if c in frame}
        return pd.DataFrame(
            {
                **ids,
                "row": np.arange(first_row, first_row + len(frame), dtype=np.int64),
                "fraud_probability": probability.astype(np.float64),
                "flagged": probability >= self.threshold,
            }
        )


def score_transactions(
    frame: pd.DataFrame,
    model_uri: str = DEFAULT_MODEL_URI,
    tracking_uri: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Fraud probability and flag (at the detector's threshold) for each row."""
    scorer = RegisteredScorer(model_uri, tracking_uri)
    return scorer.score(frame), scorer.champion
