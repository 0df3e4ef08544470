"""Every method a run can compare, declared once: the built-in ones in their family's
module (:mod:`~pipeline.resampling.baseline`, :mod:`~pipeline.resampling.over_sampling`,
:mod:`~pipeline.resampling.under_sampling`, :mod:`~pipeline.resampling.combine`,
:mod:`~pipeline.resampling.generative`), a team's own through Python entry points
(:mod:`~pipeline.resampling.plugins`).

The config's validation, the amounts, the fits, the comparison, the report, the
command line (``fraudaug methods``) and the docs read this registry; no other
module types a method's name. A built-in method's sampler classes are imported
when it is built; listing the methods imports every installed plugin (its class
says its family, amount and summary; one that fails to import is listed with its
reason).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.resampling import (
    baseline,
    combine,
    generative,
    over_sampling,
    under_sampling,
)
from pipeline.resampling.method import BuildContext, Method, Role
from pipeline.resampling.plugins import plugin_methods

if TYPE_CHECKING:
    from pipeline.core.config import EvaluationConfig, GANConfig


def built_in_methods() -> tuple[Method, ...]:
    """The built-in methods, in report order (family by family)."""
    return (
        *baseline.METHODS,
        *over_sampling.METHODS[:1],  # random_over, then the under-sampler
        *under_sampling.METHODS,
        *over_sampling.METHODS[1:],
        *combine.METHODS,
        *generative.METHODS,
    )


def built_in_names() -> tuple[str, ...]:
    """Every built-in method's name: ``evaluation.methods``'s default."""
    return tuple(m.name for m in built_in_methods())


def smoke_names() -> tuple[str, ...]:
    """The ``smoke`` profile's methods."""
    return tuple(m.name for m in built_in_methods() if m.in_smoke)


def all_methods() -> tuple[Method, ...]:
    """The built-in methods, then every installed plugin's (by name)."""
    return (*built_in_methods(), *plugin_methods())


def get(name: str) -> Method:
    """The method called ``name``.

    Raises
    ------
    ConfigError
        No built-in method and no installed plugin has that name.
    """
    # Entry points are read (and plugins imported) only for a name not built in,
    # as unknown() does: get() runs for every fit.
    for method in built_in_methods():
        if method.name == name:
            return method
    every = all_methods()
    for method in every:
        if method.name == name:
            return method
    from pipeline.core.errors import ConfigError

    raise ConfigError(
        f"unknown method {name!r}; expected one of "
        f"{', '.join(m.name for m in every)} (fraudaug methods lists them)"
    )


def unknown(names: tuple[str, ...] | list[str]) -> list[str]:
    """Of ``names``, those no built-in method nor installed plugin has."""
    known = {m.name for m in built_in_methods()}
    rest = [n for n in names if n not in known]
    if not rest:  # entry points are read only when a name is not built in
        return []
    known |= {m.name for m in all_methods()}
    return [n for n in rest if n not in known]


def with_role(role: Role) -> tuple[str, ...]:
    """The built-in methods' names that hold ``role``."""
    return tuple(m.name for m in built_in_methods() if m.role == role)


def with_gan() -> tuple[str, ...]:
    """The built-in methods that draw from the split's fraudaug GAN."""
    return tuple(m.name for m in built_in_methods() if m.uses_gan)


def interpolation() -> str:
    """The built-in method whose rows the generators' fidelity is judged beside."""
    return next(m.name for m in built_in_methods() if m.interpolation)


def roles() -> dict[str, Any]:
    """The comparison's roles, by name: ``reference`` (one name), ``question``
    (one name), ``compared`` (the names)."""
    return {
        "reference": with_role("reference")[0],
        "question": with_role("question")[0],
        "compared": with_role("compared"),
    }


def make_sampler(
    name: str,
    evaluation: EvaluationConfig,
    *,
    random_state: int,
    n_minority: int | None = None,
    n_majority: int | None = None,
    category_counts: dict[int, int] | None = None,
    n_features: int | None = None,
    gan: GANConfig | None = None,
    gan_dir: str | None = None,
    generator: Any = None,
):
    """The sampler of method ``name`` at one amount (None for a method that
    resamples nothing): ``n_minority`` fraud rows to reach, or ``n_majority``
    legitimate rows to keep; by default the shared ratio
    ``evaluation.sampling_strategy``. See :class:`BuildContext`."""
    method = get(name)
    if method.build is None:
        return None
    return method.build(
        BuildContext(
            evaluation=evaluation,
            random_state=random_state % 2**31,
            n_minority=n_minority,
            n_majority=n_majority,
            category_counts=dict(category_counts or {}),
            n_features=n_features,
            gan=gan,
            gan_dir=gan_dir,
            generator=generator,
        )
    )
