"""Expected coverage: greedy selection on coverage *probabilities* instead of thresholded coverage.

The DES rule counts an aspect as covered once any picked passage crosses the threshold, so every
passage above the threshold for an uncovered aspect looks equally good and the choice among them
falls to relevance. When the estimator is unsure, a better target is the expected weighted number
of aspects covered, reading each probability ``q[i, a]`` as the chance that passage i covers
aspect a, independently of the others:

    f(S) = sum_a w_a * (1 - prod_{i in S} (1 - q[i, a]))

This is the coverage objective of intent-aware diversification (IA-Select, Agrawal et al., WSDM
2009; xQuAD, Santos et al., WWW 2010) applied to a passages x aspects matrix. It is monotone and
submodular, so greedy selection reaches ``1 - 1/e`` of the optimum under a passage-count budget;
the marginal gain of i is ``sum_a w_a q[i, a] * left[a]`` with ``left[a]`` the chance that aspect a
is still uncovered.

Estimator probabilities are rarely calibrated for this use: a cross-encoder gives high scores to
passages on the aspect's topic that argue the opposite. ``power`` sharpens them (``q = p ** power``)
so that confident matches dominate near misses; covrag's default, 4, was chosen on the dev splits
(docs/experiments/04-cross-encoder.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError
from covrag.selectors.base import COVERAGE, SAME_POINT, SELECTORS, Candidates, Input, Selector
from covrag.selectors.exclusion import apply_exclusion, check_exclusion
from covrag.selectors.facility import (
    MAX_POOL,
    FacilityLocation,
    Float32Array,
    vector_similarity,
)
from covrag.selectors.optimize import OPTIMIZERS, SATURATED, greedy
from covrag.selectors.similarity import VECTOR_SIMILARITIES, check_similarity, vector_input
from covrag.types import Budget, FloatArray, IntArray


class ExpectedCoverage:
    """``f(S) = sum_a w_a (1 - prod_{i in S} (1 - q[i, a]))``, minus per-item penalties.

    Keeps ``left[a] = prod_{i in S} (1 - q[i, a])``. The penalty (exclusion) is a modular term,
    so the objective stays submodular; gains are clipped at 0.
    """

    floor = SATURATED
    submodular = True

    def __init__(self, probs: FloatArray, weights: FloatArray, penalty: FloatArray) -> None:
        self.probs = probs
        self.weights = weights
        self.penalty = penalty
        self.left = np.ones(probs.shape[1])

    def gains(self, indices: IntArray) -> FloatArray:
        result: FloatArray = np.maximum(self.unpenalized(indices) - self.penalty[indices], 0.0)
        return result

    def unpenalized(self, indices: IntArray) -> FloatArray:
        """The expected coverage each passage adds, before its penalty."""
        result: FloatArray = self.probs[indices] @ (self.weights * self.left)
        return result

    def add(self, index: int) -> None:
        self.left *= 1.0 - self.probs[index]


class Represented:
    """Expected coverage plus ``weight`` x facility location per pool passage.

    ``f(S) = EC(S) + weight / n * sum_i t_i max_{j in S} sim[i, j]``: a sum of two monotone
    submodular functions, so still one (greedy keeps its guarantee, lazy greedy its picks). The
    second term rewards passages that stand for many others of the pool; it corrects an
    estimator that is unsure which aspect a passage covers, where covering the aspects alone
    would take several passages making one point. ``t_i >= 0`` is how much passage i counts as
    one to represent (1 for every passage when None). An exclusion penalty is taken off the
    sum (the penalty is modular, so the objective stays submodular; gains are clipped at 0).
    """

    floor = SATURATED
    submodular = True

    def __init__(
        self,
        coverage: ExpectedCoverage,
        similarity: Float32Array,
        weight: float,
        targets: FloatArray | None = None,
    ) -> None:
        if targets is not None:
            # Scaling column i by t_i >= 0 scales every gain toward i by t_i: facility location
            # reads row j as "what picking j adds", column i as the passage represented.
            similarity = similarity * targets.astype(np.float32)[None, :]
        self.coverage = coverage
        self.location = FacilityLocation(similarity)
        self.scale = weight / max(1, similarity.shape[0])

    def gains(self, indices: IntArray) -> FloatArray:
        # The exclusion penalty comes off the whole gain, so a penalised passage cannot win
        # back through the term what it loses on coverage.
        raw = self.coverage.unpenalized(indices) + self.scale * self.location.gains(indices)
        result: FloatArray = np.maximum(raw - self.coverage.penalty[indices], 0.0)
        return result

    def add(self, index: int) -> None:
        self.coverage.add(index)
        self.location.add(index)


#: ``targets`` of the facility-location term: every pool passage, or those tied to an aspect.
TARGETS = ("all", "supported")
#: ``scale`` of the facility-location term's weight.
SCALES = ("fixed", "uncertain")


def uncovered_share(probs: FloatArray, weights: FloatArray) -> float:
    """``1 - sum_a w_a max_i q[i, a] / sum_a w_a``: the weighted share of aspects that even
    their best passage leaves uncovered (0 with no wanted aspect or no passage)."""
    total = float(weights.sum())
    if total <= 0 or probs.shape[0] == 0:
        return 0.0
    return float(1.0 - (probs.max(axis=0) * weights).sum() / total)


@SELECTORS.register
@dataclass(frozen=True, repr=False, kw_only=True)
class ExpectedCoverageSelector(Selector):
    """Greedy maximisation of the expected weighted number of aspects covered.

    Needs ``candidates.coverage`` (its probabilities; the threshold only shapes the trace and the
    exclusion penalty). Once no passage adds expected coverage, the rest follow in relevance order.

    Attributes:
        power: Probabilities are raised to this power before use (1 = as estimated).
        cost_aware: Divide each gain by the passage's token cost (0 counts as 1).
        exclude: ``ignore``, ``penalize`` or ``forbid`` passages covering excluded aspects (see
            :mod:`covrag.selectors.exclusion`; "covering" uses the matrix's threshold).
        penalty: Gain lost per excluded aspect a passage covers, with ``exclude="penalize"``.
        represent: Weight of a facility-location term over the pool (:class:`Represented`);
            0 selects on coverage alone.
        targets: Which pool passages the term represents: ``all``, each counting 1, or
            ``supported``, each counting its estimated probability of covering its likeliest
            wanted aspect (a passage the estimator ties to no aspect needs no representative).
        scale: ``fixed`` uses ``represent`` as it is; ``uncertain`` multiplies it by the share of
            the wanted aspects the pool's best passages leave uncovered, ``1 - mean_a max_i
            q[i, a]`` (weighted, on the powered probabilities): the term matters where the
            estimator finds no confident match, and fades where it covers every aspect.
        similarity: The facility-location term's similarity: ``same-point`` (the shipped
            same-point bi-encoder, :mod:`covrag.selectors.similarity`) or ``embedding``.
        similarity_model: For ``same-point``, another ONNX bi-encoder folder (None: shipped).
        contrast: The term's similarities counted past this many standard deviations above the
            pool's mean pair (:func:`covrag.selectors.facility.contrasted`); None: as they are.
        optimizer: ``naive`` (every gain recomputed each step as one matrix-vector product) or
            ``lazy`` (Minoux's lazy greedy); both give the same picks. Naive is the default:
            vectorised, it is 10-30x faster than the heap-based lazy greedy on pools of
            hundreds to thousands of passages at k = 10.

    Example:
        >>> from covrag.selectors import parse_selector
        >>> parse_selector("expected-coverage(power=2, cost_aware=True)")
        expected-coverage(power=2, cost_aware=True)
    """

    name = "expected-coverage"
    power: float = 4.0
    cost_aware: bool = False
    exclude: str = "ignore"
    penalty: float = 1.0
    represent: float = 0.0
    targets: str = "all"
    scale: str = "fixed"
    similarity: str = SAME_POINT
    similarity_model: str | None = None
    contrast: float | None = 1.0
    optimizer: str = "naive"

    @property
    def reads(self) -> tuple[Input, ...]:
        if self.represent > 0:
            return (Input(COVERAGE), vector_input(self.similarity, self.similarity_model))
        return (Input(COVERAGE),)

    def __post_init__(self) -> None:
        if not self.power > 0:
            raise ConfigError(f"expected-coverage: power must be > 0, got {self.power!r}")
        if not (math.isfinite(self.represent) and self.represent >= 0):
            raise ConfigError(
                f"expected-coverage: represent must be a number >= 0, got {self.represent!r}"
            )
        for field, value, allowed in (
            ("targets", self.targets, TARGETS),
            ("scale", self.scale, SCALES),
        ):
            if value not in allowed:
                raise ConfigError(
                    f"expected-coverage: {field} must be one of {allowed}, got {value!r}"
                )
        check_similarity(self.name, self.similarity, self.similarity_model, VECTOR_SIMILARITIES)
        if self.contrast is not None and not math.isfinite(self.contrast):
            raise ConfigError(f"expected-coverage: contrast must be finite, got {self.contrast!r}")
        check_exclusion(self.exclude, self.penalty)
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(
                f"expected-coverage: optimizer must be one of {tuple(OPTIMIZERS)}, "
                f"got {self.optimizer!r}"
            )

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        covered = candidates.covered  # raises a clear error when there is no matrix
        assert candidates.coverage is not None
        effect = apply_exclusion(candidates, covered, self.exclude, self.penalty)
        raw = np.clip(np.asarray(candidates.coverage.probs, dtype=np.float64), 0.0, 1.0)
        probs = raw**self.power
        coverage = ExpectedCoverage(probs, effect.weights, effect.penalty)
        objective: ExpectedCoverage | Represented = coverage
        weight = self.represent
        if weight > 0 and self.scale == "uncertain":
            weight *= uncovered_share(probs, effect.weights)
        if weight > 0:  # a term faded to nothing embeds no pool
            if len(candidates) > MAX_POOL:
                raise ConfigError(
                    f"expected-coverage(represent=...) keeps an n x n similarity matrix; "
                    f"{len(candidates)} passages exceed its limit of {MAX_POOL}: shorten the "
                    "pool first (e.g. top-k by relevance) or set represent=0"
                )
            similarity = vector_similarity(
                candidates, self.similarity, self.similarity_model, self.contrast
            )
            wanted = effect.weights > 0
            targets = None
            if self.targets == "supported":
                targets = raw[:, wanted].max(axis=1) if wanted.any() else np.zeros(len(raw))
            objective = Represented(coverage, similarity, weight, targets)
        return greedy(
            objective,
            candidates,
            budget,
            optimizer=self.optimizer,
            cost_aware=self.cost_aware,
            allowed=effect.allowed,
            last=effect.penalty,
        )
