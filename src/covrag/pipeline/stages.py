"""The stages' names the entry points use, in one place.

The entry points (``cli/``, ``server/``, ``integrations/`` and the verbs of ``covrag``) reach
the stages through ``pipeline/``: this module re-exports what they need of them, so the stages
an entry point depends on are listed here (``tests/test_architecture.py`` counts the imports
that go around it).
"""

from covrag.coverage.base import ESTIMATORS, CoverageEstimator, parse_estimator
from covrag.llm.base import LLM
from covrag.plan.sources import AspectOptions
from covrag.retrieve import Retriever
from covrag.select.base import SELECTORS, Selector, parse_selector
from covrag.tokens import TokenCounter

__all__ = [
    "ESTIMATORS",
    "SELECTORS",
    "LLM",
    "AspectOptions",
    "CoverageEstimator",
    "Retriever",
    "Selector",
    "TokenCounter",
    "parse_estimator",
    "parse_selector",
]
