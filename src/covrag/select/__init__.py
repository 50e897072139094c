"""Selectors: choose an ordered, budgeted subset of a candidate pool."""

from covrag.select.base import SELECTORS, BudgetTracker, Candidates, Selector, parse_selector
from covrag.select.cluster import ClusterSelector
from covrag.select.exact import (
    ExactSelector,
    ExactSolution,
    NotProvenOptimalError,
    optimum_coverage,
    solve_exact,
)
from covrag.select.expected import ExpectedCoverageSelector
from covrag.select.facility import FacilityLocationSelector
from covrag.select.floor import (
    FilterReport,
    above_floor,
    filter_pool,
    passage_support,
    question_similarity,
    select_above_floor,
)
from covrag.select.greedy import GreedyCoverageSelector
from covrag.select.lmvu import LMVUSelector
from covrag.select.mmkp import MMKPSelector
from covrag.select.mmr import MMRSelector
from covrag.select.topk import RandomSelector, TopKSelector

__all__ = [
    "SELECTORS",
    "BudgetTracker",
    "Candidates",
    "ClusterSelector",
    "ExactSelector",
    "ExactSolution",
    "ExpectedCoverageSelector",
    "FacilityLocationSelector",
    "GreedyCoverageSelector",
    "LMVUSelector",
    "MMKPSelector",
    "MMRSelector",
    "NotProvenOptimalError",
    "RandomSelector",
    "Selector",
    "TopKSelector",
    "FilterReport",
    "above_floor",
    "filter_pool",
    "optimum_coverage",
    "parse_selector",
    "passage_support",
    "question_similarity",
    "select_above_floor",
    "solve_exact",
]
