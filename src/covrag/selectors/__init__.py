"""Selectors: choose an ordered, budgeted subset of a candidate pool."""

from covrag.selectors.base import (
    SELECTORS,
    BudgetTracker,
    Candidates,
    Input,
    Selector,
    parse_selector,
)
from covrag.selectors.cluster import ClusterSelector
from covrag.selectors.exact import (
    ExactSelector,
    ExactSolution,
    NotProvenOptimalError,
    optimum_coverage,
    solve_exact,
)
from covrag.selectors.expected import ExpectedCoverageSelector
from covrag.selectors.facility import FacilityLocationSelector
from covrag.selectors.floor import (
    FilterReport,
    above_floor,
    filter_pool,
    passage_support,
    select_above_floor,
)
from covrag.selectors.greedy import GreedyCoverageSelector
from covrag.selectors.lmvu import LMVUSelector
from covrag.selectors.mmkp import MMKPSelector
from covrag.selectors.mmr import MMRSelector
from covrag.selectors.topk import RandomSelector, TopKSelector

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
    "Input",
    "above_floor",
    "filter_pool",
    "optimum_coverage",
    "parse_selector",
    "passage_support",
    "select_above_floor",
    "solve_exact",
]
