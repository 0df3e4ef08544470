"""Which generator to keep, and which of its rows to drop.

Model selection: at each check the generator's rows (and its moving average's) are
scored against held-out real frauds with the C2ST; the best weights seen are kept,
not simply the last. The classifier filter: a C2ST classifier fitted on the real
training frauds against generated rows, used when rows are drawn.
"""

from __future__ import annotations

import logging
from typing import Any

import keras
import numpy as np

from pipeline.gan.encoding import ColumnEncoder
from pipeline.gan.trained import Conditions, TrainedGAN, generate_rows

logger = logging.getLogger(__name__)


def selection_seed(random_state: int) -> int:
    """The seed of model selection's C2ST and of the classifier filter: the last
    of the five child seeds the trainer derives from the GAN's seed."""
    return int(np.random.SeedSequence(random_state).generate_state(5)[4])


class ModelSelection:
    """The best generator weights seen so far, by C2ST on validation frauds.

    Attributes
    ----------
    best : dict or None
        ``step``, ``c2st_auc``, ``weights_of`` (``generator`` or ``ema``) and
        ``weights`` of the best-scoring check.
    records : list of dict
        One per check: ``step``, ``c2st_auc`` and (with a moving average)
        ``ema_c2st_auc``.
    """

    def __init__(
        self,
        encoder: ColumnEncoder,
        *,
        latent_dim: int,
        label: int,
        temperature: float,
        random_state: int,
        conditions: Conditions | None = None,
    ):
        self.encoder = encoder
        self.conditions = conditions
        self.latent_dim = latent_dim
        self.label = label
        self.temperature = temperature
        self.random_state = random_state
        self.best: dict[str, Any] | None = None
        self.records: list[dict[str, float]] = []

    def score(self, generator: keras.Model, validation: np.ndarray) -> float | None:
        """C2ST of ``len(validation)`` generated rows against ``validation``
        (``None`` when a generated row is not finite)."""
        from pipeline.evaluation.fidelity import c2st_auc

        extra = values = None
        if self.conditions is not None:
            rng = np.random.default_rng([self.random_state, 1])
            index = self.conditions.draw(len(validation), self.label, rng)
            extra = self.conditions.one_hot(index)
            values = np.asarray(self.conditions.levels)[index]
        rows = self.encoder.decode(
            generate_rows(
                generator,
                len(validation),
                latent_dim=self.latent_dim,
                label=self.label,
                random_state=self.random_state,
                temperature=self.temperature,
                extra=extra,
            ),
            random_state=self.random_state,
            condition=values,
        )
        if not np.isfinite(rows).all():
            return None
        return c2st_auc(rows, validation, random_state=self.random_state)

    def check(
        self, step: int, candidates: dict[str, keras.Model], validation: np.ndarray
    ) -> None:
        """Score each candidate (``generator``, ``ema``) on the validation frauds;
        keep the best weights seen so far."""
        record: dict[str, Any] = {"step": step}
        for name, model in candidates.items():
            score = self.score(model, validation)
            if score is None:
                continue
            record["c2st_auc" if name == "generator" else "ema_c2st_auc"] = score
            if self.best is None or score < self.best["c2st_auc"]:
                self.best = {
                    "step": step,
                    "c2st_auc": score,
                    "weights_of": name,
                    "weights": [np.array(w) for w in model.get_weights()],
                }
        if len(record) == 1:
            return
        self.records.append(record)
        logger.info(
            "GAN step %d: validation C2ST %s (best %.3f at step %d%s)",
            step,
            ", ".join(
                f"{'EMA ' if k.startswith('ema') else ''}{v:.3f}"
                for k, v in record.items()
                if k != "step"
            ),
            self.best["c2st_auc"],
            self.best["step"],
            ", EMA" if self.best["weights_of"] == "ema" else "",
        )


def fit_filter_classifier(
    trained: TrainedGAN, real: np.ndarray, label: int, random_state: int
):
    """A classifier telling the generator's rows from the real training frauds
    (never validation or test rows); ``TrainedGAN.sample`` drops the rows it finds
    most synthetic. Equal numbers of each, as in the C2ST."""
    from pipeline.evaluation.fidelity import make_c2st_classifier

    generated = trained.sample(len(real), label=label, random_state=random_state + 1)
    X = np.vstack([real, generated])
    y = np.r_[np.zeros(len(real)), np.ones(len(generated))]
    return make_c2st_classifier(random_state).fit(X, y)
