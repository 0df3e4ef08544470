"""The package's own code as data: what a piece of it imports (the import graph
grimp builds, the one the layers contract reads), its sources' hash (the stage
cache's code versions) and its files (the code a registered model carries)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


def code_version(*modules: str) -> str:
    """sha256 of the source of ``modules`` (a package: its modules) and of every
    module of :mod:`pipeline` they import, directly or not, at the top or inside a
    function: a cached stage result is reused only by the code that made it, even
    after code moves between modules. The imports come from the package's import
    graph (grimp's, the one the layers contract reads), never from a list kept by
    hand. Names outside :mod:`pipeline` (``benchmarks``) count their own files."""
    digest = hashlib.sha256()
    for name, path in sorted(source_files(modules).items()):
        digest.update(name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def source_files(modules: tuple[str, ...]) -> dict[str, Path]:
    """Each module that ``modules`` stand for (a package: its modules), and every
    module of :mod:`pipeline` they import, with its source file."""
    import importlib

    graph = _import_graph()
    names: set[str] = set()
    files: dict[str, Path] = {}
    for name in modules:
        if name in graph.modules:
            own = {name, *graph.find_descendants(name)}
            names |= own
            for module in own:
                names |= graph.find_upstream_modules(module)
        else:  # outside pipeline (benchmarks): its own files
            root = Path(importlib.import_module(name).__file__)
            package = root.name == "__init__.py"
            for path in sorted(root.parent.rglob("*.py")) if package else [root]:
                files[f"{name}/{path.relative_to(root.parent).as_posix()}"] = path
    for name in names:
        files[name] = _module_file(name)
    return files


def _module_file(name: str) -> Path:
    """A module of :mod:`pipeline`'s source file, found without importing it (a
    package's ``__init__`` may load TensorFlow)."""
    import pipeline

    path = Path(pipeline.__file__).parent.parent.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


CONFIG_READS_REGISTRY = ("pipeline.core.config", "pipeline.resampling.registry")
"""The one import up the floors (the floors contract's exception): validating a
config reads the method registry. It makes no stage's result: left out of the
code a stage's cache key hashes (else every sampler's change would make the
cached tables and splits stale)."""


@functools.cache
def _import_graph():
    """:mod:`pipeline`'s import graph (built once per process: about 15 ms), less
    :data:`CONFIG_READS_REGISTRY`."""
    import grimp

    graph = grimp.build_graph("pipeline", cache_dir=None)
    importer, imported = CONFIG_READS_REGISTRY
    graph.remove_import(importer=importer, imported=imported)
    return graph


def package_files(*modules: str) -> dict[str, Path]:
    """The source files ``modules`` of :mod:`pipeline` need to be imported in a
    fresh interpreter: theirs, those of every module of :mod:`pipeline` they
    import (directly or not, at the top or inside a function) and the
    ``__init__`` of every package on the way; by their path relative to the
    folder that holds :mod:`pipeline` (``pipeline/registry/serving.py``)."""
    import pipeline

    root = Path(pipeline.__file__).parent.parent
    names = set(source_files(modules))
    for name in list(names):
        parts = name.split(".")
        names |= {".".join(parts[:i]) for i in range(1, len(parts))}
    return {
        _module_file(name).relative_to(root).as_posix(): _module_file(name)
        for name in sorted(names)
    }
