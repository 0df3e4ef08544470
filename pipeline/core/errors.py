"""The project's exception hierarchy.

Every error a user can cause (bad data, bad config, a tampered or missing artifact)
is a :class:`PipelineError`; the CLI prints it as one line and exits with code 2.
Anything else escaping the library is a bug.
"""

from __future__ import annotations


class PipelineError(Exception):
    """Base class of every error the user can act on."""


class DataValidationError(PipelineError, ValueError):
    """The input data is malformed: the message names file, column/row and the fix."""


class ConfigError(PipelineError, ValueError):
    """The configuration or a command-line argument is invalid."""


class ArtifactError(PipelineError):
    """An artifact is missing, unreadable, or does not match its recorded hash."""


class FetchError(PipelineError):
    """The real dataset could not be downloaded or failed verification."""


class TrainingError(PipelineError):
    """Training could not produce a usable model (e.g. persistent non-finite losses)."""


def one_line(exc: BaseException, limit: int = 300) -> str:
    """``exc`` as one line for a report or a log: its type and the first line of
    its message, at most ``limit`` characters."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
