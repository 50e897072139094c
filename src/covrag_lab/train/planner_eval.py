"""Evaluate planners on held-aside requests: judged outline score, constraint violations, and
the selection their outlines lead to (``covrag-lab eval planner``).

Each planner (an LLM asked :func:`covrag.plan.writer.outline_messages`: the base model, the SFT
and the SFT+DPO model) writes one outline per request; the random-walk outline over the
teacher's QTree stands beside them. For every outline:

- **score**: the judge's 1-5 (:class:`~covrag.plan.judge.OutlineJudge`); an outline the planner
  could not write in a valid form (after the retries) scores 1, "ignores the instruction", and
  is counted in ``failed``;
- **violation**: some outline node is about an excluded aspect, detected as a MiniLM cosine
  similarity of at least ``threshold`` between the node's text and the aspect's text (the same
  test, against the included aspect, gives ``include_hit``);
- **selection**: the outline as search queries (:func:`~covrag.plan.search.outline_search`,
  BM25 over the topic's pool, 2 passages per sub-query, 10 in all), scored with the gold labels
  as alpha-nDCG@10 and Excl@10 (the excluded aspect's share of the ten).

Planners are compared pairwise on the per-request values with the paired randomization test
and Holm's correction (:mod:`covrag.evaluation.stats`).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from covrag.errors import ConfigError, StructuredOutputError
from covrag.evaluation.judgments import Judgments
from covrag.evaluation.scoring import evaluate
from covrag.evaluation.stats import bootstrap_ci, holm, paired_randomization_test
from covrag.llm.base import LLM
from covrag.plan.judge import OutlineJudge
from covrag.plan.outline import Outline, random_outline
from covrag.plan.qtree import QTreeBuilder
from covrag.plan.search import outline_search
from covrag.plan.writer import OutlineWriter
from covrag.retrieve.bm25 import BM25Retriever
from covrag.types import Topic
from covrag_lab.train.planner_data import PlannerRequest

if TYPE_CHECKING:
    from covrag.embed import Encoder

logger = logging.getLogger(__name__)

RANDOM = "random"
MEASURES = ("alpha-nDCG@10", "Excl@10")


@dataclass(frozen=True)
class EvalConfig:
    """The teacher tree of the random baseline, the judge's retries and the violation test."""

    depth: int = 3
    branching: int = 3
    outline_size: int = 4
    retries: int = 2
    threshold: float = 0.6
    seed: int = 0


@dataclass(frozen=True)
class OutlineResult:
    """One planner's outline of one request, judged and measured."""

    request_id: str
    planner: str
    kind: str
    texts: tuple[str, ...]
    score: int
    failed: bool
    violation: bool | None
    include_hit: bool | None
    measures: Mapping[str, float]


def _about(encoder: Encoder, texts: Sequence[str], aspect: str, threshold: float) -> bool:
    vectors = encoder.encode([*texts, aspect])
    return bool(np.max(vectors[:-1] @ vectors[-1]) >= threshold)


def _request_topic(topic: Topic, request: PlannerRequest) -> Topic:
    """The topic as this request sees it: its own query id, the excluded aspect so marked."""
    aspects = tuple(
        dataclasses.replace(a, polarity="exclude") if a.id in request.exclude_ids else a
        for a in topic.aspects
    )
    return dataclasses.replace(topic, query_id=request.request_id, aspects=aspects)


def _measures(topic: Topic, request: PlannerRequest, texts: Sequence[str]) -> dict[str, float]:
    seen = _request_topic(topic, request)
    retriever = BM25Retriever().index(topic.passages)
    outline = Outline(tuple(str(i) for i in range(1, len(texts) + 1)), tuple(texts))
    found = outline_search(retriever, request.query, outline)
    results = evaluate(
        Judgments.from_topics([seen]), {seen.query_id: [p.id for p in found]}, list(MEASURES)
    )
    return {repr(m): float(v) for m, v in results.means().items()}


def evaluate_request(
    request: PlannerRequest,
    topic: Topic,
    planners: Mapping[str, LLM],
    judge: LLM,
    encoder: Encoder,
    config: EvalConfig,
) -> list[OutlineResult]:
    """Every planner's outline of ``request``, and the random one, judged and measured."""
    scorer = OutlineJudge(judge, retries=config.retries)
    outlines: dict[str, Outline | None] = {}
    for name, llm in planners.items():
        writer = OutlineWriter(llm, size=config.outline_size, retries=config.retries)
        try:
            outlines[name] = writer.write(request.query)
        except StructuredOutputError as exc:
            logger.info("%s on %s: %s", name, request.request_id, str(exc).splitlines()[0])
            outlines[name] = None
    tree = QTreeBuilder(
        judge, depth=config.depth, branching=config.branching, retries=config.retries
    ).build(request.query)
    outlines[RANDOM] = random_outline(tree, config.outline_size, config.seed)
    aspects = {a.id: a.text for a in topic.aspects}
    results = []
    for name, outline in outlines.items():
        texts = outline.texts if outline is not None else ()
        score = scorer.judge(request.query, outline).score if outline is not None else 1
        excluded = [aspects[i] for i in request.exclude_ids]
        included = [aspects[i] for i in request.include_ids]
        results.append(
            OutlineResult(
                request_id=request.request_id,
                planner=name,
                kind=request.kind,
                texts=texts,
                score=int(score or 1),
                failed=outline is None,
                violation=_about(encoder, texts, excluded[0], config.threshold)
                if excluded and texts
                else None,
                include_hit=_about(encoder, texts, included[0], config.threshold)
                if included and texts
                else None,
                measures=_measures(topic, request, texts or (request.query.base,)),
            )
        )
    return results


def evaluate_planners(
    requests: Sequence[PlannerRequest],
    topics: Mapping[str, Topic],
    planners: Mapping[str, LLM],
    judge: LLM,
    encoder: Encoder,
    config: EvalConfig,
    progress: Callable[[PlannerRequest], None] | None = None,
) -> list[OutlineResult]:
    """:func:`evaluate_request` over ``requests`` (``topics`` by query id)."""
    if not planners:
        raise ConfigError("name at least one planner to evaluate")
    results: list[OutlineResult] = []
    for request in requests:
        topic = topics[request.topic_id]
        results += evaluate_request(request, topic, planners, judge, encoder, config)
        if progress is not None:
            progress(request)
    return results


def _rate(values: Sequence[bool | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 3) if known else None


def _values(results: Sequence[OutlineResult], planner: str) -> dict[str, list[float]]:
    mine = sorted((r for r in results if r.planner == planner), key=lambda r: r.request_id)
    values = {"score": [float(r.score) for r in mine]}
    for measure in MEASURES:
        values[measure] = [r.measures[measure] for r in mine]
    return values


def summarise(results: Sequence[OutlineResult], seed: int = 0) -> dict[str, Any]:
    """Means per planner (with a bootstrap interval of the score) and the paired tests."""
    names = list(dict.fromkeys(r.planner for r in results))
    planners: dict[str, Any] = {}
    for name in names:
        mine = [r for r in results if r.planner == name]
        values = _values(results, name)
        ci = bootstrap_ci(values["score"], seed=seed) if len(mine) > 1 else None
        planners[name] = {
            "requests": len(mine),
            "score": round(float(np.mean(values["score"])), 3),
            "score_ci95": [round(ci.low, 3), round(ci.high, 3)] if ci else None,
            "failed": sum(r.failed for r in mine),
            "violation_rate": _rate([r.violation for r in mine]),
            "include_hit_rate": _rate([r.include_hit for r in mine]),
            **{m: round(float(np.mean(values[m])), 4) for m in MEASURES},
            "score_by_kind": {
                k: round(float(np.mean([r.score for r in mine if r.kind == k])), 3)
                for k in sorted({r.kind for r in mine})
            },
        }
    compared = []
    for a, b in itertools.combinations(names, 2):
        va, vb = _values(results, a), _values(results, b)
        for key in ("score", *MEASURES):
            test = paired_randomization_test(va[key], vb[key], seed=seed)
            compared.append((a, b, key, test))
    adjusted = holm([test for *_, test in compared]) if compared else np.zeros(0)
    tests = [
        {
            "a": a,
            "b": b,
            "measure": key,
            "diff": round(float(test.statistic), 4),
            "p": round(float(test.p_value), 4),
            "p_holm": round(float(p_holm), 4),
        }
        for (a, b, key, test), p_holm in zip(compared, adjusted, strict=True)
    ]
    return {"planners": planners, "paired_tests": tests}
