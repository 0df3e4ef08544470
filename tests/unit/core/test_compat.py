"""The private names of MLflow and TensorFlow the library uses
(:mod:`pipeline.core.compat`) still have the shape it relies on: one of these
fails when an upgrade changes one."""

import inspect

from pipeline.core import compat


def test_mlflows_named_column_check_is_still_the_function_it_replaces():
    import mlflow.models.utils as checks
    from mlflow.types.schema import AnyType, ColSpec, Schema

    enforce = checks._enforce_named_col_schema
    assert list(inspect.signature(enforce).parameters) == ["pf_input", "input_schema"]
    schema = Schema([ColSpec(AnyType(), "a")])
    assert schema.input_names() == ["a"] and schema.required_input_names() == ["a"]
    compat.mlflow_passes_any_columns_through()
    assert checks._enforce_named_col_schema.passes_any_through
    compat.mlflow_passes_any_columns_through()  # once: not wrapped twice
    wrapped = [c.cell_contents for c in checks._enforce_named_col_schema.__closure__]
    assert enforce in wrapped


def test_mlflows_requirement_check_is_still_a_function_of_the_requirements():
    import mlflow.utils.environment as environment

    check = environment.warn_dependency_requirement_mismatches
    assert len(inspect.signature(check).parameters) == 1
    with compat.mlflow_save_without_requirements_check():
        assert environment.warn_dependency_requirement_mismatches is not check
        assert environment.warn_dependency_requirement_mismatches(["x"]) is None
    assert environment.warn_dependency_requirement_mismatches is check


def test_tensorflows_gradient_registry_still_keeps_custom_gradients_by_name():
    import tensorflow as tf
    from tensorflow.python.framework import ops

    registry = ops._gradient_registry._registry
    assert isinstance(registry, dict)

    @tf.custom_gradient
    def same(x):
        return x, lambda dy: dy

    tf.function(same)(tf.constant(1.0))  # traced: one entry registered
    assert any(str(n).startswith("CustomGradient-") for n in registry)
    compat.tensorflow_forgets_custom_gradients()
    assert not any(str(n).startswith("CustomGradient-") for n in registry)


def test_imbalanced_learns_samplers_still_declare_their_kind():
    from imblearn.over_sampling import SMOTE
    from imblearn.under_sampling import RandomUnderSampler

    assert RandomUnderSampler._sampling_type == "under-sampling"
    assert compat.imblearn_under_samples(RandomUnderSampler)
    assert compat.imblearn_under_samples(RandomUnderSampler())
    assert not compat.imblearn_under_samples(SMOTE)


def test_mlflow_still_leaves_predict_unwrapped_where_hints_are_skipped(recwarn):
    def predict(self, context, model_input, params=None):
        return model_input

    served = type(
        "Served", (compat.mlflow_model_without_hint_checks(),), {"predict": predict}
    )
    assert served.__dict__["predict"] is predict  # not wrapped: no hint checks
    assert not [w for w in recwarn if "type hint" in str(w.message).lower()]
