"""Answer-side evaluation: which nuggets reach the answer, and whether its citations hold.

DES's answer measures, per topic (the nuggets are the topic's aspects):

- **answer StRecall**: the share of nuggets the answer supports (``support`` or ``partial``);
- **transfer rate**: of the nuggets present in the context (some selected passage covers them),
  the share the answer supports; NaN when the context holds none;
- **V_strict**: the share of *vital* nuggets the answer fully supports (``support`` only); NaN
  when the topic has no vital nugget. Where the data flags none (ArgKP), vital nuggets come from
  the labels: :func:`vital_from_labels`;
- **citation precision**: of the sentences that cite at least one passage, the share whose cited
  passages support them; NaN when no sentence cites. **cited share**: sentences that cite.
- **copy rate**: the share of the answer's sentences that copy a context passage, verbatim or
  nearly: the longest common substring of the normalised sentence and passage covers at least
  0.9 of the sentence (:func:`covrag.generate.copying.copies`); NaN for an empty answer. Judged
  by neither judge: it is a string measure.

Two judges: an LLM (``support`` / ``partial`` / ``not`` per nugget, supported or not per cited
sentence; constrained JSON, one call per answer for each question) and the coverage
cross-encoder as a cheap judge (a nugget is supported when some sentence covers it; a sentence
when one of its cited passages covers it, reading the sentence as the aspect). Their agreement
on nugget support is reported as the raw agreement and Cohen's kappa.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from covrag.coverage.base import CoverageEstimator, answer_support
from covrag.errors import ConfigError
from covrag.evaluation.answer_judge import SUPPORT_LABELS as SUPPORT_LABELS  # re-exported
from covrag.evaluation.answer_judge import LLMAnswerJudge as LLMAnswerJudge  # re-exported
from covrag.evaluation.answer_judge import SupportLabel as SupportLabel  # re-exported
from covrag.evaluation.answer_judge import citation_reply as citation_reply  # re-exported
from covrag.evaluation.answer_judge import nugget_reply as nugget_reply  # re-exported
from covrag.generate.copying import copies
from covrag.llm.cost import LLMCost
from covrag.types import Answer, Aspect, BoolArray, Passage, Topic

JUDGES = ("llm", "cheap")


def vital_from_labels(topic: Topic, share: float = 0.5) -> frozenset[str]:
    """Vital nuggets of a topic whose data flags none: the key points most passages match.

    Aspects are ranked by how many pool passages the gold labels match them with; the vital set
    is the shortest prefix of that ranking whose matches reach ``share`` of all matches (ties
    at the boundary included). On ArgKP this keeps the 2-4 key points that most arguments
    make. When the topic flags vital aspects itself, those are returned.
    """
    flagged = frozenset(a.id for a in topic.aspects if a.vital)
    if flagged:
        return flagged
    counts = topic.label_matrix().sum(axis=0) if topic.passages else np.zeros(0)
    total = float(counts.sum())
    if total == 0:
        return frozenset()
    order = sorted(range(len(topic.aspects)), key=lambda j: -int(counts[j]))
    vital: list[str] = []
    reached = 0.0
    last = None
    for j in order:
        if reached >= share * total and counts[j] != last:
            break
        vital.append(topic.aspects[j].id)
        reached += float(counts[j])
        last = counts[j]
    return frozenset(vital)


@dataclass(frozen=True, slots=True)
class NuggetJudgment:
    """How the judges rate one nugget against the answer.

    Attributes:
        aspect_id: The nugget.
        llm: The LLM judge's label, or None when it was not asked or failed.
        cheap: Whether the cross-encoder finds the nugget in some sentence (None: not asked).
        cheap_prob: The best sentence's probability.
    """

    aspect_id: str
    llm: SupportLabel | None = None
    cheap: bool | None = None
    cheap_prob: float = float("nan")


@dataclass(frozen=True, slots=True)
class SentenceJudgment:
    """Whether one cited sentence is supported by the passages it cites."""

    index: int
    passage_ids: tuple[str, ...]
    llm: bool | None = None
    cheap: bool | None = None


@dataclass(frozen=True)
class AnswerEvaluation:
    """The judgments of one answer and its measures.

    Attributes:
        query_id: The topic.
        nuggets: One judgment per nugget, in the topic's aspect order.
        in_context: Nuggets some context passage covers.
        vital: Vital nuggets.
        sentences: One judgment per sentence that cites a valid passage.
        n_sentences: Sentences in the answer.
        cost: What the LLM judge spent.
        copied: Sentences that copy a context passage (see the copy rate).
    """

    query_id: str
    nuggets: tuple[NuggetJudgment, ...]
    in_context: frozenset[str]
    vital: frozenset[str]
    sentences: tuple[SentenceJudgment, ...]
    n_sentences: int
    cost: LLMCost = LLMCost()
    copied: int = 0

    def _supported(self, judge: str, strict: bool = False) -> dict[str, bool | None]:
        if judge not in JUDGES:
            raise ConfigError(f"judge must be one of {JUDGES}, got {judge!r}")
        result: dict[str, bool | None] = {}
        for n in self.nuggets:
            if judge == "cheap":
                result[n.aspect_id] = n.cheap
            elif n.llm is None:
                result[n.aspect_id] = None
            else:
                result[n.aspect_id] = n.llm == "support" or (not strict and n.llm == "partial")
        return result

    def answer_strecall(self, judge: str = "llm") -> float:
        return _share(self._supported(judge), None)

    def transfer_rate(self, judge: str = "llm") -> float:
        return _share(self._supported(judge), self.in_context)

    def v_strict(self, judge: str = "llm") -> float:
        return _share(self._supported(judge, strict=True), self.vital)

    def citation_precision(self, judge: str = "llm") -> float:
        if judge not in JUDGES:
            raise ConfigError(f"judge must be one of {JUDGES}, got {judge!r}")
        values = [s.llm if judge == "llm" else s.cheap for s in self.sentences]
        known = [v for v in values if v is not None]
        return float(np.mean(known)) if known else float("nan")

    @property
    def cited_share(self) -> float:
        return len(self.sentences) / self.n_sentences if self.n_sentences else float("nan")

    @property
    def copy_rate(self) -> float:
        return self.copied / self.n_sentences if self.n_sentences else float("nan")

    def measures(self) -> dict[str, float]:
        """Every measure under both judges (``name`` = LLM judge, ``name~ce`` = cross-encoder)."""
        values: dict[str, float] = {}
        for judge, suffix in (("llm", ""), ("cheap", "~ce")):
            values[f"answer_strecall{suffix}"] = self.answer_strecall(judge)
            values[f"transfer_rate{suffix}"] = self.transfer_rate(judge)
            values[f"v_strict{suffix}"] = self.v_strict(judge)
            values[f"citation_precision{suffix}"] = self.citation_precision(judge)
        values["cited_share"] = self.cited_share
        values["copy_rate"] = self.copy_rate
        values["context_strecall"] = (
            len(self.in_context) / len(self.nuggets) if self.nuggets else float("nan")
        )
        return values


def _share(supported: Mapping[str, bool | None], within: frozenset[str] | None) -> float:
    values = [v for a, v in supported.items() if within is None or a in within]
    if not values or any(v is None for v in values):
        return float("nan")
    return float(np.mean([bool(v) for v in values]))


def agreement(evaluations: Sequence[AnswerEvaluation]) -> dict[str, float]:
    """Agreement of the LLM judge (support or partial) and the cross-encoder on nugget support.

    Returns the pooled count of nuggets judged by both, the raw agreement and Cohen's kappa
    (NaN when undefined).
    """
    pairs = [
        (n.llm != "not", bool(n.cheap))
        for e in evaluations
        for n in e.nuggets
        if n.llm is not None and n.cheap is not None
    ]
    if not pairs:
        return {"nuggets": 0, "agreement": float("nan"), "kappa": float("nan")}
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    observed = float((a == b).mean())
    expected = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    kappa = (observed - expected) / (1 - expected) if expected < 1 else float("nan")
    return {"nuggets": len(pairs), "agreement": observed, "kappa": kappa}


def cheap_nuggets(
    estimator: CoverageEstimator, answer: Answer, aspects: Sequence[Aspect]
) -> list[tuple[bool, float]]:
    """Per aspect: whether some sentence covers it per ``estimator``, and the best probability."""
    if not answer.sentences or not aspects:
        return [(False, 0.0) for _ in aspects]
    matrix = answer_support(estimator, answer, aspects)
    best = matrix.probs.max(axis=0)
    hit: BoolArray = np.asarray(matrix.covered.any(axis=0))
    return [(bool(hit[j]), float(best[j])) for j in range(len(aspects))]


def cheap_citations(
    estimator: CoverageEstimator, answer: Answer, passages: Sequence[Passage]
) -> list[tuple[int, bool]]:
    """Per citing sentence: whether one of its cited passages covers it (sentence as aspect)."""
    by_id = {p.id: p for p in passages}
    verdicts = []
    for i, sentence in enumerate(answer.sentences):
        cited = tuple(by_id[p] for p in sentence.passage_ids if p in by_id)
        if not cited:
            continue
        topic = Topic(
            query_id="citation", query="", passages=cited, aspects=(Aspect("s", sentence.text),)
        )
        verdicts.append((i, bool(estimator.estimate(topic).covered.any())))
    return verdicts


def evaluate_answer(
    query_id: str,
    question: str,
    answer: Answer,
    *,
    aspects: Sequence[Aspect],
    context: Sequence[Passage],
    in_context: frozenset[str],
    vital: frozenset[str],
    llm_judge: LLMAnswerJudge | None = None,
    estimator: CoverageEstimator | None = None,
) -> AnswerEvaluation:
    """Judge one answer against its nuggets and its context with either judge or both.

    Args:
        query_id: The topic.
        question: The question (shown to the LLM judge).
        answer: The answer with its citations.
        aspects: The nuggets (``exclude`` aspects are not judged).
        context: The passages the answer was written from (what its citations name).
        in_context: Nugget ids some context passage covers (gold labels when available).
        vital: Vital nugget ids.
        llm_judge: The LLM judge, or None.
        estimator: The cheap judge, or None.
    """
    nuggets = [a for a in aspects if a.polarity != "exclude"]
    cost = LLMCost()
    llm_labels: list[SupportLabel | None] = [None] * len(nuggets)
    llm_cites: dict[int, bool | None] = {}
    # The writer's framing ("the corpus does not answer X") states no nugget: judged without it.
    stated = answer.substantive()
    if llm_judge is not None:
        llm_labels, spent = llm_judge.nuggets(question, stated, nuggets)
        verdicts, spent2 = llm_judge.citations(answer, context)
        llm_cites = dict(verdicts)
        cost = spent + spent2
    cheap: list[tuple[bool | None, float]] = [(None, math.nan)] * len(nuggets)
    cheap_cites: dict[int, bool] = {}
    if estimator is not None:
        cheap = list(cheap_nuggets(estimator, stated, nuggets))
        cheap_cites = dict(cheap_citations(estimator, answer, context))
    known = {p.id for p in context}
    sentences = tuple(
        SentenceJudgment(
            index=i,
            passage_ids=tuple(p for p in s.passage_ids if p in known),
            llm=llm_cites.get(i),
            cheap=cheap_cites.get(i),
        )
        for i, s in enumerate(answer.sentences)
        if any(p in known for p in s.passage_ids)
    )
    wanted = {a.id for a in nuggets}
    return AnswerEvaluation(
        query_id=query_id,
        nuggets=tuple(
            NuggetJudgment(a.id, label, hit, prob)
            for a, label, (hit, prob) in zip(nuggets, llm_labels, cheap, strict=True)
        ),
        in_context=frozenset(in_context) & wanted,
        vital=frozenset(vital) & wanted,
        sentences=sentences,
        n_sentences=len(answer.sentences),
        cost=cost,
        copied=sum(copies(s.text, [p.text for p in context]) for s in answer.sentences),
    )


def evaluation_record(evaluation: AnswerEvaluation) -> dict[str, Any]:
    """A JSON-serialisable record of an evaluation (NaN measures become null)."""
    return {
        "query_id": evaluation.query_id,
        "measures": {
            k: (None if math.isnan(v) else round(v, 6)) for k, v in evaluation.measures().items()
        },
        "nuggets": [
            {
                "aspect_id": n.aspect_id,
                "llm": n.llm,
                "cheap": n.cheap,
                "cheap_prob": None if math.isnan(n.cheap_prob) else round(n.cheap_prob, 4),
                "in_context": n.aspect_id in evaluation.in_context,
                "vital": n.aspect_id in evaluation.vital,
            }
            for n in evaluation.nuggets
        ],
        "sentences": [
            {"index": s.index, "passage_ids": list(s.passage_ids), "llm": s.llm, "cheap": s.cheap}
            for s in evaluation.sentences
        ],
        "cost": evaluation.cost.as_dict(),
    }
