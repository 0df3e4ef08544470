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
from mlflow.pyfunc import PythonModel


class FraudDetector(PythonModel):
    """Raw transactions in, score, alert and reasons out."""

    # The input is checked by the table's schema (fraudaug's validation), not by
    # type hints on predict: MLflow's hint-based validation (and its warning
    # asking for hints, printed whenever this file is loaded) stays off.
    _skip_type_hint_validation = True

    def load_context(self, context):
        from pipeline.registry.serving import Detector

        _pass_any_columns_through()
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


def _pass_any_columns_through():
    """MLflow's check of a column typed ``any`` without a call per value.

    The signature types every column ``any`` (fraudaug's schema checks them:
    :func:`pipeline.registry.store.signature`), and MLflow checks such a column
    value by value, each returned unchanged: 30,000 Python calls for 1,000 rows of
    30 columns, 80 ms, seven times the scoring itself (MLflow issue 7948). Where
    every column of a signature is ``any`` and the required ones are there, the
    columns are passed through as they are, as MLflow would pass each value: the
    request itself when it holds no other column (a copy of its columns costs a
    thousand rows' request ~0.3 ms), else its signature's columns (MLflow drops
    the others); anything else (a missing column, another model's typed
    signature) goes to MLflow's own check. If MLflow's module changes shape,
    nothing is replaced.
    """
    import mlflow.models.utils as checks
    from mlflow.types.schema import AnyType

    enforce = getattr(checks, "_enforce_named_col_schema", None)
    if enforce is None or getattr(enforce, "passes_any_through", False):
        return

    def enforce_named_columns(pf_input, input_schema):
        names = input_schema.input_names()
        columns = set(pf_input.columns)
        if all(isinstance(t, AnyType) for t in input_schema.input_types()) and all(
            n in columns for n in input_schema.required_input_names()
        ):
            if columns <= set(names):
                return pf_input
            return pf_input[[n for n in names if n in columns]]
        return enforce(pf_input, input_schema)

    enforce_named_columns.passes_any_through = True
    checks._enforce_named_col_schema = enforce_named_columns


def _version_folder(model_file: str):
    """The version's folder, from its booster's path (``artifacts/model.ubj``)."""
    from pathlib import Path

    return Path(model_file).parent.parent


mlflow.models.set_model(FraudDetector())
