"""Answers on ArgKP dev with the embedded LLM: 0, 1 and 2 critique-and-rewrite passes.

    .venv/bin/python benchmarks/bench_answers.py [--llm SPEC] [--k 8] [--passes 2] [--out DIR]

Per dev topic: the gold key points are the aspects (the nuggets); the shipped coverage
cross-encoder estimates the pool x key-point matrix; greedy coverage selects k arguments; the
LLM writes a cited answer (about 12 sentences) and then ``--passes`` rounds of critique and
rewrite (about 18 sentences, feedback mode ``--mode``). Every draft is judged by the LLM
(nugget support, citation support) and by the cross-encoder (cheap judge). Prints a markdown
table for answers after 0..passes passes, with paired randomization tests against pass 0 (Holm),
and writes one run file per pass (``covrag report`` / ``covrag eval-answers`` read them) and
``summary.json`` to ``--out``. LLM replies are cached (``COVRAG_CACHE_DIR``), so a rerun is fast.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from covrag.coverage import CrossEncoderCoverage
from covrag.data import load_dataset
from covrag.evaluation.answer_stats import ANSWER_MEASURES, compare_variants
from covrag.evaluation.answers import (
    AnswerEvaluation,
    LLMAnswerJudge,
    agreement,
    evaluate_answer,
    evaluation_record,
    vital_from_labels,
)
from covrag.files import atomic_write_text
from covrag.generate import CitedWriter, Critic, CritiqueContext, CritiqueRewriteGenerator
from covrag.llm import parse_llm
from covrag.pipeline import PrepareConfig, prepare
from covrag.report.runfile import run_file_record, topic_run_record
from covrag.selectors import parse_selector
from covrag.types import Budget
from covrag_lab.tables import markdown_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="argkp2021:dev")
    parser.add_argument("--llm", default="local(n_threads=1)", help="LLM spec (covrag.llm)")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--mode", default="pointers", help="critique feedback mode")
    parser.add_argument("--limit", type=int, default=None, help="first N topics only")
    parser.add_argument("--out", type=Path, default=Path("bench-answers"))
    args = parser.parse_args()

    topics = load_dataset(args.dataset)[: args.limit]
    llm = parse_llm(args.llm)
    estimator = CrossEncoderCoverage()
    selector = parse_selector("greedy-coverage")
    budget = Budget(max_passages=args.k)
    generator = CritiqueRewriteGenerator(
        CitedWriter(llm),
        Critic(llm, mode=args.mode, estimator=estimator),
        passes=args.passes,
    )
    judge = LLMAnswerJudge(llm)
    names = [f"passes={i}" for i in range(args.passes + 1)]
    per_pass: dict[str, list[AnswerEvaluation]] = {name: [] for name in names}
    records: dict[str, list[dict[str, object]]] = {name: [] for name in per_pass}
    started = time.perf_counter()
    generation_seconds = judge_seconds = 0.0
    for n, topic in enumerate(topics, start=1):
        candidates = prepare(topic, estimator, PrepareConfig(relevance="dense")).candidates
        selection = selector.select(candidates, budget)
        by_id = {p.id: p for p in candidates.passages}
        context = [by_id[p] for p in selection.passage_ids]
        gold_in_context = frozenset(a for p in selection.passage_ids for a in topic.labels[p])
        vital = vital_from_labels(topic)
        t0 = time.perf_counter()
        result = generator.generate(
            topic.query,
            context,
            context=CritiqueContext(topic.aspects, candidates.coverage, topic.labels),
            on_step=lambda step, n=n: print(
                f"topic {n}/{len(topics)} {step} ({time.perf_counter() - started:.0f} s)",
                flush=True,
            ),
        )
        t1 = time.perf_counter()
        generation_seconds += t1 - t0
        for i, draft in enumerate(result.drafts):
            name = f"passes={i}"
            evaluation = evaluate_answer(
                topic.query_id,
                topic.query,
                draft.answer,
                aspects=topic.aspects,
                context=context,
                in_context=gold_in_context,
                vital=vital,
                llm_judge=judge,
                estimator=estimator,
            )
            per_pass[name].append(evaluation)
            record = topic_run_record(topic, selection, candidates.coverage, draft.answer)
            record["generation"] = result.to_json()
            record["evaluation"] = evaluation_record(evaluation)
            records[name].append(record)
            print(f"topic {n}/{len(topics)} judged {name}: {evaluation.measures()}", flush=True)
        judge_seconds += time.perf_counter() - t1

    args.out.mkdir(parents=True, exist_ok=True)
    for name, topic_records in records.items():
        run = run_file_record(
            topic_records,
            dataset=args.dataset,
            selector=repr(selector),
            coverage=repr(estimator),
            budget=str(budget),
        )
        atomic_write_text(args.out / f"run-{name.replace('=', '')}.json", json.dumps(run) + "\n")
    summaries = compare_variants(per_pass, measures=ANSWER_MEASURES)
    all_evaluations = [e for group in per_pass.values() for e in group]
    summary = {
        "dataset": args.dataset,
        "llm": llm.describe(),
        "k": args.k,
        "mode": args.mode,
        "variants": [
            {"name": s.name, "means": s.means, "defined": s.defined, "p_values": s.p_values}
            for s in summaries
        ],
        "judge_agreement": agreement(all_evaluations),
        "llm_usage": llm.usage.as_dict(),
        "generation_seconds": round(generation_seconds, 1),
        "judge_seconds": round(judge_seconds, 1),
    }
    atomic_write_text(args.out / "summary.json", json.dumps(summary, indent=2) + "\n")
    print(markdown_table(summaries, ANSWER_MEASURES))
    print(json.dumps({k: summary[k] for k in list(summary)[-4:]}, indent=2))


if __name__ == "__main__":
    main()
