"""Every private name of a third-party package the library uses, in one place.

Each function below reaches into MLflow, TensorFlow or imbalanced-learn where no
public way does the job, says why, and does nothing (the package's public
behaviour stays) when the name it needs has changed shape.
``tests/unit/core/test_compat.py`` fails when one has, and ``pyproject.toml``
bounds these packages from above, so an upgrade is a decision, not a surprise.
(The Prefect layer's are in :mod:`flows.compat`.)
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any

_SAVING = threading.Lock()


def mlflow_passes_any_columns_through() -> None:
    """MLflow's check of a column typed ``any`` without a call per value
    (``mlflow.models.utils._enforce_named_col_schema``, replaced for the
    process: the served model's, which calls this when it loads).

    The signature types every column ``any`` (fraudaug's schema checks them:
    :func:`pipeline.registry.store.signature`), and MLflow checks such a column
    value by value, each returned unchanged: 30,000 Python calls for 1,000 rows of
    30 columns, 80 ms, seven times the scoring itself (MLflow issue 7948). Where
    every column of a signature is ``any`` and the required ones are there, the
    columns are passed through as they are, as MLflow would pass each value: the
    request itself when it holds no other column, else its signature's columns
    (MLflow drops the others); anything else (a missing column, another model's
    typed signature) goes to MLflow's own check.
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


@contextlib.contextmanager
def mlflow_save_without_requirements_check() -> Iterator[None]:
    """MLflow's model save without its check of the requirements against this
    environment (``mlflow.utils.environment.warn_dependency_requirement_mismatches``,
    a no-op for the save, one save at a time). The requirements are read from
    the installed packages, so the check cannot find a mismatch, and it costs
    ~1.6 s the first time in a process (MLflow maps every installed file to its
    package); MLflow has no setting for it at save time."""
    import mlflow.utils.environment as environment

    with _SAVING:  # put back as it was found
        check = getattr(environment, "warn_dependency_requirement_mismatches", None)
        if check is None:
            yield
            return
        environment.warn_dependency_requirement_mismatches = lambda requirements: None
        try:
            yield
        finally:
            environment.warn_dependency_requirement_mismatches = check


def tensorflow_forgets_custom_gradients() -> None:
    """Drop the gradient functions ``tf.custom_gradient`` registered in
    TensorFlow's global gradient registry (``ops._gradient_registry._registry``,
    entries ``CustomGradient-*``): each holds a traced graph, one per trace,
    for good (TensorFlow issues 27492 and 97697: fixed upstream after 2.21).
    Call it only when no gradient is being traced."""
    from tensorflow.python.framework import ops

    registry = getattr(getattr(ops, "_gradient_registry", None), "_registry", None)
    if isinstance(registry, dict):
        for name in [n for n in registry if str(n).startswith("CustomGradient-")]:
            registry.pop(name, None)


def imblearn_under_samples(sampler: Any) -> bool:
    """An under-sampler (a class or an instance), by imbalanced-learn's own
    marker (``_sampling_type``, which its samplers declare)."""
    return getattr(sampler, "_sampling_type", None) == "under-sampling"


@functools.cache
def mlflow_model_without_hint_checks() -> type:
    """MLflow's ``PythonModel`` whose subclasses' ``predict`` MLflow does not
    wrap in its type-hint validation (``_skip_type_hint_validation``, read when
    a subclass is made): the served model's input is checked by the table's
    schema, and MLflow would otherwise warn, each time the model loads, that
    ``predict`` has no hints."""
    from mlflow.pyfunc import PythonModel

    return type(
        "PythonModelWithoutHintChecks",
        (PythonModel,),
        {"_skip_type_hint_validation": True, "__module__": __name__},
    )
