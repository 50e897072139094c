"""Relevance top-k: the baseline every retriever already gives."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace

import numpy as np

from covrag.errors import ConfigError
from covrag.selectors.base import COVERAGE, SAME_POINT, SELECTORS, Candidates, Input, Selector
from covrag.selectors.facility import FacilityLocationSelector
from covrag.selectors.optimize import GreedyRun
from covrag.types import Budget, FloatArray, IntArray, Selection


def fill_in_order(
    order: IntArray, scores: FloatArray, candidates: Candidates, budget: Budget
) -> tuple[list[int], list[float]]:
    """Take passages in ``order`` while they fit, skipping (never truncating) those that do not."""
    run = GreedyRun(candidates, budget)
    run.fill(order, scores)
    return run.result()


#: The rank whose relevance the flatness test compares with the first's, unless told.
FLAT_RANK = 10


@SELECTORS.register
@dataclass(frozen=True, repr=False)
class TopKSelector(Selector):
    """Passages in decreasing relevance (ties in pool order), as many as the budget allows.

    Attributes:
        cover: Then complete the cover of the aspects (it reads the coverage matrix): for each
            aspect, in column order, that no pick covers and a passage left out does, the most
            relevant such passage takes the place of the least relevant pick that is not the
            only one covering an aspect, when the budget still holds (:func:`complete_cover`).
            The picks stay in decreasing relevance.
        flat: When relevance is flat (:func:`is_flat`: the ``rank``-th most relevant passage
            within ``flat`` of the first, relative to it), choose like the label-free default
            instead (:data:`REPRESENT`: facility location over the same-point vectors, which
            are computed only for such a pool). Relevance then cannot tell the passages apart,
            as in a pool of arguments that all address one debate topic, where the top k repeat
            a few points (docs/experiments/36-flat-relevance.md).
        rank: The rank whose relevance ``flat`` compares with the first's (a pool with fewer
            passages is never flat). ``ask`` reads the 50th (``topk(flat=0.4, rank=50)``): on
            a debate topic the whole pool is about as near the question, on documents the
            50th passage never is, while the tenth can be
            (docs/experiments/38-deep-flatness.md).
    """

    name = "topk"
    cover: bool = False
    flat: float | None = None
    rank: int = FLAT_RANK

    @property
    def reads(self) -> tuple[Input, ...]:
        reads = (Input(COVERAGE),) if self.cover else ()
        return reads + ((Input(SAME_POINT),) if self.flat is not None else ())

    def reads_for(self, candidates: Candidates) -> tuple[Input, ...]:
        if self.flat is not None and not is_flat(candidates.relevance, self.flat, self.rank):
            return tuple(i for i in self.reads if i.kind != SAME_POINT)
        return self.reads

    def __post_init__(self) -> None:
        if self.flat is not None and not (math.isfinite(self.flat) and 0.0 < self.flat < 1.0):
            raise ConfigError(f"topk: flat must be a number between 0 and 1, got {self.flat!r}")
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 2:
            raise ConfigError(f"topk: rank must be a whole number >= 2, got {self.rank!r}")

    def select(self, candidates: Candidates, budget: Budget) -> Selection:
        """Top-k, or with ``flat`` on a flat pool the label-free choice, which the
        selection's ``selector`` then names."""
        if self.flat is not None and is_flat(candidates.relevance, self.flat, self.rank):
            chosen = REPRESENT.select(candidates, budget)
            return replace(chosen, selector=f"{self!r}, relevance flat: {REPRESENT!r}")
        return super().select(candidates, budget)

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        order: IntArray = np.argsort(-candidates.relevance, kind="stable")
        picked, scores = fill_in_order(order, candidates.relevance, candidates, budget)
        if not self.cover or candidates.coverage is None:
            return picked, scores
        picked = complete_cover(picked, candidates, budget)
        picked.sort(key=lambda i: (-candidates.relevance[i], i))
        return picked, [float(candidates.relevance[i]) for i in picked]


#: What ``topk(flat=...)`` chooses by when relevance is flat: the label-free default
#: (:data:`covrag.pipeline.policy.LABEL_FREE_SELECTOR`).
REPRESENT = FacilityLocationSelector(similarity=SAME_POINT, contrast=1)


def is_flat(relevance: FloatArray, flat: float, rank: int = FLAT_RANK) -> bool:
    """Whether relevance barely tells the pool's top apart: the pool holds at least ``rank``
    passages, the first's relevance is above 0, and the ``rank``-th's lies within ``flat`` of
    it, relative to it."""
    if len(relevance) < rank:
        return False
    top = np.sort(np.asarray(relevance, dtype=np.float64))[::-1][:rank]
    return bool(top[0] > 0.0 and (top[0] - top[-1]) / top[0] < flat)


def complete_cover(picked: list[int], candidates: Candidates, budget: Budget) -> list[int]:
    """``picked`` with passages swapped in for the aspects it leaves uncovered (see
    :attr:`TopKSelector.cover`); excluded aspects are never sought."""
    assert candidates.coverage is not None
    covered = candidates.coverage.covered
    relevance = candidates.relevance
    wanted = np.ones(covered.shape[1], dtype=bool)
    if candidates.excluded is not None:
        wanted &= ~np.asarray(candidates.excluded, dtype=bool)
    chosen = list(picked)
    for aspect in np.flatnonzero(wanted):
        if covered[chosen, aspect].any():
            continue
        outside = [int(i) for i in np.flatnonzero(covered[:, aspect]) if i not in chosen]
        if not outside:
            continue
        incoming = max(outside, key=lambda i: (relevance[i], -i))
        counts = covered[chosen][:, wanted].sum(axis=0)
        for leaving in sorted(chosen, key=lambda i: (relevance[i], -i)):
            if (covered[leaving, wanted] & (counts == 1)).any():
                continue  # the only pick covering some aspect
            trial = [incoming if i == leaving else i for i in chosen]
            tokens = int(candidates.costs[trial].sum())
            if budget.max_tokens is None or tokens <= budget.max_tokens:
                chosen = trial
                break
    return chosen


@SELECTORS.register
@dataclass(frozen=True, repr=False)
class RandomSelector(Selector):
    """A uniformly random order (seeded per topic), the floor any method must clear.

    Attributes:
        seed: Base seed; the topic id is mixed in so topics get different but repeatable orders.
    """

    name = "random"
    seed: int = 0

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        topic_seed = zlib.crc32(candidates.query_id.encode())
        rng = np.random.default_rng([self.seed, topic_seed])
        order = rng.permutation(len(candidates))
        scores = np.empty(len(candidates))
        scores[order] = np.arange(len(candidates), 0, -1, dtype=np.float64)
        return fill_in_order(order, scores, candidates, budget)
