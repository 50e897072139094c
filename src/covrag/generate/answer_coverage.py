"""Per sub-question: does the context cover it, and does the answer?

"Covered" has one meaning everywhere: the coverage estimator's decision, ``probs >= threshold``
of the matrix (:attr:`~covrag.types.CoverageMatrix.covered`, with each aspect's own threshold).
The *context* covers an aspect when a selected passage covers it. The *answer* covers it when a
supported sentence (one the citation check verified, :mod:`covrag.generate.support`) cites a
passage that covers it: a passage the answer never cites, or cites only for a sentence it does
not hold, does not make the answer cover anything. An answer that was not checked covers
nothing under this definition, so a claim of coverage is never made for unchecked text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from covrag.types import Answer, Aspect, CoverageMatrix


@dataclass(frozen=True, slots=True)
class AspectCoverage:
    """Whether the context and the answer cover one aspect.

    Attributes:
        aspect_id: The aspect.
        context_passages: Selected passages that cover it (in selection order).
        answer_sentences: Indexes of the answer's supported sentences that cite one of those.
    """

    aspect_id: str
    context_passages: tuple[str, ...]
    answer_sentences: tuple[int, ...]

    @property
    def in_context(self) -> bool:
        return bool(self.context_passages)

    @property
    def in_answer(self) -> bool:
        return bool(self.answer_sentences)


def answer_coverage(
    answer: Answer,
    coverage: CoverageMatrix,
    aspects: Sequence[Aspect],
    selected: Sequence[str],
) -> tuple[AspectCoverage, ...]:
    """One :class:`AspectCoverage` per wanted aspect (``exclude`` aspects are left out).

    Example:
        >>> import numpy as np
        >>> from covrag.types import Citation, SupportCheck
        >>> m = CoverageMatrix(("p1", "p2"), ("a",), np.array([[0.9], [0.1]]), threshold=0.5)
        >>> held = SupportCheck(("p1",), "aligned", 1.0, "p1", (0, 4))
        >>> answer = Answer((Citation("Text.", ("p1",), check=held),))
        >>> answer_coverage(answer, m, [Aspect("a", "A?")], ["p1", "p2"])[0].in_answer
        True
    """
    rows = {p: i for i, p in enumerate(coverage.passage_ids)}
    covered = coverage.covered
    found = []
    for aspect in aspects:
        if aspect.polarity == "exclude":
            continue
        if aspect.id not in coverage.aspect_ids:
            found.append(AspectCoverage(aspect.id, (), ()))
            continue
        column = coverage.aspect_ids.index(aspect.id)
        passages = tuple(p for p in selected if p in rows and covered[rows[p], column])
        sentences = tuple(
            i
            for i, s in enumerate(answer.sentences)
            if s.supported and not s.framing and set(s.passage_ids) & set(passages)
        )
        found.append(AspectCoverage(aspect.id, passages, sentences))
    return tuple(found)
