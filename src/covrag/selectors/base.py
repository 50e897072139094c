"""What every selector shares: its input record, its protocol, budgets and the trace.

A selector sees a :class:`Candidates` record (the pool with whatever signals are available:
relevance, token costs, a coverage matrix, embeddings, same-point vectors) and a
:class:`~covrag.types.Budget`, and returns a :class:`~covrag.types.Selection`. Budgets are
enforced in one place, :class:`BudgetTracker`; the trace of newly covered aspects is built in one
place, :func:`make_selection`.

Selecting only computes: every matrix and vector a selector reads is computed before, in the
estimate step (under a request's deadline and the server's model lock), and each selector
declares what it reads as data, :attr:`Selector.reads` (a tuple of :class:`Input`), so that the
estimate step computes exactly those. No module of ``covrag.selectors`` imports model code.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np

from covrag.errors import ConfigError
from covrag.registry import Registry, spec_of
from covrag.types import (
    BoolArray,
    Budget,
    CoverageMatrix,
    FloatArray,
    IntArray,
    Passage,
    Selection,
    SelectionStep,
)

InputKind = Literal["coverage", "embeddings", "pieces", "same-point"]
COVERAGE: InputKind = "coverage"
EMBEDDINGS: InputKind = "embeddings"
PIECES: InputKind = "pieces"
SAME_POINT: InputKind = "same-point"


@dataclass(frozen=True)
class Input:
    """One input a selector reads, which the estimate step computes before it selects.

    Attributes:
        kind: ``coverage`` (:attr:`Candidates.coverage`), ``embeddings`` (the pool's and the
            query's MiniLM embeddings), ``pieces`` (the passages' sentence embeddings) or
            ``same-point`` (the pool's vectors from a same-point bi-encoder,
            :attr:`Candidates.same_point`).
        model: For ``same-point``, the bi-encoder: a shipped model's name or an export's
            folder (None: the default shipped model).

    Example:
        >>> from covrag.selectors import parse_selector
        >>> parse_selector("mmr(similarity='same-point')").reads
        (Input(kind='embeddings', model=None), Input(kind='same-point', model=None))
    """

    kind: InputKind
    model: str | None = None


@dataclass(frozen=True, eq=False)
class Candidates:
    """The pool a selector chooses from, with the signals it may use.

    Attributes:
        query_id: The topic's id (carried into the Selection).
        query: The question text.
        passages: The pool.
        relevance: (n,) relevance scores, higher is better. Defaults to each passage's ``score``
            or, when passages carry none, to decreasing values in pool order.
        costs: (n,) token costs. Defaults to each passage's ``tokens`` (0 when unknown).
        coverage: Optional passages x aspects coverage matrix, rows in pool order.
        embeddings: Optional (n, d) unit-normalised passage embeddings.
        query_embedding: Optional (d,) unit-normalised query embedding.
        aspect_weights: Optional (m,) weights of the coverage matrix's aspects (1 by default).
        excluded: Optional (m,) flags of aspects to avoid (polarity ``exclude``).
        piece_embeddings: Optional (p, d) unit embeddings of the passages' atomic pieces
            (sentences), for selectors that reason below the passage level (LMVU).
        piece_owner: Optional (p,) passage index of each piece, sorted.
        same_point: (n, d) unit vectors of the passages from a same-point bi-encoder, by the
            model's name as :attr:`Input.model` gives it (None: the default shipped model).
    """

    query_id: str
    query: str
    passages: tuple[Passage, ...]
    relevance: FloatArray = field(default_factory=lambda: np.zeros(0))
    costs: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    coverage: CoverageMatrix | None = None
    embeddings: FloatArray | None = None
    query_embedding: FloatArray | None = None
    aspect_weights: FloatArray | None = None
    excluded: BoolArray | None = None
    piece_embeddings: FloatArray | None = None
    piece_owner: IntArray | None = None
    same_point: Mapping[str | None, FloatArray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.passages)
        ids = [p.id for p in self.passages]
        if len(set(ids)) != n:
            raise ConfigError(f"topic {self.query_id}: duplicate passage ids in the pool")
        relevance = np.asarray(self.relevance, dtype=np.float64)
        if relevance.size == 0 and n:
            if all(p.score is not None for p in self.passages):
                relevance = np.array([p.score for p in self.passages], dtype=np.float64)
            else:
                relevance = -np.arange(n, dtype=np.float64)
        costs = np.asarray(self.costs, dtype=np.int64)
        if costs.size == 0 and n:
            costs = np.array([p.tokens or 0 for p in self.passages], dtype=np.int64)
        if relevance.shape != (n,):
            raise ConfigError(f"relevance has shape {relevance.shape}, expected ({n},)")
        if costs.shape != (n,):
            raise ConfigError(f"costs has shape {costs.shape}, expected ({n},)")
        if self.coverage is not None and self.coverage.passage_ids != tuple(ids):
            raise ConfigError(
                f"topic {self.query_id}: coverage matrix rows do not match the pool's passages"
            )
        if self.embeddings is not None and self.embeddings.shape[0] != n:
            raise ConfigError(f"embeddings have {self.embeddings.shape[0]} rows, expected {n}")
        for model, vectors in self.same_point.items():
            if vectors.shape[0] != n:
                raise ConfigError(
                    f"same-point vectors of {model!r} have {vectors.shape[0]} rows, expected {n}"
                )
        m = 0 if self.coverage is None else len(self.coverage.aspect_ids)
        for name in ("aspect_weights", "excluded"):
            value = getattr(self, name)
            if value is not None and np.shape(value) != (m,):
                raise ConfigError(f"{name} has shape {np.shape(value)}, expected ({m},)")
        relevance.setflags(write=False)
        costs.setflags(write=False)
        object.__setattr__(self, "relevance", relevance)
        object.__setattr__(self, "costs", costs)

    def __len__(self) -> int:
        return len(self.passages)

    @property
    def covered(self) -> BoolArray:
        """The coverage matrix as booleans; raises when the selector needs one and has none."""
        if self.coverage is None:
            raise ConfigError("this selector needs a coverage matrix (choose --coverage)")
        return self.coverage.covered

    def require_embeddings(self) -> tuple[FloatArray, FloatArray | None]:
        if self.embeddings is None:
            raise ConfigError(
                "this selector needs passage embeddings (install covrag[embed] and use a "
                "dense relevance or embedding coverage)"
            )
        return self.embeddings, self.query_embedding

    def point_vectors(self, model: str | None) -> FloatArray:
        """The pool's same-point vectors from ``model``; raises when they were not computed."""
        if model not in self.same_point:
            raise ConfigError(
                f"this selector reads the pool's same-point vectors ({model or 'shipped model'}), "
                "which are computed before selecting: prepare the candidates with "
                "covrag.pipeline.with_inputs(candidates, [selector]), or select through "
                "covrag.select / covrag.pipeline.choose"
            )
        return self.same_point[model]

    def weights(self) -> FloatArray:
        m = 0 if self.coverage is None else len(self.coverage.aspect_ids)
        if self.aspect_weights is None:
            return np.ones(m)
        return np.asarray(self.aspect_weights, dtype=np.float64)


class BudgetTracker:
    """Tracks what a selection has used of its budget. The only place budgets are checked."""

    def __init__(self, budget: Budget, costs: IntArray) -> None:
        self.budget = budget
        self.costs = costs
        self.count = 0
        self.tokens = 0
        self.cheapest = int(costs.min()) if len(costs) else 0

    def fits(self, index: int) -> bool:
        """Whether passage ``index`` can still be added without exceeding the budget."""
        if self.budget.max_passages is not None and self.count >= self.budget.max_passages:
            return False
        if self.budget.max_tokens is not None:
            return self.tokens + int(self.costs[index]) <= self.budget.max_tokens
        return True

    def fitting(self, available: BoolArray) -> BoolArray:
        """Mask of the ``available`` passages that still fit."""
        if self.budget.max_passages is not None and self.count >= self.budget.max_passages:
            return np.zeros_like(available)
        if self.budget.max_tokens is None:
            return available.copy()
        result: BoolArray = available & (self.costs <= self.budget.max_tokens - self.tokens)
        return result

    @property
    def full(self) -> bool:
        """True once not even the pool's cheapest passage could be added."""
        if self.budget.max_passages is not None and self.count >= self.budget.max_passages:
            return True
        return (
            self.budget.max_tokens is not None
            and self.tokens + self.cheapest > self.budget.max_tokens
        )

    def add(self, index: int) -> None:
        if not self.fits(index):
            raise RuntimeError("internal error: a selector tried to exceed its budget")
        self.count += 1
        self.tokens += int(self.costs[index])


def make_selection(
    selector: Selector,
    candidates: Candidates,
    budget: Budget,
    order: Sequence[int],
    scores: Sequence[float],
    started: float,
) -> Selection:
    """Build a Selection from picked indices, computing the newly-covered trace once, here."""
    covered = candidates.coverage.covered if candidates.coverage is not None else None
    aspect_ids = candidates.coverage.aspect_ids if candidates.coverage is not None else ()
    seen = np.zeros(len(aspect_ids), dtype=bool)
    steps = []
    tracker = BudgetTracker(budget, candidates.costs)
    for index, score in zip(order, scores, strict=True):
        tracker.add(index)  # defensive: a selector bug can never leak an over-budget selection
        newly: tuple[str, ...] = ()
        if covered is not None:
            new_mask = covered[index] & ~seen
            newly = tuple(aspect_ids[j] for j in np.flatnonzero(new_mask))
            seen |= covered[index]
        steps.append(
            SelectionStep(
                passage_id=candidates.passages[index].id,
                score=float(score),
                newly_covered=newly,
                tokens=int(candidates.costs[index]),
            )
        )
    return Selection(
        query_id=candidates.query_id,
        selector=repr(selector),
        budget=budget,
        steps=tuple(steps),
        seconds=time.perf_counter() - started,
    )


class Selector(ABC):
    """A selection strategy. Subclasses are frozen dataclasses registered in ``SELECTORS``."""

    name: ClassVar[str]

    @property
    def reads(self) -> tuple[Input, ...]:
        """What this selector reads besides relevance and token costs: the estimate step
        computes exactly these (a bench runs a selector reading coverage per coverage source)."""
        return ()

    def reads_for(self, candidates: Candidates) -> tuple[Input, ...]:
        """What this selector reads of this pool: :attr:`reads`, or fewer where the pool
        shows it will not read them (the estimate step computes these)."""
        return self.reads

    def needs(self, kind: InputKind) -> bool:
        """Whether this selector reads an input of ``kind``."""
        return any(i.kind == kind for i in self.reads)

    def select(self, candidates: Candidates, budget: Budget) -> Selection:
        """Choose an ordered subset of ``candidates`` within ``budget``."""
        started = time.perf_counter()
        if len(candidates) == 0:
            return make_selection(self, candidates, budget, [], [], started)
        order, scores = self._select(candidates, budget)
        return make_selection(self, candidates, budget, order, scores, started)

    @abstractmethod
    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        """Return the picked pool indices in order, and the score that chose each."""

    def __repr__(self) -> str:
        return spec_of(self, self.name)


SELECTORS: Registry[Selector] = Registry("selector")


def parse_selector(spec: str) -> Selector:
    """Build a selector from its specification, e.g. ``"mmr(lam=0.7)"``."""
    return SELECTORS.parse(spec)
