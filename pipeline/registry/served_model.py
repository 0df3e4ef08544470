"""The registered detector as an MLflow model, by MLflow's "models from code":
this file is saved with every version (``code/served_model.py``) and MLflow runs
it when it loads one (``mlflow models serve``, ``mlflow.pyfunc.load_model``); the
library never imports it. Its input is transactions in the table's own columns
(the version's signature, from the schema), its output per row the ids, the
fraud probability, the alert and the reasons
(:meth:`pipeline.registry.serving.Detector.answer`). The booster stays UBJ and
the transformer JSON (the version's ``artifacts/``): nothing is unpickled.
"""

import mlflow
from mlflow.exceptions import MlflowException

from pipeline.core.compat import mlflow_model_without_hint_checks


class FraudDetector(mlflow_model_without_hint_checks()):
    """Raw transactions in, score, alert and reasons out (checked by the
    table's schema, fraudaug's validation, not by type hints on ``predict``)."""

    def load_context(self, context):
        from pipeline.core.compat import mlflow_passes_any_columns_through
        from pipeline.registry.serving import Detector

        mlflow_passes_any_columns_through()
        model_file = context.artifacts["model"]
        self.detector = Detector.load(_version_folder(model_file))

    def predict(self, context, model_input, params=None):
        from pipeline.core.errors import PipelineError
        from pipeline.registry.serving import DEFAULT_REASONS

        explain = int((params or {}).get("explain", DEFAULT_REASONS))
        try:
            return self.detector.answer(model_input, explain)
        except PipelineError as exc:  # a bad row: the client's to fix (HTTP 400)
            raise MlflowException.invalid_parameter_value(str(exc)) from exc


def _version_folder(model_file: str):
    """The version's folder, from its booster's path (``artifacts/model.ubj``)."""
    from pathlib import Path

    return Path(model_file).parent.parent


mlflow.models.set_model(FraudDetector())
