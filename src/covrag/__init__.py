"""covrag: build RAG context that covers the whole question, and measure it honestly."""

from covrag.types import Aspect, Budget, CoverageMatrix, Passage, Selection, SelectionStep, Topic
from covrag.version import __version__

__all__ = [
    "Aspect",
    "Budget",
    "CoverageMatrix",
    "Passage",
    "Selection",
    "SelectionStep",
    "Topic",
    "__version__",
]
