"""Scoring transactions with a registered detector (default: the champion),
fetched from the registry, checked file by file and loaded once
(``fraudaug score``)."""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING

from pipeline.registry.serving import Detector
from pipeline.registry.store import (
    DEFAULT_MODEL_URI,
    fetch_version,
    missing_model,
    parse_model_uri,
)

if TYPE_CHECKING:
    import pandas as pd


class RegisteredScorer:
    """A registered detector (default: the champion), fetched, checked and loaded
    once, scoring batch after batch (:class:`pipeline.registry.serving.Detector`:
    the served model scores with the same code).

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
            self.detector = Detector.load(found["path"])
        self.champion = found
        self.schema = self.detector.schema
        self.threshold = self.detector.threshold
        self.unseen: dict[str, int] = {}
        """Rows with a category never seen in training, per column, so far."""

    def score(
        self,
        frame: pd.DataFrame,
        first_row: int = 0,
        explain: int = 0,
        explain_flagged_only: bool = False,
    ) -> pd.DataFrame:
        """The schema's id columns present in ``frame``, then ``row``
        (``first_row`` + position), ``fraud_probability``, ``flagged`` (at the
        detector's threshold) and ``explain`` reasons for each row of ``frame``
        (validated by :attr:`schema`; ``explain_flagged_only``: for the flagged
        rows). A category never seen in training is scored as "unseen" and
        counted in :attr:`unseen`."""
        return self.detector.score(
            frame,
            first_row,
            explain=explain,
            unseen=self.unseen,
            explain_flagged_only=explain_flagged_only,
        )
