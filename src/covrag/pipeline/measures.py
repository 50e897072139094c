"""The use cases that measure and show: a run's measures (:func:`evaluate`), answers judged
(:func:`judge_answers`), and a run file or bench summary as a page (:func:`report`); the entry
points reach them through :mod:`covrag.pipeline.usecases`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from covrag.errors import ConfigError
from covrag.types import Topic

if TYPE_CHECKING:
    from covrag.evaluation.scoring import EvalResults
    from covrag.llm.base import LLM


@dataclass(frozen=True)
class JudgedAnswers:
    """The answers of run files judged (``covrag eval-answers``): per variant the evaluations,
    the measures compared, the summaries with their paired tests, and the judges' agreement."""

    evaluations: dict[str, list[Any]]
    measures: tuple[str, ...]
    summaries: list[Any]
    agreement: dict[str, float]
    total: int

    def as_dict(self) -> dict[str, Any]:
        from covrag.evaluation.answers import evaluation_record

        return {
            "variants": {
                name: [evaluation_record(e) for e in group]
                for name, group in self.evaluations.items()
            },
            "summary": [
                {"name": s.name, "means": s.means, "p_values": s.p_values} for s in self.summaries
            ],
            "agreement": self.agreement,
        }


def judge_answers(
    runs: Sequence[Path],
    llm: LLM | None,
    *,
    dataset: str | None = None,
    all_passes: bool = False,
    on_variants: Callable[[int], None] | None = None,
    on_answer: Callable[[], None] | None = None,
) -> JudgedAnswers:
    """Judge the answers of run files: nugget support, transfer, V_strict, citation precision,
    copy rate (with ``llm``, the LLM judge too; without, the cross-encoder's measures and the
    string measures only)."""
    from covrag.evaluation.answer_stats import ANSWER_MEASURES, compare_variants
    from covrag.evaluation.answers import LLMAnswerJudge, agreement
    from covrag.evaluation.answers_io import evaluate_variants, load_variants

    variants = load_variants(runs, all_passes=all_passes, dataset=dataset)
    judge = LLMAnswerJudge(llm) if llm is not None else None
    total = sum(len(v) for v in variants.values())
    if on_variants is not None:
        on_variants(total)
    evaluations = evaluate_variants(variants, judge, on_answer=on_answer or (lambda: None))
    string_measures = ("cited_share", "copy_rate")  # no judge needed
    measures = tuple(
        m for m in ANSWER_MEASURES if llm is not None or "~" in m or m in string_measures
    )
    summaries = compare_variants(evaluations, measures=list(measures))
    pooled = agreement([e for group in evaluations.values() for e in group])
    return JudgedAnswers(dict(evaluations), measures, list(summaries), pooled, total)


def report(source: Path, out: Path | None = None) -> str:
    """The HTML page of a run file or a bench summary (``covrag report``): with ``out``, written
    there, and the path written returned; without, the page itself."""
    from covrag.report import load_report_input, render_report, write_report

    if out is None:
        data, where = load_report_input(source)
        return render_report(data, where)
    return str(write_report(source, out))


def evaluate(
    run: Any,
    measures: Sequence[str],
    *,
    topics: Sequence[Topic] | None = None,
    qrels: str | os.PathLike[str] | None = None,
) -> EvalResults:
    """Each measure per topic for ``run`` (query id -> passage ids, best first), judged on the
    gold labels of ``topics`` or on the qrels file ``qrels``."""
    from covrag.evaluation import Judgments, read_judgments
    from covrag.evaluation import evaluate as score
    from covrag.tokens import with_token_costs

    if qrels is not None:
        judgments = read_judgments(qrels)
    else:
        if topics is None:
            raise ConfigError("evaluate needs topics or qrels")
        if any(m.upper().startswith("RVC") for m in measures):
            topics = [with_token_costs(t) for t in topics]
        judgments = Judgments.from_topics(topics)
    return score(judgments, run, list(measures))
