"""The context sentences nearest the question that a checked answer does not state, added to it
as quotations.

A 1.5B writer cites a passage and states one thing of it: on the answer benchmark
(``benchmarks/bench_answer_nuggets.py``), the context held 0.54 of the nuggets and the answer
stated 0.27 with support, and most of those it missed were in passages it cited
(docs/experiments/33-nearest-sentences.md). The sentence of a manual page that answers the
question is usually the one worded most like it. So after the citation check
(:mod:`covrag.generate.support`), :class:`NearestQuotes` adds to the answer the ``quotes``
context sentences nearest the question (cosine of the packaged MiniLM encoder's vectors) that
the answer does not already state (no kept sentence writes most of their words) and that are
as near the question as the topic gate asks of a passage (cosine 0.5). Each is an
exact span of its passage, in quotation marks and cited, verified ``aligned`` (a reader finds
it word for word), after the written sentences and before a closing framing sentence; the
draft's notes say how many were added.

The fallback's quotations (when nothing the writer wrote holds) get them too, first: those are
chosen by the words of each sub-question, these by the question. An answer with no supported, cited
sentence gets none: nothing is added to a refusal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from covrag.embed import Encoder, default_encoder
from covrag.errors import ConfigError
from covrag.generate.quotes import fold_in, quotation
from covrag.generate.records import Draft
from covrag.generate.requote import STATED_SHARE as STATED_SHARE  # re-exported
from covrag.generate.requote import quotable_spans, stated, stems
from covrag.schema.defaults import DEFAULT_GATE
from covrag.types import Answer, Citation, Passage


def candidates(
    passages: Sequence[Passage], kept: Sequence[Citation]
) -> list[tuple[Passage, tuple[int, int]]]:
    """Each sentence of ``passages`` long enough to quote that ``kept`` does not state (no kept
    sentence writes :data:`STATED_SHARE` of its word stems)."""
    written = [stems(sentence.text) for sentence in kept]
    found = []
    for passage in passages:
        for start, end in quotable_spans(passage.text):
            wanted = stems(passage.text[start:end])
            if wanted and stated(wanted, written):
                continue
            found.append((passage, (start, end)))
    return found


class NearestQuotes:
    """Adds the context sentences nearest the question to a checked answer (module docs).

    Args:
        quotes: How many to add at most (0 = none).
        encoder: Embeds the question and the sentences; None = the packaged MiniLM, loaded on
            first use.
        least: The least cosine to the question a sentence needs: by default the topic gate's
            value (:data:`~covrag.schema.defaults.DEFAULT_GATE`), the nearness a passage needs
            to enter ``ask``'s context by itself.
    """

    def __init__(
        self, quotes: int = 3, encoder: Encoder | None = None, *, least: float = DEFAULT_GATE
    ) -> None:
        if quotes < 0:
            raise ConfigError(f"quotes must be >= 0, got {quotes}")
        if not -1.0 <= least <= 1.0:
            raise ConfigError(f"least must lie in [-1, 1], got {least}")
        self.quotes = quotes
        self.least = least
        self._encoder = encoder

    def __repr__(self) -> str:
        return f"NearestQuotes(quotes={self.quotes}, least={self.least})"

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = default_encoder()
        return self._encoder

    def nearest(
        self, question: str, passages: Sequence[Passage], kept: Sequence[Citation]
    ) -> list[Citation]:
        """The quotations to add: at most ``quotes``, nearest the question first."""
        found = candidates(passages, kept)
        if not found or not self.quotes:
            return []
        texts = [p.text[s:e] for p, (s, e) in found]
        vectors = self.encoder.encode([question, *texts])
        similarity = vectors[1:] @ vectors[0]
        order = sorted(range(len(found)), key=lambda i: (-float(similarity[i]), i))
        order = [i for i in order if similarity[i] >= self.least]
        return [quotation(*found[i]) for i in order[: self.quotes]]

    def add(self, question: str, draft: Draft, passages: Sequence[Passage]) -> Draft:
        """``draft`` with the quotations added, when it is a checked answer the model wrote."""
        kept = draft.answer.sentences
        if (
            not self.quotes
            or not draft.checked
            or draft.fallback == "refuse"
            or not any(s.supported and s.passage_ids for s in kept)
        ):
            return draft
        kept, added = _fold(kept, self.nearest(question, passages, kept))
        if not added:
            return dataclasses.replace(
                draft,
                parsed=dataclasses.replace(draft.parsed, answer=Answer(kept, draft.answer.dropped)),
            )
        if draft.fallback == "quote":  # quotations all: the nearest the question lead
            at = 0
        else:  # after the written sentences, before one naming what is not answered
            at = len(kept)
            while at and kept[at - 1].framing:
                at -= 1
        sentences = (*kept[:at], *added, *kept[at:])
        invalid = tuple(
            dataclasses.replace(c, sentence=c.sentence + len(added)) if c.sentence >= at else c
            for c in draft.parsed.invalid
        )
        parsed = dataclasses.replace(
            draft.parsed, answer=Answer(sentences, draft.answer.dropped), invalid=invalid
        )
        where = "before the quotations" if at == 0 else "after the written sentences"
        note = (
            f"{len(added)} quotation(s) added {where}: the context sentences nearest the "
            "question that the answer did not state"
        )
        return dataclasses.replace(draft, parsed=parsed, tidied=(*draft.tidied, note))


def _fold(
    kept: Sequence[Citation], added: Sequence[Citation]
) -> tuple[tuple[Citation, ...], list[Citation]]:
    """``kept`` and ``added`` without an added quotation that a kept or earlier added one holds;
    one that holds a kept quotation takes its place, so the kept sentences keep their places
    (:func:`~covrag.generate.quotes.fold_in`)."""
    mine, out = list(kept), list[Citation]()
    for quoted in added:
        if not fold_in(mine, quoted) and not fold_in(out, quoted):
            out.append(quoted)
    return tuple(mine), out
