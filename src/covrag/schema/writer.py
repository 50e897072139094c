"""How an answer is written: :class:`WriterPolicy`, the record ``covrag ask``'s writer options
(:class:`~covrag.pipeline.AskConfig`) and ``POST /v1/answer``'s writer fields are built from.

Each field carries its default and its help (``metadata["help"]``) here and nowhere else:
``AskConfig`` takes its writer fields from these (the CLI builds its options from them), and the
answer request takes its defaults from :data:`WRITER`; both hand the pipeline a
:class:`WriterPolicy` (``AskConfig.writer_policy()``, ``AnswerRequest.writer_policy()``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

from covrag.errors import ConfigError

WriterName = Literal["synthesis", "extractive"]
FeedbackMode = Literal["self", "pointers"]
UnsupportedPolicy = Literal["quote", "drop", "mark"]  # covrag.generate.support.UNSUPPORTED_POLICIES
Fallback = Literal["quote", "refuse"]  # covrag.generate.support.FALLBACKS


def _help(text: str) -> dict[str, object]:
    return {"help": text}


@dataclass(frozen=True)
class WriterPolicy:
    """How a cited answer is written from its context (help texts in the field metadata)."""

    writer: WriterName = field(
        # extractive stays the default: on ArgKP and Perspectrum dev the synthesising writer
        # copies nothing but states fewer key points (docs/experiments/14-synthesising-writer.md)
        default="extractive",
        metadata=_help(
            "extractive = free cited prose, about 12 sentences; synthesis = one short cited "
            "paragraph per covered sub-question, in its own words (both name what the selected "
            "passages may not answer)"
        ),
    )
    passes: int = field(
        default=0,
        metadata=_help(
            "critique-and-rewrite passes (DES: 2; 0 = the first answer only, the default: "
            "each pass costs about as much again as the answer, which kept covrag ask over "
            "5 minutes a question; what a pass adds on the answer benchmark is not measured "
            "yet)"
        ),
    )
    feedback: FeedbackMode = field(
        default="pointers",
        metadata=_help(
            "critique feedback: self = the LLM's own critique; pointers = also the passages "
            "never cited and those covering sub-questions the answer misses"
        ),
    )
    max_words: int | None = field(
        default=250, metadata=_help("words per passage in the prompts (passages are cut there)")
    )
    sentences: int = field(
        default=6, metadata=_help("sentences asked for in the first answer (DES: 12)")
    )
    rewrite_sentences: int = field(
        default=9, metadata=_help("sentences asked for in a rewrite (DES: 18)")
    )
    max_tokens: int = field(
        default=400, metadata=_help("most tokens per first answer (rewrites: 1.5x)")
    )
    unsupported: UnsupportedPolicy = field(
        default="quote",
        metadata=_help(
            "answer sentences no passage supports (by text alignment or the support judge): "
            "quote = put in its place the passage sentence holding most of its words, quoted "
            "and cited, where one holds enough of it, else leave it out; "
            "drop = leave them out of the answer (the run file records them as dropped); "
            "mark = show them, marked unsupported"
        ),
    )
    fallback: Fallback = field(
        default="quote",
        metadata=_help(
            "when no sentence of the model's answer is supported: quote = quote the selected "
            "passages by sub-question, each quotation cited; refuse = give no answer, and say why"
        ),
    )
    complete: int = field(
        # 3: V_strict 0.66 -> 0.72 (CI +0.016..+0.122) and StRecall 0.57 -> 0.63 over the answer
        # benchmark's seven corpora, no question losing, 824 -> 1122 cited sentences; nothing
        # gained on the release notes, which neither earlier run saw (section 41 had found the
        # gain too sparse for its rule: docs/experiments/45-completed-answers-held-out.md)
        default=3,
        metadata=_help(
            "with fallback quote: an answer that keeps fewer than this many of the model's own "
            "sentences gets the fallback's quotations, by sub-question, after them (0 = never)"
        ),
    )
    evidence: int = field(
        # on: V_strict 0.62 -> 0.68 on the answer benchmark's six corpora (manuals 0.56 -> 0.89,
        # no corpus lower), reader support 1.00, each of the 14 sentences citing an entry read
        # and right (docs/experiments/42-draft-evidence.md)
        default=4,
        metadata=_help(
            "check each draft also against at most this many entries of the corpus that define "
            "the options, settings and functions it names and the context does not (a command's "
            "options in its program's manual), which it may then cite (0 = the context only)"
        ),
    )
    quotes: int = field(
        default=3,
        metadata=_help(
            "after the check, add to a written answer this many context sentences nearest the "
            "question that it does not state, quoted and cited (0 = none)"
        ),
    )

    def __post_init__(self) -> None:
        if self.feedback.startswith("oracle"):
            raise ConfigError("oracle feedback modes need gold labels: use them in benchmarks")
        if self.passes < 0:
            raise ConfigError(f"passes must be >= 0, got {self.passes}")
        if self.complete < 0:
            raise ConfigError(f"complete must be >= 0, got {self.complete}")
        if self.evidence < 0:
            raise ConfigError(f"evidence must be >= 0, got {self.evidence}")
        if self.quotes < 0:
            raise ConfigError(f"quotes must be >= 0, got {self.quotes}")


#: The writer settings where a caller gives none (``covrag ask``'s, ``/v1/answer``'s).
WRITER = WriterPolicy()
#: The names of :class:`WriterPolicy`'s fields, in order.
WRITER_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(WriterPolicy))
