"""Answers to evaluate, read from run files, and their evaluation by variant.

A run file (``covrag ask``, ``benchmarks/bench_answers.py``, or any producer of the
:mod:`covrag.report.runfile` format) holds per topic the selection and the answer; a run written by
the generator also holds every draft (``generation.drafts``), so the answers after 0, 1, ...
critique passes can be compared from one file. The nuggets are a dataset's gold aspects and labels
when one is named, else the run's own aspects with its estimated coverage.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from covrag.coverage.base import CoverageEstimator
from covrag.errors import DataError
from covrag.evaluation.answers import (
    AnswerEvaluation,
    LLMAnswerJudge,
    evaluate_answer,
    vital_from_labels,
)
from covrag.report import TopicRun, parse_run_file
from covrag.schema._base import read_model
from covrag.schema._json import read_json_file
from covrag.schema.generation import GenerationOut
from covrag.types import Answer, Aspect, Passage, Topic


@dataclass(frozen=True)
class AnswerCase:
    """One answer with what it is judged against.

    Attributes:
        query_id: The topic.
        question: The question.
        answer: The answer.
        nuggets: What a complete answer states.
        context: The passages the answer was written from.
        in_context: Nuggets some context passage covers.
        vital: Vital nuggets.
    """

    query_id: str
    question: str
    answer: Answer
    nuggets: tuple[Aspect, ...]
    context: tuple[Passage, ...]
    in_context: frozenset[str]
    vital: frozenset[str]


def _drafts(raw: Any, path: str, where: str, known: set[str]) -> list[Answer]:
    """The answers of ``generation.drafts`` in a raw topic record (an ask run file's)."""
    generation = raw.get("generation") if isinstance(raw, dict) else None
    if generation is None:
        message = "has no drafts: --all-passes needs a run written by the generator"
        raise DataError(message, path=path, field=where)
    block = read_model(GenerationOut, generation, path=path, prefix=f"{where}.generation")
    answers = []
    for i, draft in enumerate(block.drafts):
        for j, sentence in enumerate(draft.sentences):
            if not set(sentence.passage_ids) <= known:
                field = f"{where}.generation.drafts[{i}].sentences[{j}]"
                raise DataError("cites an unknown passage", path=path, field=field)
        answers.append(draft.to_answer())
    return answers


def _case(run: TopicRun, answer: Answer, gold: Mapping[str, Topic] | None, path: str) -> AnswerCase:
    topic = run.topic
    by_id = {p.id: p for p in topic.passages}
    context = tuple(by_id[p] for p in run.selection.passage_ids)
    if gold is not None:
        if topic.query_id not in gold:
            raise DataError(
                f"topic {topic.query_id!r} is not in the dataset", path=path, field="query_id"
            )
        reference = gold[topic.query_id]
        nuggets = reference.aspects
        in_context = frozenset(a for p in context for a in reference.labels.get(p.id, ()))
        vital = vital_from_labels(reference)
    else:
        nuggets = tuple(a for a in topic.aspects if a.polarity != "exclude")
        in_context = frozenset()
        if run.coverage is not None:
            rows = {p: i for i, p in enumerate(run.coverage.passage_ids)}
            covered = run.coverage.covered
            in_context = frozenset(
                a
                for j, a in enumerate(run.coverage.aspect_ids)
                if any(covered[rows[p.id], j] for p in context if p.id in rows)
            )
        vital = frozenset(a.id for a in nuggets if a.vital)
    return AnswerCase(topic.query_id, topic.query, answer, nuggets, context, in_context, vital)


def load_variants(
    paths: Sequence[str | os.PathLike[str]],
    *,
    all_passes: bool = False,
    dataset: str | None = None,
) -> dict[str, list[AnswerCase]]:
    """Variant name -> its answers: one variant per file (named by the file's stem), or with
    ``all_passes`` one per file and number of passes (``stem#0``, ``stem#1``, ...)."""
    gold = None
    if dataset is not None:
        from covrag.data import load_dataset

        gold = {t.query_id: t for t in load_dataset(dataset)}
    variants: dict[str, list[AnswerCase]] = {}
    for raw_path in paths:
        path = str(raw_path)
        data = read_json_file(path)
        runs = parse_run_file(data, path)
        stem = Path(path).stem
        for i, run in enumerate(runs.topics):
            where = f"topics[{i}]"
            if all_passes:
                known = set(run.topic.passage_ids)
                for n, answer in enumerate(_drafts(data["topics"][i], path, where, known)):
                    variants.setdefault(f"{stem}#{n}", []).append(_case(run, answer, gold, path))
            else:
                if run.answer is None:
                    raise DataError("has no answer", path=path, field=f"{where}.answer")
                variants.setdefault(stem, []).append(_case(run, run.answer, gold, path))
    return variants


def evaluate_variants(
    variants: Mapping[str, Sequence[AnswerCase]],
    judge: LLMAnswerJudge | None,
    *,
    estimator: CoverageEstimator | None = None,
    on_answer: Callable[[], None] | None = None,
) -> dict[str, list[AnswerEvaluation]]:
    """Judge every answer with the LLM judge (when given) and the cheap cross-encoder judge."""
    if estimator is None:
        from covrag.coverage import CrossEncoderCoverage

        estimator = CrossEncoderCoverage()
    results: dict[str, list[AnswerEvaluation]] = {}
    for name, cases in variants.items():
        for case in cases:
            results.setdefault(name, []).append(
                evaluate_answer(
                    case.query_id,
                    case.question,
                    case.answer,
                    aspects=case.nuggets,
                    context=case.context,
                    in_context=case.in_context,
                    vital=case.vital,
                    llm_judge=judge,
                    estimator=estimator,
                )
            )
            if on_answer:
                on_answer()
    return results
