"""covrag: build RAG context that covers the whole question, and measure it honestly."""

from covrag.types import Aspect, Budget, CoverageMatrix, Passage, Selection, SelectionStep, Topic

__version__ = "0.1.0"

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
