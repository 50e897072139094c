"""The synthesising writer against the extractive one, same selections, 0..2 critique passes.

    .venv/bin/python benchmarks/bench_writers.py --dataset argkp2021:dev --passes 2 --out DIR
    .venv/bin/python benchmarks/bench_writers.py --dataset perspectrum:dev --sample 12 --seed 0 \\
        --passes 0 --out DIR

Per topic: the shipped coverage cross-encoder scores pool x gold aspects and greedy coverage
selects k = 8 (as in docs/experiments/10-cited-answers.md), so both writers read the same
context. The writers and the critique see no gold: their aspects are the LLM's sub-questions of the
topic's question
(as in ``covrag ask``), with the cross-encoder's coverage of the context x sub-questions. Each
writer writes an answer and ``--passes`` rounds of critique (``pointers``) and checked rewrite;
every draft is judged against the gold aspects (the nuggets) by the same LLM and by the
cross-encoder, and its copy rate is measured. Writes one run file per writer and pass
(``covrag eval-answers`` reads them, from the response cache) and ``summary.json``, and prints a
markdown table with paired randomization tests against the extractive writer's first answer.

With ``--check`` each draft is also evaluated after the citation check
(:class:`~covrag.generate.SupportChecker`: re-pointed citations, unsupported sentences dropped,
the quoted fallback), as the variant ``<writer>#<pass>+check``: the same reply before and after,
so the two are paired. (The drafts are checked after the loop here; ``covrag ask`` checks each
draft inside it, so with ``--passes`` above 0 its rewrites read checked drafts.)
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from covrag.coverage import CrossEncoderCoverage
from covrag.data import load_dataset
from covrag.evaluation.answer_stats import ANSWER_MEASURES, compare_variants
from covrag.evaluation.answers import (
    AnswerEvaluation,
    LLMAnswerJudge,
    evaluate_answer,
    evaluation_record,
    vital_from_labels,
)
from covrag.files import atomic_write_text
from covrag.generate import (
    CitedWriter,
    Critic,
    CritiqueRewriteGenerator,
    SupportChecker,
    SynthesisWriter,
    Writer,
    WritingContext,
)
from covrag.llm import LLM, parse_llm
from covrag.pipeline import PrepareConfig, prepare
from covrag.plan import LLMDecomposer
from covrag.report.runfile import run_file_record, topic_run_record
from covrag.selectors import parse_selector
from covrag.types import Budget, Topic
from covrag_lab.tables import markdown_table

MEASURES = (*ANSWER_MEASURES, "v_strict~ce", "citation_precision~ce")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="argkp2021:dev")
    parser.add_argument("--sample", type=int, default=None, help="random topics (seeded)")
    parser.add_argument("--limit", type=int, default=None, help="the first N topics only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--llm", default="local(n_threads=1)")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--subquestions", type=int, default=8)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--writers", nargs="+", default=["extractive", "synthesis"])
    parser.add_argument("--no-llm-judge", action="store_true", help="cross-encoder judge only")
    parser.add_argument(
        "--check", action="store_true", help="also evaluate each draft after the citation check"
    )
    parser.add_argument("--out", type=Path, default=Path("bench-writers"))
    args = parser.parse_args()

    topics = load_dataset(args.dataset)
    if args.sample is not None:
        topics = sorted(
            random.Random(args.seed).sample(topics, args.sample), key=lambda t: t.query_id
        )
    llm = parse_llm(args.llm)
    estimator = CrossEncoderCoverage()
    selector = parse_selector("greedy-coverage")
    budget = Budget(max_passages=args.k)
    judge = None if args.no_llm_judge else LLMAnswerJudge(llm)
    decomposer = LLMDecomposer(llm, n=args.subquestions)
    writers: dict[str, Writer] = {"extractive": CitedWriter(llm), "synthesis": SynthesisWriter(llm)}
    checker = SupportChecker() if args.check else None
    per: dict[str, list[AnswerEvaluation]] = {}
    records: dict[str, list[dict[str, object]]] = {}
    verdicts: dict[str, list[str]] = {}
    started = time.perf_counter()
    for n, topic in enumerate(topics, start=1):
        candidates = prepare(topic, estimator, PrepareConfig(relevance="dense")).candidates
        selection = selector.select(candidates, budget)
        by_id = {p.id: p for p in candidates.passages}
        context = [by_id[p] for p in selection.passage_ids]
        subs = decomposer.decompose(topic.query).aspects
        sub_topic = Topic(topic.query_id, topic.query, tuple(context), tuple(subs))
        writing = WritingContext(tuple(subs), estimator.estimate(sub_topic))
        in_context = frozenset(a for p in selection.passage_ids for a in topic.labels.get(p, ()))
        for name in args.writers:
            generator = CritiqueRewriteGenerator(
                writers[name], Critic(llm, estimator=estimator), passes=args.passes
            )
            result = generator.generate(topic.query, context, context=writing)
            verdicts.setdefault(name, []).extend(c.verdict for c in result.critiques)
            drafts = [(f"{name}#{i}", d) for i, d in enumerate(result.drafts)]
            if checker is not None:
                drafts += [
                    (f"{name}#{i}+check", checker.check(d, context, writing))
                    for i, d in enumerate(result.drafts)
                ]
            for variant, draft in drafts:
                evaluation = evaluate_answer(
                    topic.query_id,
                    topic.query,
                    draft.answer,
                    aspects=topic.aspects,
                    context=context,
                    in_context=in_context,
                    vital=vital_from_labels(topic),
                    llm_judge=judge,
                    estimator=estimator,
                )
                per.setdefault(variant, []).append(evaluation)
                record = topic_run_record(topic, selection, candidates.coverage, draft.answer)
                record["generation"] = result.to_json()
                record["evaluation"] = evaluation_record(evaluation)
                records.setdefault(variant, []).append(record)
            seconds = time.perf_counter() - started
            print(f"{n}/{len(topics)} {topic.query_id} {name}: {seconds:.0f} s", flush=True)
        # Written after every topic, so a run cut short still reports the topics it finished.
        write_out(args, llm, topics[:n], per, records, verdicts, started)


def write_out(
    args: argparse.Namespace,
    llm: LLM,
    topics: list[Topic],
    per: dict[str, list[AnswerEvaluation]],
    records: dict[str, list[dict[str, object]]],
    verdicts: dict[str, list[str]],
    started: float,
) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    for variant, topic_records in records.items():
        run = run_file_record(
            topic_records,
            dataset=args.dataset,
            selector="greedy-coverage",
            coverage="cross-encoder",
            budget=f"k={args.k}",
        )
        path = args.out / f"run-{variant.replace('#', '-passes')}.json"
        atomic_write_text(path, json.dumps(run) + "\n")
    judgeless = ("cited_share", "copy_rate")  # measures that need no judge
    measures = [m for m in MEASURES if not args.no_llm_judge or "~" in m or m in judgeless]
    summaries = compare_variants(per, measures=measures)
    sentences = {v: sum(e.n_sentences for e in es) / len(es) for v, es in per.items()}
    summary = {
        "dataset": args.dataset,
        "topics": [t.query_id for t in topics],
        "llm": llm.describe(),
        "variants": [{"name": s.name, "means": s.means, "p_values": s.p_values} for s in summaries],
        "sentences": sentences,
        "verdicts": verdicts,
        "llm_usage": llm.usage.as_dict(),
        "seconds": round(time.perf_counter() - started, 1),
        "table": markdown_table(summaries, measures),
    }
    atomic_write_text(args.out / "summary.json", json.dumps(summary, indent=2) + "\n")
    print(summary["table"], flush=True)
    print(json.dumps({k: summary[k] for k in ("sentences", "verdicts", "seconds")}), flush=True)


if __name__ == "__main__":
    main()
