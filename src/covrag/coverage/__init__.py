"""Coverage estimation: which passage covers which aspect."""

from covrag.coverage.base import ESTIMATORS, CoverageEstimator, parse_estimator
from covrag.coverage.embedding import EmbeddingCoverage
from covrag.coverage.gold import GoldCoverage

__all__ = [
    "ESTIMATORS",
    "CoverageEstimator",
    "EmbeddingCoverage",
    "GoldCoverage",
    "parse_estimator",
]
