"""Coverage and relevance measures as parameterised value objects.

A measure prints back as the string that builds it, in ir_measures' syntax with a cutoff after
``@``: ``alpha-nDCG@10``, ``alpha-nDCG(alpha=0.7)@10``, ``StRecall@20``, ``P@10``, ``nDCG@10``,
``RVC@1024``, ``RVC2@512``. For ranking measures the number after ``@`` is a rank cutoff; for the
budgeted RVC and RVC2 it is a token budget. Parameters at their default are left out of the
printed form, so ``alpha-nDCG(alpha=0.5)@10`` prints (and compares equal) as ``alpha-nDCG@10``.
Measures are hashable: use them, or their strings, as dict keys and config values.

Example:
    >>> m = parse_measure("alpha-nDCG(alpha=0.7)@10")
    >>> m, m.alpha, m.cutoff
    (alpha-nDCG(alpha=0.7)@10, 0.7, 10)
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from covrag.errors import ConfigError
from covrag.evaluation import _kernels
from covrag.registry import Registry, split_spec
from covrag.types import FloatArray

if TYPE_CHECKING:
    from covrag.evaluation._context import Context

MEASURES: Registry[Measure] = Registry("measure")
"""Measure classes by name (``MEASURES.names()`` lists them)."""


@dataclass(frozen=True, repr=False)
class Measure(ABC):
    """A measure of one ranking per topic. Subclasses are frozen dataclasses in ``MEASURES``."""

    name: ClassVar[str]
    at: ClassVar[str] = "cutoff"
    """The field the number after ``@`` sets."""

    def __repr__(self) -> str:
        params = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name != self.at and value != f.default:
                params.append(f"{f.name}={value!r}")
        args = f"({', '.join(params)})" if params else ""
        return f"{self.name}{args}@{getattr(self, self.at)}"

    @property
    def depth(self) -> int:
        """How many ranks of each ranking the measure reads (0: the whole ranking)."""
        return 0

    @abstractmethod
    def _compute(self, context: Context) -> FloatArray:
        """Per-topic values for the batch of topics in ``context``."""


def _check_positive_int(measure: Measure, name: str) -> None:
    value = getattr(measure, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{measure.name}: {name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True, repr=False)
class _Ranked(Measure):
    cutoff: int

    def __post_init__(self) -> None:
        _check_positive_int(self, "cutoff")

    @property
    def depth(self) -> int:
        return self.cutoff


@MEASURES.register
@dataclass(frozen=True, repr=False)
class AlphaNDCG(_Ranked):
    """alpha-nDCG@k (Clarke et al., "Novelty and diversity in information retrieval
    evaluation", SIGIR 2008), computed exactly as NIST ndeval (and so pyndeval) computes it.

    A document at rank r (from 1) gains ``sum over its aspects a of (1-alpha)^c(a)``, where c(a)
    is how many higher-ranked documents support a; the gain is discounted by
    ``log(2)/log(r+1)``; alpha-DCG@k sums the top k. alpha-nDCG@k divides it by the alpha-DCG@k
    of ndeval's ideal ranking: a greedy ranking of all judged documents that at each rank takes
    the largest gain, ties to the lexicographically largest doc id. Only aspects with a
    supporting judged document count; a topic without any scores 0; unjudged documents gain 0.
    Unlike ndeval, any cutoff works (ndeval stops at 20).

    Attributes:
        cutoff: Rank cutoff k.
        alpha: Redundancy penalty in [0, 1]: 0 ignores redundancy, 1 rewards only novelty.
    """

    name = "alpha-nDCG"
    alpha: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float):
            raise ConfigError(f"alpha-nDCG: alpha must be a number, got {self.alpha!r}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"alpha-nDCG: alpha must lie in [0, 1], got {self.alpha!r}")
        object.__setattr__(self, "alpha", float(self.alpha))

    def _compute(self, context: Context) -> FloatArray:
        return context.alpha_ndcg(self.alpha, self.cutoff)


@MEASURES.register
@dataclass(frozen=True, repr=False)
class StRecall(_Ranked):
    """Subtopic recall S-recall@k (Zhai, Cohen and Lafferty, "Beyond independent relevance",
    SIGIR 2003): distinct aspects supported by the top k documents / aspects with at least one
    supporting judged document. DES's "share of distinct nuggets covered in the top 10".

    Attributes:
        cutoff: Rank cutoff k.
    """

    name = "StRecall"

    def _compute(self, context: Context) -> FloatArray:
        return context.subtopic_recall(self.cutoff)


@MEASURES.register
@dataclass(frozen=True, repr=False)
class Precision(_Ranked):
    """Precision P@k = relevant documents in the top k / k, a document being relevant when it
    supports at least one aspect (trec_eval's P_k on binary qrels; a short ranking still
    divides by k).

    Attributes:
        cutoff: Rank cutoff k.
    """

    name = "P"

    def _compute(self, context: Context) -> FloatArray:
        return context.precision(self.cutoff)


@MEASURES.register
@dataclass(frozen=True, repr=False)
class Excluded(_Ranked):
    """Excl@k: the share of the top k that supports an aspect the request asked to leave out
    (aspects with polarity ``exclude``, e.g. "... but skip its reception"); lower is better,
    0 when the topic excludes nothing. Like P@k, a short ranking still divides by k. No
    reference implementation exists (ndeval has no notion of an unwanted subtopic).

    Attributes:
        cutoff: Rank cutoff k.
    """

    name = "Excl"

    def _compute(self, context: Context) -> FloatArray:
        return context.excluded_share(self.cutoff)


@MEASURES.register
@dataclass(frozen=True, repr=False)
class NDCG(_Ranked):
    """nDCG@k with binary gains (Jarvelin and Kekalainen, TOIS 2002), as trec_eval's
    ndcg_cut_k: DCG@k = sum over relevant documents in the top k of 1/log2(rank+1), divided by
    the DCG@k of all relevant judged documents ranked first. 0 without relevant documents.

    Attributes:
        cutoff: Rank cutoff k.
    """

    name = "nDCG"

    def _compute(self, context: Context) -> FloatArray:
        return context.binary_ndcg(self.cutoff)


@MEASURES.register
@dataclass(frozen=True, repr=False)
class RVC(Measure):
    """Recall of viewpoint coverage under a token budget (LMVU; see METHODS.md section 3).

    Walk the ranking in order and include each document whose token cost fits what is left of
    the budget T; one that does not fit is skipped, never truncated, and later cheaper ones may
    still fit. RVC@T = aspects supported by an included document / aspects with at least one
    supporting judged document. Costs come from the judgments; a ranked document without a
    known cost (including an unjudged one) raises DataError.

    Attributes:
        budget: Token budget T.
    """

    name = "RVC"
    at = "budget"
    budget: int

    def __post_init__(self) -> None:
        _check_positive_int(self, "budget")

    def _compute(self, context: Context) -> FloatArray:
        support = context.budget_support(self.budget, repr(self))
        return _kernels.viewpoint_coverage(support, context.actual, graded=False)


@MEASURES.register
@dataclass(frozen=True, repr=False)
class RVC2(RVC):
    """RVC with redundancy credit (LMVU): the same budget walk as RVC, but an aspect supported
    by exactly one included document counts 1/2 and by two or more counts 1.

    Attributes:
        budget: Token budget T.
    """

    name = "RVC2"

    def _compute(self, context: Context) -> FloatArray:
        support = context.budget_support(self.budget, repr(self))
        return _kernels.viewpoint_coverage(support, context.actual, graded=True)


#: The most digits of the number after ``@`` (any cutoff or budget in use has far fewer).
_MAX_AT_DIGITS = 18


def parse_measure(spec: str | Measure) -> Measure:
    """Build a measure from its specification, e.g. ``parse_measure("alpha-nDCG@10")``.

    Raises:
        ConfigError: an unknown name (with suggestions), a bad parameter or a missing cutoff.
    """
    if isinstance(spec, Measure):
        return spec
    if not isinstance(spec, str):
        raise ConfigError(f"a measure must be a Measure or a string, got {spec!r}")
    base, sign, number = spec.strip().rpartition("@")
    if not sign:
        base, number = number, ""
    name, params = split_spec(base)
    factory = MEASURES.get(name)
    at = str(getattr(factory, "at", "cutoff"))
    overrides = {}
    if sign:
        digits = number.strip()
        if not digits.isdigit():
            raise ConfigError(f"measure {spec!r}: '@' must be followed by an integer")
        if len(digits.lstrip("0")) > _MAX_AT_DIGITS:  # before int(): 5,000 digits do not convert
            raise ConfigError(
                f"measure {base.strip()}@...: the {at} after '@' has {len(digits):,} digits "
                f"(at most {_MAX_AT_DIGITS})"
            )
        overrides[at] = int(digits)
    elif at not in params:
        raise ConfigError(f"measure {spec!r} needs a {at} after '@', e.g. {name}@10")
    return MEASURES.parse(base, **overrides)


def parse_measures(specs: str | Measure | Iterable[str | Measure]) -> tuple[Measure, ...]:
    """One measure (object or string) or an iterable of them, as a tuple of measures."""
    if isinstance(specs, Measure | str):
        return (parse_measure(specs),)
    result = tuple(parse_measure(s) for s in specs)
    if not result:
        raise ConfigError("no measure given")
    return result
