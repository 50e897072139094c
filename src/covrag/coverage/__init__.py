"""Coverage estimation: which passage covers which aspect."""

from covrag.coverage.base import ESTIMATORS, CoverageEstimator, parse_estimator
from covrag.coverage.cover import CoverCoverage
from covrag.coverage.cross_encoder import CrossEncoderCoverage
from covrag.coverage.embedding import EmbeddingCoverage
from covrag.coverage.gold import GoldCoverage

__all__ = [
    "ESTIMATORS",
    "CoverCoverage",
    "CoverageEstimator",
    "CrossEncoderCoverage",
    "EmbeddingCoverage",
    "GoldCoverage",
    "parse_estimator",
]
