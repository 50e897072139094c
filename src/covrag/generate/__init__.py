"""Generation: cited answers from selected passages, and DES's critique-and-rewrite loop.

The verb is :meth:`CritiqueRewriteGenerator.generate`; :class:`CitedWriter` writes and rewrites,
:class:`Critic` names what an answer under-used, :func:`parse_citations` turns ``[n]`` marks into
passage ids and reports the ones that name no passage.
"""

from covrag.generate.citations import InvalidCitation, ParsedAnswer, parse_citations
from covrag.generate.critique import (
    FEEDBACK_MODES,
    Critic,
    CritiqueContext,
    answer_support,
    aspects_in_answer,
)
from covrag.generate.generator import CritiqueRewriteGenerator
from covrag.generate.records import Critique, Draft, GenerationResult, LLMCost, answer_record
from covrag.generate.writer import CitedWriter, truncate_words

__all__ = [
    "FEEDBACK_MODES",
    "CitedWriter",
    "Critic",
    "Critique",
    "CritiqueContext",
    "CritiqueRewriteGenerator",
    "Draft",
    "GenerationResult",
    "InvalidCitation",
    "LLMCost",
    "ParsedAnswer",
    "answer_record",
    "answer_support",
    "aspects_in_answer",
    "parse_citations",
    "truncate_words",
]
