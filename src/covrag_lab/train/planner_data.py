"""Training data of a QPlanner-style planner: judged outlines of coverage-conditioned requests.

Requests come from labelled topics: each topic's question with one of its aspects as an
include or exclude constraint, worded four ways (explicit include, explicit exclude, "I already
know ..., so skip it", "Focus on ..."). For each request a teacher LLM builds the QTree of the
base question and extracts candidate outlines from it (:mod:`covrag.plan`); a judge LLM scores
each 1-5 against the request, and the random-walk outline beside them. From the judged requests:

- SFT examples: request -> the best candidate (when it scored at least ``min_sft_score``);
- DPO pairs: request, the highest- and the lowest-scored outline, when their scores differ by at
  least ``margin`` (QPlanner skips ties). The random outline may serve as the rejected one
  (``baseline_in_pairs``), which gives more pairs from few requests.

Every LLM reply goes through the response cache, and the judged requests are written a request
at a time to ``examples.jsonl.partial``, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from covrag.errors import ConfigError, StructuredOutputError
from covrag.files import atomic_write_text, iter_lines
from covrag.llm.base import LLM
from covrag.plan.conditioned import C2Query
from covrag.plan.judge import OutlineJudge
from covrag.plan.outline import Outline, OutlineExtractor, random_outline
from covrag.plan.qtree import QTreeBuilder
from covrag.plan.writer import outline_completion, outline_messages
from covrag.schema.cards import PlannerDataCard, write_card
from covrag.schema.plan import OutlineOut, TreeNodeOut
from covrag.types import Aspect, Topic
from covrag_lab.train.planner_files import ChatMessage, DPOLine, PlannerExampleLine, SFTLine

logger = logging.getLogger(__name__)

KINDS = ("include", "exclude", "skip", "focus")


@dataclass(frozen=True)
class PlannerRequest:
    """A C2 request made from a topic and one of its aspects."""

    request_id: str
    topic_id: str
    kind: str
    query: C2Query
    aspect_id: str

    @property
    def include_ids(self) -> list[str]:
        return [self.aspect_id] if self.query.include else []

    @property
    def exclude_ids(self) -> list[str]:
        return [self.aspect_id] if self.query.exclude else []


def base_question(topic: Topic) -> str:
    """A topic's claim as a request: "Discuss whether we should ban cars"."""
    text = topic.query.strip().rstrip(".?!")
    if topic.query.strip().endswith("?"):
        return text + "?"
    return f"Discuss whether {text[:1].lower()}{text[1:]}"


def make_request(topic: Topic, aspect: Aspect, kind: str, number: int) -> PlannerRequest:
    """One request of ``kind`` about ``aspect``."""
    base = base_question(topic)
    point = aspect.text.strip().rstrip(".")
    point = point[:1].lower() + point[1:]
    if kind == "include":
        query = C2Query.explicit(base, include=[aspect.text])
    elif kind == "exclude":
        query = C2Query.explicit(base, exclude=[aspect.text])
    elif kind == "skip":
        request = f"{base}. I already know the point that {point}, so skip it."
        query = C2Query(request, base, (), (aspect.text,))
    elif kind == "focus":
        query = C2Query(f"{base}. Focus on the point that {point}.", base, (aspect.text,), ())
    else:
        raise ConfigError(f"request kind must be one of {KINDS}, got {kind!r}")
    return PlannerRequest(f"{topic.query_id}#{number}", topic.query_id, kind, query, aspect.id)


def make_requests(
    topics: Sequence[Topic], per_topic: int = 2, seed: int = 0, kinds: Sequence[str] = KINDS
) -> list[PlannerRequest]:
    """``per_topic`` requests per topic about distinct aspects drawn with ``seed``; the kinds
    take turns across topics, so every kind is about equally frequent."""
    if per_topic < 1:
        raise ConfigError(f"per_topic must be >= 1, got {per_topic}")
    requests = []
    turn = 0
    for topic in topics:
        rng = random.Random(f"{seed}:{topic.query_id}")
        aspects = rng.sample(list(topic.aspects), min(per_topic, len(topic.aspects)))
        for number, aspect in enumerate(aspects, start=1):
            requests.append(make_request(topic, aspect, kinds[turn % len(kinds)], number))
            turn += 1
    return requests


@dataclass(frozen=True)
class DataConfig:
    """How the teacher plans each request (QPlanner: 3 levels x 3 children, 3 outlines of 4)."""

    depth: int = 3
    branching: int = 3
    outline_size: int = 4
    candidates: int = 3
    tree_strategy: str = "levels"
    outline_strategy: str = "nodes"
    retries: int = 2
    seed: int = 0


def judge_request(
    request: PlannerRequest, teacher: LLM, judge: LLM, config: DataConfig
) -> PlannerExampleLine:
    """The request planned by the teacher and judged; a failed step is kept as ``error``."""
    line = PlannerExampleLine(
        request_id=request.request_id,
        topic_id=request.topic_id,
        kind=request.kind,  # type: ignore[arg-type]
        request=request.query.request,
        base=request.query.base,
        include=list(request.query.include),
        exclude=list(request.query.exclude),
        include_ids=request.include_ids,
        exclude_ids=request.exclude_ids,
    )
    try:
        tree = QTreeBuilder(
            teacher,
            depth=config.depth,
            branching=config.branching,
            retries=config.retries,
            strategy=config.tree_strategy,
        ).build(request.query)
        extractor = OutlineExtractor(
            teacher,
            size=config.outline_size,
            candidates=config.candidates,
            retries=config.retries,
            strategy=config.outline_strategy,
        )
        scorer = OutlineJudge(judge, retries=config.retries)
        outlines = extractor.extract(tree, request.query)
        candidates = [scorer.judge(request.query, o) for o in outlines]
        baseline = scorer.judge(
            request.query, random_outline(tree, config.outline_size, config.seed)
        )
    except (StructuredOutputError, ConfigError) as exc:
        logger.warning("%s: %s", request.request_id, exc)
        line.error = str(exc).splitlines()[0]
        return line
    line.tree = [TreeNodeOut(id=n.id, text=n.text) for n in tree]
    line.candidates = [OutlineOut.of(o) for o in candidates]
    line.baseline = OutlineOut.of(baseline)
    return line


def read_examples(path: Path) -> list[PlannerExampleLine]:
    return [
        PlannerExampleLine.model_validate_json(text) for _, text in iter_lines(path) if text.strip()
    ]


def build_examples(
    requests: Iterable[PlannerRequest],
    teacher: LLM,
    judge: LLM,
    out: Path,
    config: DataConfig,
    progress: Callable[[PlannerRequest], None] | None = None,
) -> list[PlannerExampleLine]:
    """Judge every request into ``out`` (``examples.jsonl``), resuming from ``out.partial``."""
    partial = out.with_name(out.name + ".partial")
    done = {e.request_id: e for e in read_examples(partial)} if partial.is_file() else {}
    with partial.open("a", encoding="utf-8") as handle:
        for request in requests:
            if request.request_id not in done:
                example = judge_request(request, teacher, judge, config)
                handle.write(example.model_dump_json() + "\n")
                handle.flush()
                done[request.request_id] = example
            if progress is not None:
                progress(request)
    os.replace(partial, out)
    return list(done.values())


def _as_outline(o: OutlineOut) -> Outline:
    return Outline(tuple(o.node_ids), tuple(o.texts), o.source, int(o.score or 0), o.rationale)


def _messages(query: C2Query, size: int) -> list[ChatMessage]:
    return [ChatMessage(role=m.role, content=m.content) for m in outline_messages(query, size)]


def _reply(outline: Outline) -> list[ChatMessage]:
    return [ChatMessage(role="assistant", content=outline_completion(outline.texts))]


def query_of(example: PlannerExampleLine) -> C2Query:
    return C2Query(example.request, example.base, tuple(example.include), tuple(example.exclude))


def sft_and_dpo(
    examples: Iterable[PlannerExampleLine],
    *,
    size: int = 4,
    min_sft_score: int = 3,
    margin: int = 1,
    baseline_in_pairs: bool = True,
) -> tuple[list[SFTLine], list[DPOLine]]:
    """SFT examples (request -> best candidate) and DPO pairs (best vs worst outline)."""
    sft: list[SFTLine] = []
    dpo: list[DPOLine] = []
    for example in examples:
        if example.error or not example.candidates:
            continue
        candidates = [_as_outline(o) for o in example.candidates]
        pool = candidates + ([_as_outline(example.baseline)] if example.baseline else [])
        pool = pool if baseline_in_pairs else candidates
        best = max(candidates, key=lambda o: o.score or 0)
        prompt = _messages(query_of(example), size)
        if (best.score or 0) >= min_sft_score:
            sft.append(
                SFTLine(
                    request_id=example.request_id,
                    score=best.score or 0,
                    prompt=prompt,
                    completion=_reply(best),
                )
            )
        chosen = max(pool, key=lambda o: o.score or 0)
        rejected = min(pool, key=lambda o: o.score or 0)
        if (chosen.score or 0) - (rejected.score or 0) >= margin:
            dpo.append(
                DPOLine(
                    request_id=example.request_id,
                    chosen_score=chosen.score or 0,
                    rejected_score=rejected.score or 0,
                    prompt=prompt,
                    chosen=_reply(chosen),
                    rejected=_reply(rejected),
                )
            )
    return sft, dpo


def data_card(
    examples: Sequence[PlannerExampleLine],
    sft: Sequence[SFTLine],
    dpo: Sequence[DPOLine],
    **about: Any,
) -> dict[str, Any]:
    """Counts and score histograms of the planner data (``about``: teacher, judge, config)."""
    judged = [e for e in examples if not e.error and e.candidates]

    def histogram(scores: Iterable[float | None]) -> dict[str, int]:
        counts = Counter(int(s or 0) for s in scores)
        return {str(k): counts.get(k, 0) for k in range(1, 6)}

    def mean(values: Sequence[float]) -> float | None:
        return round(sum(values) / len(values), 3) if values else None

    by_kind = {
        kind: mean([o.score or 0 for e in judged if e.kind == kind for o in e.candidates])
        for kind in KINDS
    }
    return {
        **about,
        "requests": len(examples),
        "failed": [{"request_id": e.request_id, "error": e.error} for e in examples if e.error],
        "judged_requests": len(judged),
        "sft_examples": len(sft),
        "dpo_pairs": len(dpo),
        "kinds": dict(Counter(e.kind for e in examples)),
        "score_histogram": {
            "candidates": histogram(o.score for e in judged for o in e.candidates),
            "best_candidate": histogram(max(o.score or 0 for o in e.candidates) for e in judged),
            "random_baseline": histogram(e.baseline.score for e in judged if e.baseline),
        },
        "mean_candidate_score_by_kind": by_kind,
        "mean_random_score": mean([e.baseline.score or 0 for e in judged if e.baseline]),
    }


def write_jsonl(path: Path, lines: Sequence[SFTLine | DPOLine]) -> None:
    atomic_write_text(path, "".join(line.model_dump_json() + "\n" for line in lines))


def write_planner_data(
    requests: Sequence[PlannerRequest],
    teacher: LLM,
    judge: LLM,
    out: Path,
    config: DataConfig,
    *,
    min_sft_score: int = 3,
    margin: int = 1,
    baseline_in_pairs: bool = True,
    progress: Callable[[PlannerRequest], None] | None = None,
) -> dict[str, Any]:
    """Judge the requests and write ``examples.jsonl``, ``sft.jsonl``, ``dpo.jsonl`` and
    ``card.json`` into the folder ``out``; returns the card."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    examples = build_examples(requests, teacher, judge, out / "examples.jsonl", config, progress)
    sft, dpo = sft_and_dpo(
        examples,
        size=config.outline_size,
        min_sft_score=min_sft_score,
        margin=margin,
        baseline_in_pairs=baseline_in_pairs,
    )
    write_jsonl(out / "sft.jsonl", sft)
    write_jsonl(out / "dpo.jsonl", dpo)
    card = data_card(
        examples,
        sft,
        dpo,
        teacher=teacher.describe(),
        judge=judge.describe(),
        config=dataclasses.asdict(config),
        min_sft_score=min_sft_score,
        margin=margin,
        baseline_in_pairs=baseline_in_pairs,
        seconds_this_run=round(time.perf_counter() - started, 1),
        teacher_usage=teacher.usage.as_dict(),
        judge_usage=judge.usage.as_dict() if judge is not teacher else None,
    )
    write_card(PlannerDataCard, card, out / "card.json")
    return card
