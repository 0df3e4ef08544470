"""The package's own code as data: what a piece of it imports (the import graph
grimp builds, the one the layers contract reads), its sources' hash with the
versions of the packages they import (the stage cache's code versions) and its
files (the code a registered model carries)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


def code_version(*modules: str) -> str:
    """sha256 of the source of ``modules`` (a package: its modules) and of every
    module of :mod:`pipeline` they import, directly or not, at the top or inside a
    function, and of the versions of the third-party packages those import
    (:func:`third_party_versions`) and of Python's: a cached stage result is
    reused only by the code that made it, even after code moves between modules
    or a TensorFlow, pandas or scikit-learn upgrade. The imports come from the
    package's import graph (grimp's, the one the layers contract reads), never
    from a list kept by hand. Names outside :mod:`pipeline` (``benchmarks``)
    count their own files."""
    import platform

    digest = hashlib.sha256()
    for name, path in sorted(source_files(modules).items()):
        digest.update(name.encode())
        digest.update(path.read_bytes())
    digest.update(f"python=={'.'.join(platform.python_version_tuple()[:2])}".encode())
    for distribution, version in sorted(third_party_versions(modules).items()):
        digest.update(f"{distribution}=={version}".encode())
    return digest.hexdigest()


def third_party_versions(modules: tuple[str, ...]) -> dict[str, str]:
    """The installed version of every distribution that ``modules`` of
    :mod:`pipeline` (and the modules of :mod:`pipeline` they import, directly or
    not) import, by distribution name (``tensorflow``, ``scikit-learn``); the
    standard library is Python's and not listed."""
    from importlib import metadata

    graph = _import_graph()
    external = {
        imported.split(".")[0]
        for name in _internal_modules(modules)
        for imported in graph.find_modules_directly_imported_by(name)
        if not _internal(imported)
    }
    provided = _distributions()
    versions = {}
    for top in external:
        for distribution in provided.get(top, ()):
            versions[distribution] = metadata.version(distribution)
    return versions


@functools.cache
def _distributions() -> dict[str, list[str]]:
    """Each importable top-level name's distributions
    (``importlib.metadata.packages_distributions``), read once per process: it
    scans every installed package (about 0.65 s here), and each stage's cache
    key asks for it."""
    from importlib import metadata

    return metadata.packages_distributions()


def _internal(name: str) -> bool:
    return name == "pipeline" or name.startswith("pipeline.")


def source_files(modules: tuple[str, ...]) -> dict[str, Path]:
    """Each module that ``modules`` stand for (a package: its modules), and every
    module of :mod:`pipeline` they import, with its source file."""
    import importlib

    files: dict[str, Path] = {}
    for name in modules:
        if not _internal(name):  # outside pipeline (benchmarks): its own files
            root = Path(importlib.import_module(name).__file__)
            package = root.name == "__init__.py"
            for path in sorted(root.parent.rglob("*.py")) if package else [root]:
                files[f"{name}/{path.relative_to(root.parent).as_posix()}"] = path
    for name in _internal_modules(modules):
        files[name] = _module_file(name)
    return files


def _internal_modules(modules: tuple[str, ...]) -> set[str]:
    """The modules of :mod:`pipeline` that ``modules`` stand for (a package: its
    modules) and every module of :mod:`pipeline` they import, directly or not."""
    graph = _import_graph()
    names: set[str] = set()
    for name in modules:
        if _internal(name) and name in graph.modules:
            own = {name, *graph.find_descendants(name)}
            names |= own
            for module in own:
                names |= graph.find_upstream_modules(module)
    return {name for name in names if _internal(name)}


def _module_file(name: str) -> Path:
    """A module of :mod:`pipeline`'s source file, found without importing it (a
    package's ``__init__`` may load TensorFlow)."""
    import pipeline

    path = Path(pipeline.__file__).parent.parent.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


@functools.cache
def _import_graph():
    """:mod:`pipeline`'s import graph with the third-party packages it imports
    (built once per process: about 0.1 s)."""
    import grimp

    return grimp.build_graph("pipeline", include_external_packages=True, cache_dir=None)


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
