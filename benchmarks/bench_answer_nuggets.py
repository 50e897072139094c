"""Are ``covrag ask``'s answers right and complete on real documents? Nuggets, across corpora.

    nice -n 10 .venv/bin/python benchmarks/bench_answer_nuggets.py [--corpora manuals ...]
        [--stage context|answer] [--set FIELD=VALUE ...] [--aspects planner|question]
        [--limit N] [--out DIR] [--llm local] [--recheck]
    .venv/bin/python benchmarks/bench_answer_nuggets.py --validate [CORPUS ...]

Each corpus of ``benchmarks/answers/corpora/`` (real documents of one kind nobody on the project
wrote: tool manuals, API reference, user guides, licences, compression-library docs; origins and
licences in each ``<corpus>.md``) is indexed as ``covrag ask --docs`` indexes it, and each of
its questions (``benchmarks/answers/questions/<corpus>.jsonl``: 8 answerable, 2 unanswerable,
each answerable one with 2-5 nuggets written by reading the documents; format in
``benchmarks/answers/FORMAT.md``) is asked with :class:`~covrag.pipeline.AskConfig`'s defaults
(changed field by field with ``--set``). The checks are :mod:`covrag.evaluation.nuggets`'s:

- **pool** / **context**: nugget recall of the retrieved pool and of the selected context (a
  passage of a source document holding the nugget's terms);
- **V_strict** / **StRecall**: the vital / all nuggets the answer states in a sentence that cites
  a passage stating them; **stated**: stated at all; **transfer**: of the context's nuggets, the
  share the answer states with support; in the summary, **v_strict_lead**: the vital nuggets
  stated with support within the answer's first 5 sentences (what a reader sees first), and
  **median_sentences**: the answers' median length;
- **support**: cited sentences a cited passage supports by the reader's check (most of the
  sentence's content words, or 8 words in a row); **narr**: sentences about "the passage" or "the
  document"; **misattr**: sentences that name a document of the pool and cite none of it;
  **rep**: repeated sentences;
- **refusal**: unanswerable questions refused (no cited sentence) and answerable ones answered;
- seconds per stage.

Nugget figures pool the nuggets of a corpus's answerable questions (micro averages); support
pools cited sentences. ``--stage context`` stops after selection (no writer: pool and context
recall and the plan's seconds only); ``--aspects question`` uses the question as the only
aspect (no planner). Each question's run file and checks go to ``--out``; ``summary.json``
holds the table. ``--recheck`` scores the run files already in ``--out`` again. LLM replies are
cached (``COVRAG_CACHE_DIR``). ``--validate`` checks the nugget files against the documents
(every quote found, every term near it) and asks nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from covrag.evaluation.nuggets import (
    AnswerCheck,
    CitedSentence,
    NuggetQuestion,
    check_answer,
    check_sources,
    read_nugget_questions,
)
from covrag.files import atomic_write_text
from covrag.ingest import update_index
from covrag.ingest.readers import read_document
from covrag.schema.runfile import RunPassage
from covrag.types import Aspect

HERE = Path(__file__).parent / "answers"
CORPORA = ("manuals", "python-api", "guides", "licences", "compression", "faqs", "news", "nodejs")
STAGES = ("plan", "retrieve", "estimate", "select", "generate")
#: Other filters and selectors scored on the same pool and coverage with ``--stage context``
#: (fields of the ask policy they change).
VARIANTS: dict[str, dict[str, Any]] = {
    "document gate": {"gate_scope": "document"},
    "document gate, fixed gate": {"gate_scope": "document", "gate_margin": 0.0},
    "document gate, gate 0.6": {"gate_scope": "document", "gate": 0.6},
    "no name filter": {"names": False},
    "document gate, k 12": {"gate_scope": "document", "k": 12},
    "k 12": {"k": 12},
    "relative gate, margin 0.1": {"gate_margin": 0.1},
    "relative gate, margin 0.05": {"gate_margin": 0.05},
    "gate 0.6": {"gate": 0.6},
    "retriever order, floor and gate": {"selector": "topk", "relevance": "order"},
    "gate 0.3": {"gate": 0.3},
    "gate 0": {"gate": 0.0},
    "no floor, no gate": {"floor": 0.0, "gate": 0.0},
    "label-free, gate 0.3": {
        "selector": "facility-location(similarity='same-point', contrast=1)",
        "gate": 0.3,
    },
    "retriever order, no filters": {
        "selector": "topk",
        "relevance": "order",
        "floor": 0.0,
        "gate": 0.0,
    },
    "question order (dense)": {"selector": "topk", "relevance": "dense"},
    "question order (sentences)": {"selector": "topk", "relevance": "sentences"},
    "question order (dense), no floor": {"selector": "topk", "relevance": "dense", "floor": 0.0},
    "question order (sentences), no floor": {
        "selector": "topk",
        "relevance": "sentences",
        "floor": 0.0,
    },
    "question order (sentences), no filters": {
        "selector": "topk",
        "relevance": "sentences",
        "floor": 0.0,
        "gate": 0.0,
    },
    "MMR (sentences)": {"selector": "mmr", "relevance": "sentences"},
    # section 35: top-k completing the cover of the sub-questions
    "cover": {"selector": "topk(cover=True)"},
}


def questions_of(corpus: str) -> list[NuggetQuestion]:
    return read_nugget_questions(HERE / "questions" / f"{corpus}.jsonl")


def validate(corpora: Sequence[str]) -> int:
    """Print every problem of the corpora's nugget files; the count of problems."""
    problems = 0
    for corpus in corpora:
        folder = HERE / "corpora" / corpus
        texts = {
            str(p.relative_to(folder)): read_document(p).text
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }
        questions = questions_of(corpus)
        kinds: dict[str, int] = {}
        for q in questions:
            kinds[q.kind] = kinds.get(q.kind, 0) + 1
            for nugget in q.nuggets:
                for problem in check_sources(nugget, texts):
                    print(f"{corpus}/{q.id}: {problem}")
                    problems += 1
        nuggets = sum(len(q.nuggets) for q in questions)
        vital = sum(n.vital for q in questions for n in q.nuggets)
        print(
            f"{corpus}: {len(texts)} documents, {len(questions)} questions {kinds}, "
            f"{nuggets} nuggets ({vital} vital)"
        )
    return problems


def _config(settings: Sequence[str]) -> Any:
    from covrag.pipeline import AskConfig

    values: dict[str, Any] = {}
    types = {f.name: f.type for f in dataclasses.fields(AskConfig)}
    for setting in settings:
        name, _, raw = setting.partition("=")
        if name not in types:
            raise SystemExit(f"--set: AskConfig has no field {name!r}")
        try:  # numbers, true / false / null, lists, quoted strings; else the text as it is
            values[name] = json.loads(raw)
        except json.JSONDecodeError:
            values[name] = raw
    return AskConfig(**values)


def ask_one(
    question: NuggetQuestion, index: Path, llm: Any, config: Any, stage: str, aspects: str
) -> dict[str, Any]:
    """Run one question; the run record, with ``"context_only"`` when no answer was written."""
    import covrag
    from covrag.pipeline.ask import retrieve_pool
    from covrag.pipeline.context import estimate_context, pick_context, refine, selector_of
    from covrag.plan import C2Query
    from covrag.plan.planned import PlannerAspects
    from covrag.retrieve import load_index

    given = [Aspect("q", question.question)] if aspects == "question" else None
    if stage == "answer":
        return covrag.ask(
            question.question, str(index), llm=llm, config=config, aspects=given
        ).run_record()
    retriever = load_index(str(index))
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    planner = PlannerAspects(llm, config.policy().aspect_options)
    query = C2Query.explicit(question.question)
    if given is not None or config.aspect_source == "llm":
        planned = planner.plan(query, given)
    else:  # grounded, or key points: read off a first pool
        pool = tuple(retriever.search(question.question, config.pool))
        grounded = config.aspect_source == "grounded"
        planned = planner.plan(query, pool=pool, gate=config.gate, grounded=grounded)
    seconds["plan"] = time.perf_counter() - started
    started = time.perf_counter()
    _, topic = retrieve_pool(
        planned.query, planned.aspects, retriever, config.pool, config.definitions, config.names
    )
    seconds["retrieve"] = time.perf_counter() - started
    started = time.perf_counter()
    policy = dataclasses.replace(config.policy(), aspects=None)
    estimated = estimate_context(topic, policy)
    seconds["estimate"] = time.perf_counter() - started
    started = time.perf_counter()
    chosen = pick_context(estimated, policy)
    seconds["select"] = time.perf_counter() - started
    variants = {}
    # the floor's column (each passage's probability of answering the question) is the same for
    # every variant: estimated once
    from covrag.pipeline import context as context_module

    column = context_module.question_column(
        estimated.candidates, estimated.estimator, estimated.candidates.query
    )
    original = context_module.question_column
    context_module.question_column = lambda *_: column  # type: ignore[assignment]
    try:
        variants = _variants(estimated, policy, refine, selector_of, pick_context)
    finally:
        context_module.question_column = original
    return {
        "context_only": True,
        "aspects": [a.text for a in planned.aspects],
        "passages": [
            RunPassage.of(p).model_dump(exclude_none=True) for p in estimated.topic.passages
        ],
        "selected": list(chosen.selection.passage_ids),
        "variants": variants,
        "answerable_scores": {
            "question_best": float(max(column, default=0.0)),
            "best_support": estimated.filters.best_support,
            "best_similarity": estimated.filters.best_similarity,
        },
        "costs": {s: {"seconds": round(v, 3)} for s, v in seconds.items()},
    }


#: Context checks of each variant and the passages it selected, filled by :func:`checked`.
VARIANT_CHECKS: dict[str, list[tuple[AnswerCheck, int]]] = {}


def _variants(
    estimated: Any, policy: Any, refine: Any, selector_of: Any, pick: Any
) -> dict[str, list[str]]:
    """The passages each of :data:`VARIANTS` selects from the same pool and coverage."""
    from covrag.pipeline.context import prepare_config, prepare_pool

    variants = {}
    ranked_by: dict[str, Any] = {}  # relevance -> the pool ranked by it, prepared once
    for name, overrides in VARIANTS.items():
        other = dataclasses.replace(policy, **overrides)
        question_text = estimated.candidates.query if other.floor_question else None
        candidates = estimated.candidates
        if other.relevance != policy.relevance:  # the same pool and coverage, ranked otherwise
            if other.relevance not in ranked_by:
                config = prepare_config(other, selector_of(other), estimated.topic)
                ranked_by[other.relevance] = prepare_pool(estimated.topic, config)
            ranked = ranked_by[other.relevance]
            candidates = dataclasses.replace(
                candidates,
                relevance=ranked.relevance,
                embeddings=ranked.embeddings,
                query_embedding=ranked.query_embedding,
            )
        refined = refine(
            estimated.topic,
            candidates,
            selector_of(other),
            estimated.estimator,
            other,
            question_text,
        )
        variants[name] = list(pick(refined, other).selection.passage_ids)
    return variants


def checked(
    question: NuggetQuestion, record: dict[str, Any]
) -> tuple[AnswerCheck, dict[str, float]]:
    """The checks of one run record, and its seconds by stage."""
    if record.get("context_only"):
        passages = [RunPassage.model_validate(p).to_passage() for p in record["passages"]]
        check = check_answer(question, passages, record["selected"], [])
        costs = record["costs"]
        VARIANT_CHECKS.setdefault("default", []).append((check, len(record["selected"])))
        for name, selected in record.get("variants", {}).items():
            VARIANT_CHECKS.setdefault(name, []).append(
                (check_answer(question, passages, selected, []), len(selected))
            )
    else:
        topic = record["topics"][0]
        passages = [RunPassage.model_validate(p).to_passage() for p in topic["passages"]]
        looked_up = set((topic.get("retrieval") or {}).get("looked_up", []))
        pool = [p for p in passages if p.id not in looked_up]  # evidence is not retrieved
        selected = [s["passage_id"] for s in topic["selection"]["steps"]]
        sentences = [
            CitedSentence(s["text"], tuple(s.get("passage_ids", ())))
            for s in (topic.get("answer") or {}).get("sentences", [])
        ]
        evidence = [p for p in passages if p.id in looked_up]
        check = check_answer(question, pool, selected, sentences, evidence)
        costs = topic.get("costs") or {}
    seconds = {s: float(costs[s]["seconds"]) for s in STAGES if s in costs}
    return check, seconds


def _f(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}"


def _row(corpus: str, c: AnswerCheck, seconds: dict[str, float], answered: bool) -> str:
    q = c.question
    answer_part = (
        f"{_f(c.v_strict)} | {_f(c.st_recall)} | {_f(c.stated_recall)} | {_f(c.transfer)} | "
        f"{c.reader_supported}/{c.cited} | {len(c.narrating)} | {len(c.misattributed)} | "
        f"{len(c.repeated)} | {'ok' if c.refusal_right else 'WRONG'}"
        if answered
        else "- | - | - | - | - | - | - | - | -"
    )
    stages = " ".join(f"{seconds.get(s, math.nan):.0f}" for s in STAGES if s in seconds)
    return (
        f"| {corpus} | {q.id} | {q.kind} | {_f(c.pool_recall)} | {_f(c.context_recall)} | "
        f"{answer_part} | {stages} |"
    )


HEADER = (
    "| corpus | question | kind | pool | context | V_strict | StRecall | stated | transfer | "
    "support | narr | misattr | rep | refusal | s by stage |\n|" + "---|" * 15
)


def _pooled(rows: Sequence[AnswerCheck], flag: str, vital_only: bool = False) -> float:
    verdicts = [
        v for c in rows if c.question.answerable for v in c.verdicts if v.vital or not vital_only
    ]
    if not verdicts:
        return math.nan
    return sum(1 for v in verdicts if getattr(v, flag)) / len(verdicts)


#: The answer's first sentences, what a reader sees first: ``v_strict_lead`` pools the vital
#: nuggets stated with support within them.
LEAD = 5


def _lead(rows: Sequence[AnswerCheck]) -> float:
    vital = [v for c in rows if c.question.answerable for v in c.verdicts if v.vital]
    if not vital:
        return math.nan
    return sum(1 for v in vital if v.supported and min(v.supported) < LEAD) / len(vital)


def summary(rows: Sequence[tuple[AnswerCheck, dict[str, float]]], answered: bool) -> dict[str, Any]:
    """Pooled figures of some checked questions."""
    checks = [c for c, _ in rows]
    held = [v for c in checks for v in c.verdicts if v.in_context]
    cited = sum(c.cited for c in checks)
    figures: dict[str, Any] = {
        "questions": len(checks),
        "nuggets": sum(len(c.verdicts) for c in checks),
        "pool_recall": _pooled(checks, "in_pool"),
        "context_recall": _pooled(checks, "in_context"),
        "vital_context_recall": _pooled(checks, "in_context", True),
    }
    if answered:
        figures |= {
            "v_strict": _pooled(checks, "supported", True),
            "v_strict_lead": _lead(checks),
            "median_sentences": statistics.median(
                [len(c.sentences) for c in checks if c.question.answerable] or [math.nan]
            ),
            "st_recall": _pooled(checks, "supported"),
            "stated": _pooled(checks, "stated"),
            "transfer": sum(1 for v in held if v.supported) / len(held) if held else math.nan,
            "cited_sentences": cited,
            "reader_support": sum(c.reader_supported for c in checks) / cited
            if cited
            else math.nan,
            "narrating": sum(len(c.narrating) for c in checks),
            "misattributed": sum(len(c.misattributed) for c in checks),
            "repeated": sum(len(c.repeated) for c in checks),
            "unanswerable_refused": sum(
                1 for c in checks if not c.question.answerable and c.refused
            ),
            "unanswerable": sum(1 for c in checks if not c.question.answerable),
            "answerable_refused": sum(1 for c in checks if c.question.answerable and c.refused),
        }
    for stage in STAGES:
        values = [s[stage] for _, s in rows if stage in s]
        if values:
            figures[f"seconds_{stage}"] = sum(values) / len(values)
    return figures


def leave_one_corpus_out(
    variants: dict[str, list[tuple[AnswerCheck, int]]],
) -> dict[str, dict[str, Any]]:
    """For each corpus: the variant with the best pooled context recall on the other corpora
    (ties: the earlier variant, the default first), and the held-out corpus's recall under it.
    Printed, and returned by held-out corpus."""
    corpora = sorted({c.question.corpus for rows in variants.values() for c, _ in rows})
    out: dict[str, dict[str, Any]] = {}
    for held in corpora:

        def recall(name: str, inside: bool, held: str = held) -> float:
            checks = [c for c, _ in variants[name] if (c.question.corpus == held) == inside]
            return _pooled(checks, "in_context")

        chosen = max(variants, key=lambda n: recall(n, False))
        out[held] = {
            "chosen": chosen,
            "chosen_on_others": recall(chosen, False),
            "held_out_context_recall": recall(chosen, True),
            "default_held_out": recall("default", True),
        }
        print(
            f"leave {held} out: choose {chosen!r} (others {_f(recall(chosen, False))}); "
            f"{held} {_f(recall(chosen, True))} (default {_f(recall('default', True))})"
        )
    return out


def _context_counts(folder: Path, corpora: Sequence[str]) -> dict[tuple[str, str], tuple[int, int]]:
    """(question id, variant) -> (nuggets in the context, nuggets) of a ``--stage context`` run."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for corpus in corpora:
        for q in questions_of(corpus):
            path = folder / f"{q.id}.json"
            if not q.nuggets or not path.is_file():
                continue
            record = json.loads(path.read_text("utf-8"))
            passages = [RunPassage.model_validate(p).to_passage() for p in record["passages"]]
            chosen = {"default": record["selected"], **record.get("variants", {})}
            for name, selected in chosen.items():
                check = check_answer(q, passages, selected, [])
                found = sum(1 for v in check.verdicts if v.in_context)
                counts[(q.id, name)] = (found, len(check.verdicts))
    return counts


def compare(new: Path, base: Path, corpora: Sequence[str], draws: int = 10_000) -> None:
    """Paired difference of pooled context recall, ``new`` minus ``base``, per variant and
    corpus, with a 95% bootstrap interval over questions (seed 0)."""
    import numpy as np

    a, b = _context_counts(new, corpora), _context_counts(base, corpora)
    rng = np.random.default_rng(0)
    for name in sorted({v for _, v in a} & {v for _, v in b}):
        for corpus in [*corpora, "overall"]:
            keys = [
                k
                for k in a
                if k[1] == name
                and k in b
                and (corpus == "overall" or k[0].startswith(corpus + "-"))
            ]
            if not keys:
                continue
            gain = np.array([a[k][0] - b[k][0] for k in keys], dtype=float)
            total = np.array([a[k][1] for k in keys], dtype=float)
            picks = rng.integers(0, len(keys), size=(draws, len(keys)))
            boot = gain[picks].sum(axis=1) / total[picks].sum(axis=1)
            low, high = np.percentile(boot, [2.5, 97.5])
            new_r = sum(a[k][0] for k in keys) / total.sum()
            base_r = sum(b[k][0] for k in keys) / total.sum()
            print(
                f"{name:40s} {corpus:12s} {base_r:.3f} -> {new_r:.3f}  "
                f"{gain.sum() / total.sum():+.3f} (95% CI {low:+.3f}..{high:+.3f}, "
                f"{len(keys)} questions)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA))
    parser.add_argument("--validate", nargs="*", default=None, metavar="CORPUS")
    parser.add_argument("--llm", default="local", help="LLM spec (covrag.llm)")
    parser.add_argument("--stage", choices=("context", "answer"), default="answer")
    parser.add_argument("--aspects", choices=("planner", "question"), default="planner")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--limit", type=int, default=None, help="first N questions per corpus")
    parser.add_argument("--only", nargs="*", default=None, help="question ids to run")
    parser.add_argument("--out", type=Path, default=Path("bench-answer-nuggets"))
    parser.add_argument("--recheck", action="store_true", help="score the run files in --out")
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="BASE",
        help="context runs: paired context recall of --out against BASE, with bootstrap CIs",
    )
    args = parser.parse_args()
    if args.compare is not None:
        compare(args.out, args.compare, args.corpora)
        return
    if args.validate is not None:
        sys.exit(1 if validate(args.validate or CORPORA) else 0)
    from covrag.llm import parse_llm

    config = _config(args.set)
    llm = (
        None
        if args.recheck or args.aspects == "question" and args.stage == "context"
        else parse_llm(args.llm)
    )
    args.out.mkdir(parents=True, exist_ok=True)
    answered = args.stage == "answer"
    print(HEADER, flush=True)
    rows: dict[str, list[tuple[AnswerCheck, dict[str, float]]]] = {}
    for corpus in args.corpora:
        questions = questions_of(corpus)[: args.limit]
        if args.only:
            questions = [q for q in questions if q.id in args.only]
        index = args.out / f"index-{corpus}"
        if not args.recheck:
            update_index([HERE / "corpora" / corpus], index)
        for q in questions:
            path = args.out / f"{q.id}.json"
            if args.recheck:
                if not path.is_file():
                    continue
                record = json.loads(path.read_text("utf-8"))
            else:
                record = ask_one(q, index, llm, config, args.stage, args.aspects)
                atomic_write_text(path, json.dumps(record) + "\n")
            check, seconds = checked(q, record)
            rows.setdefault(corpus, []).append((check, seconds))
            print(_row(corpus, check, seconds, answered), flush=True)
    figures = {corpus: summary(r, answered) for corpus, r in rows.items()}
    figures["overall"] = summary([r for rs in rows.values() for r in rs], answered)
    for name, values in figures.items():
        print(
            f"{name}: "
            + ", ".join(f"{k} {_f(v) if isinstance(v, float) else v}" for k, v in values.items())
        )
    for name, rows_of in VARIANT_CHECKS.items():
        checks = [c for c, _ in rows_of]
        variant = {
            "questions": len(checks),
            "context_recall": _pooled(checks, "in_context"),
            "vital_context_recall": _pooled(checks, "in_context", True),
            "mean_passages": sum(n for _, n in rows_of) / len(rows_of),
        }
        figures[f"variant: {name}"] = variant
        print(
            f"variant {name}: context_recall {_f(variant['context_recall'])}, vital "
            f"{_f(variant['vital_context_recall'])}, passages {variant['mean_passages']:.1f}"
        )
    if VARIANT_CHECKS:
        figures["leave one corpus out"] = leave_one_corpus_out(VARIANT_CHECKS)
    payload = {
        "llm": args.llm,
        "stage": args.stage,
        "aspects": args.aspects,
        "settings": args.set,
        "summary": figures,
    }
    atomic_write_text(args.out / "summary.json", json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
