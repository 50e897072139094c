"""Exceptions only the lab raises; covrag's own are in :mod:`covrag.errors`."""

from __future__ import annotations

from covrag.errors import CovragError

__all__ = ["TrainingError"]


class TrainingError(CovragError, RuntimeError):
    """A training run ended with a model not worth writing, e.g. one scoring every pair alike."""
