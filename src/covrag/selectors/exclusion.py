"""Aspects to avoid: how coverage selectors treat passages that cover an excluded aspect.

A coverage-conditioned query (QTree / QPlanner: "... I already know how critics received it, so
skip reviews") marks some aspects ``exclude``; :class:`~covrag.selectors.base.Candidates` carries
them as the ``excluded`` flags. A coverage selector then has three choices, named by its ``exclude``
parameter:

- ``ignore``: the flags are not used; excluded aspects count like any other.
- ``penalize``: excluded aspects are worth nothing, and a passage's gain loses
  ``penalty * (number of excluded aspects it covers)``; such passages also come last in the
  relevance fallback.
- ``forbid``: excluded aspects are worth nothing, and a passage covering one is never picked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError
from covrag.selectors.base import Candidates
from covrag.types import BoolArray, FloatArray

EXCLUDE_MODES = ("ignore", "penalize", "forbid")


def check_exclusion(mode: str, penalty: float) -> None:
    """Raise a ConfigError for an unknown mode or a negative penalty."""
    if mode not in EXCLUDE_MODES:
        raise ConfigError(f"exclude must be one of {EXCLUDE_MODES}, got {mode!r}")
    if not penalty >= 0:
        raise ConfigError(f"penalty must be >= 0, got {penalty!r}")


@dataclass(frozen=True)
class Exclusion:
    """What an exclusion mode does to one pool.

    Attributes:
        allowed: (n,) passages that may be picked at all.
        penalty: (n,) amount subtracted from each passage's gain.
        weights: (m,) aspect weights, excluded aspects set to 0 unless the mode is ``ignore``.
    """

    allowed: BoolArray
    penalty: FloatArray
    weights: FloatArray


def apply_exclusion(
    candidates: Candidates, covered: BoolArray, mode: str, penalty: float
) -> Exclusion:
    """The allowed passages, per-passage penalties and aspect weights under ``mode``.

    Args:
        candidates: The pool; its ``excluded`` flags and ``weights()`` are read.
        covered: The boolean coverage matrix (passages x aspects) of the pool.
        mode: One of ``ignore``, ``penalize``, ``forbid``.
        penalty: Penalty per excluded aspect a passage covers (``penalize`` only).
    """
    n = covered.shape[0]
    weights = candidates.weights().copy()
    allowed = np.ones(n, dtype=bool)
    penalties = np.zeros(n)
    excluded = candidates.excluded
    if mode == "ignore" or excluded is None or not np.any(excluded):
        return Exclusion(allowed, penalties, weights)
    flags = np.asarray(excluded, dtype=bool)
    weights[flags] = 0.0
    hits = covered[:, flags].sum(axis=1)
    if mode == "forbid":
        allowed = hits == 0
    else:
        penalties = penalty * hits.astype(np.float64)
    return Exclusion(allowed, penalties, weights)
