"""Generation: cited answers from selected passages, and DES's critique-and-rewrite loop.

The verb is :meth:`CritiqueRewriteGenerator.generate`; :class:`CitedWriter` (``extractive``, the
default) writes free cited prose, :class:`SynthesisWriter` an answer planned by aspect;
:class:`Critic` names what an answer under-used, :func:`parse_citations` turns ``[n]`` marks into
passage ids and reports the ones that name no passage, and :class:`SupportChecker` checks that
each sentence's passage holds it (re-pointing or dropping the sentences whose citation does not).
"""

from covrag.generate.citations import InvalidCitation, ParsedAnswer, parse_citations
from covrag.generate.copying import copied_share, copies
from covrag.generate.critique import (
    FEEDBACK_MODES,
    Critic,
    CritiqueContext,
    answer_support,
    aspects_in_answer,
)
from covrag.generate.generator import CritiqueRewriteGenerator, Writer, rewrite_verdict
from covrag.generate.nearest import NearestQuotes
from covrag.generate.records import (
    Critique,
    Draft,
    GenerationResult,
    LLMCost,
    WritingContext,
    support_warnings,
)
from covrag.generate.support import JUDGE_THRESHOLD, SupportChecker
from covrag.generate.synthesis import SynthesisWriter, plan_parts
from covrag.generate.writer import CitedWriter, truncate_words

#: Writer name (``covrag ask --writer``) -> class.
WRITERS: dict[str, type[CitedWriter] | type[SynthesisWriter]] = {
    SynthesisWriter.name: SynthesisWriter,
    CitedWriter.name: CitedWriter,
}

__all__ = [
    "FEEDBACK_MODES",
    "JUDGE_THRESHOLD",
    "NearestQuotes",
    "WRITERS",
    "SupportChecker",
    "support_warnings",
    "SynthesisWriter",
    "Writer",
    "WritingContext",
    "copied_share",
    "copies",
    "plan_parts",
    "rewrite_verdict",
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
    "answer_support",
    "aspects_in_answer",
    "parse_citations",
    "truncate_words",
]
