"""Choose the coverage floor of ``covrag ask`` by leave-topics-out cross-validation on ArgKP.

    .venv/bin/python benchmarks/cv_floor.py [--floors 0 0.05 0.1 0.2 0.3 0.5 0.8] [--folds 4]
        [--coverage SPEC | --fold-models CACHE --fold-forms statements+questions]
        [--aspects questions|llm [--llm SPEC] [--subquestions 8]] [--answers N] [--pool-aspects N]

Each ArgKP train + dev topic is asked twice, as ``covrag ask`` would with the topic's key points
(in their question form, ``argkp2021:SPLIT:questions``) as the sub-questions:

- **answerable**: one BM25 search per sub-question and one for the question over the pooled
  arguments of every topic, fused into a pool of 50 (the ask default); the shipped
  cross-encoder scores pool x sub-questions; expected coverage selects k = 8 among the passages
  that clear the floor. Measured: StRecall@8 on the gold labels (key points of the topic that a
  selected argument makes) and the slots filled.
- **unanswerable**: the same, over a corpus without the topic's own arguments; every selected
  passage is padding. Measured: the share of the 8 slots left empty.

Per topic the objective is the mean of the two (StRecall@8 answerable, empty share unanswerable).
For each fold the floor with the best mean objective on the other folds is chosen and scored on
the held-out fold (:func:`covrag_lab.cv.assign_folds`, seeded). Prints a markdown table.

With ``--aspects llm`` the sub-questions are the ones ``covrag ask`` would use: the ``--llm``'s
decomposition of the topic's question (8 by default, through the response cache), and StRecall
still reads the gold key points. Probabilities depend on how the sub-questions are worded, so the
floor is chosen for the sub-question source it will meet.

With ``--pool-aspects N`` selection goes through ``covrag ask --pool-aspects N``'s rule
(:func:`covrag.pipeline.context.select_context`): the floor reads the sub-questions, then expected
coverage covers the sub-questions and N representatives of what cleared the floor.

The estimator is the shipped cross-encoder, any ``--coverage`` spec, or, with ``--fold-models``,
the per-fold cross-encoders that ``covrag-lab cv --train-coverage`` trained and kept in its
``--train-cache``: each topic is then scored by the model trained without its fold (the folds
must be the same: ``--folds`` and ``--seed`` as in that run), so the floor is chosen for an
estimator that has never seen the topics it is measured on.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
from pathlib import Path

import numpy as np

from covrag.coverage import CrossEncoderCoverage, parse_estimator
from covrag.coverage.base import CoverageEstimator
from covrag.data import load_dataset
from covrag.llm import parse_llm
from covrag.pipeline import PrepareConfig, prepare
from covrag.pipeline.ask import retrieve_pool
from covrag.pipeline.context import select_context
from covrag.plan import C2Query, LLMDecomposer
from covrag.plan.sketch import AnswerSketcher
from covrag.retrieve import BM25Retriever
from covrag.selectors import parse_selector
from covrag.selectors.base import Candidates
from covrag.types import Selection, Topic
from covrag_lab.cv import assign_folds
from covrag_lab.train.cv_coverage import fold_models


def _candidates(topic: Topic, corpus: list, estimator: CoverageEstimator) -> Candidates:
    retriever = BM25Retriever().index(corpus)
    query = C2Query.explicit(topic.query, (), ())
    _, pooled = retrieve_pool(query, topic.aspects, retriever, 50)
    return prepare(pooled, estimator, PrepareConfig(relevance="dense")).candidates


def as_question(motion: str) -> str:
    """ArgKP's motion as the question a user would ask: "We should ban X" -> "Should we ban X?"."""
    text = motion.strip().rstrip(".")
    if text.lower().startswith("we should "):
        return "Should we " + text[len("we should ") :] + "?"
    subject, should, rest = text.partition(" should ")
    if should and subject:  # "Homeschooling should be banned" -> "Should homeschooling be banned?"
        return f"Should {subject[0].lower()}{subject[1:]} {rest}?"
    return text if text.endswith("?") else text + "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--floors", type=float, nargs="+", default=[0, 0.05, 0.1, 0.2, 0.3, 0.5])
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--selector", default="expected-coverage")
    parser.add_argument("--out", type=Path, default=Path("cv-floor.json"))
    parser.add_argument("--coverage", default="cross-encoder", help="estimator spec")
    parser.add_argument("--fold-models", type=Path, help="covrag-lab cv's --train-cache")
    parser.add_argument("--fold-forms", default="statements+questions")
    parser.add_argument(
        "--aspects", choices=["questions", "statements", "llm"], default="questions"
    )
    parser.add_argument("--llm", default="local", help="LLM spec for --aspects llm")
    parser.add_argument("--subquestions", type=int, default=8)
    parser.add_argument(
        "--answers",
        type=int,
        default=0,
        help="answer sketches per sub-question, written by the --llm (ask's --answers)",
    )
    parser.add_argument(
        "--decompose-style", choices=["factors", "points"], default="factors", help="--aspects llm"
    )
    parser.add_argument(
        "--pool-aspects",
        type=int,
        default=0,
        help="also cover this many representatives of what clears the floor (ask's option)",
    )
    parser.add_argument(
        "--objective",
        choices=["raw", "retained"],
        default="raw",
        help="answerable half of the objective: StRecall@k (raw) or the share of the StRecall@k "
        "without a floor that the floor keeps (retained; needs 0 among --floors)",
    )
    parser.add_argument(
        "--floor-question",
        action="store_true",
        help="a passage also clears the floor when it answers the question itself (the "
        "motion as a question: 'We should X' -> 'Should we X?')",
    )
    parser.add_argument(
        "--gates",
        type=float,
        nargs="+",
        default=[0.0],
        help="topic gates to try beside each floor: a passage must also have at least this "
        "MiniLM cosine to the question (ask's --gate)",
    )
    parser.add_argument(
        "--dataset",
        choices=["argkp2021", "perspectrum-evidence", "perspectrum"],
        default="argkp2021",
        help="train + dev topics of this bundled dataset (Perspectrum: statement aspects, the "
        "claim as the question)",
    )
    parser.add_argument(
        "--topics", type=int, help="a seeded sample of this many topics (default: all)"
    )
    parser.add_argument(
        "--rows",
        type=Path,
        nargs="+",
        help="re-choose from saved --out files, no scoring; with several (e.g. ArgKP and "
        "Perspectrum) one setting is chosen for the topics of all of them together",
    )
    args = parser.parse_args()
    llm = parse_llm(args.llm) if args.aspects == "llm" or args.answers else None
    decomposer = (
        LLMDecomposer(llm, n=args.subquestions, style=args.decompose_style)
        if llm is not None and args.aspects == "llm"
        else None
    )
    sketcher = AnswerSketcher(llm, n=args.answers) if llm is not None and args.answers else None

    def sought(topic: Topic) -> Topic:
        """The topic with the sub-questions the estimator is asked about."""
        if decomposer is not None:
            topic = dataclasses.replace(topic, aspects=decomposer.decompose(topic.query).aspects)
        if sketcher is not None:
            aspects = sketcher.sketch_aspects(topic.aspects, topic.query, failures=[])
            topic = dataclasses.replace(topic, aspects=aspects)
        return topic

    form = ":questions" if args.dataset == "argkp2021" and args.aspects != "statements" else ""
    topics = [
        *load_dataset(f"{args.dataset}:train{form}"),
        *load_dataset(f"{args.dataset}:dev{form}"),
    ]
    corpus_topics = topics
    if args.topics is not None and args.topics < len(topics):
        topics = random.Random(args.seed).sample(topics, args.topics)
    folds = assign_folds(sorted(t.query_id for t in topics), args.folds, args.seed)
    grid = [(floor, gate) for floor in args.floors for gate in args.gates]
    forms = args.fold_forms.split("+")
    models = fold_models(args.fold_models, forms) if args.fold_models else {}

    def estimator_for(topic: Topic) -> CoverageEstimator:
        if not args.fold_models:
            return shared
        train = frozenset(q for q, f in folds.items() if f != folds[topic.query_id])
        if train not in models:
            raise SystemExit(f"{args.fold_models}: no {args.fold_forms} model for this fold")
        return CrossEncoderCoverage(model=str(models[train]))

    shared = parse_estimator(args.coverage)
    selector = parse_selector(args.selector)
    pool = args.pool_aspects
    everything = {p.id: p for t in corpus_topics for p in t.passages}
    rows: dict[str, dict[str, list[float]]] = {}
    source: dict[str, str] = {}  # topic -> the --rows file it came from
    for path in args.rows or []:
        saved = json.loads(path.read_text())
        if saved["floors"] != args.floors or saved.get("gates", [0.0]) != args.gates:
            raise SystemExit(
                f"{path} has floors {saved['floors']} and gates {saved.get('gates', [0.0])}: "
                "pass the same --floors and --gates"
            )
        rows.update(saved["rows"])
        source.update(dict.fromkeys(saved["rows"], path.name))
    for n, topic in enumerate([] if args.rows else topics, start=1):
        own = set(topic.passage_ids)
        estimator = estimator_for(topic)
        asked = sought(topic)
        answerable = _candidates(asked, list(everything.values()), estimator)
        others = [p for pid, p in everything.items() if pid not in own]
        unanswerable = _candidates(asked, others, estimator)
        wanted = {a.id for a in topic.aspects}
        values: dict[str, list[float]] = {"strecall": [], "filled": [], "empty_off": []}
        question = as_question(topic.query) if args.floor_question else None

        def strecall(chosen: Selection, topic: Topic = topic, wanted: set[str] = wanted) -> float:
            made = {a for p in chosen.passage_ids for a in topic.labels.get(p, ())} & wanted
            return len(made) / len(wanted)

        for floor, gate in grid:
            chosen = select_context(
                selector, answerable, estimator, args.k, floor, pool, question, gate
            )
            values["strecall"].append(strecall(chosen))
            values["filled"].append(len(chosen) / args.k)
            padded = select_context(
                selector, unanswerable, estimator, args.k, floor, pool, question, gate
            )
            values["empty_off"].append(1 - len(padded) / args.k)
        plain = select_context(selector, answerable, estimator, args.k, 0.0, pool)
        values["unfloored"] = [strecall(plain)]
        rows[topic.query_id] = values
        print(f"{n}/{len(topics)} {topic.query_id}: {values}", flush=True)

    ids = sorted(rows)
    folds = assign_folds(ids, args.folds, args.seed)  # over every topic of every --rows file

    def kept_share(q: str) -> np.ndarray:
        strecall = np.array(rows[q]["strecall"])
        if args.objective == "raw":
            return strecall
        unfloored = rows[q]["unfloored"][0]
        return strecall / unfloored if unfloored > 0 else np.ones_like(strecall)

    objective = {q: 0.5 * kept_share(q) + 0.5 * np.array(rows[q]["empty_off"]) for q in ids}
    held: dict[str, int] = {}
    for fold in range(args.folds):
        train = [q for q in ids if folds[q] != fold]
        best = int(np.argmax(np.mean([objective[q] for q in train], axis=0)))
        print(f"fold {fold}: chose floor {grid[best][0]:g}, gate {grid[best][1]:g}", flush=True)
        for q in ids:
            if folds[q] == fold:
                held[q] = best

    def mean(measure: str, pick: dict[str, int]) -> float:
        return float(np.mean([rows[q][measure][pick[q]] for q in ids]))

    head = "| floor | gate | objective | StRecall@8 | slots filled | unanswerable: slots empty |"
    lines = [head, "|---|---|---|---|---|---|"]
    cv_objective = float(np.mean([objective[q][held[q]] for q in ids]))
    lines.append(
        f"| **CV choice** | | **{cv_objective:.3f}** | {mean('strecall', held):.3f} | "
        f"{mean('filled', held):.3f} | {mean('empty_off', held):.3f} |"
    )
    for i, (floor, gate) in enumerate(grid):
        fixed = dict.fromkeys(ids, i)
        value = float(np.mean([objective[q][i] for q in ids]))
        lines.append(
            f"| {floor:g} | {gate:g} | {value:.3f} | {mean('strecall', fixed):.3f} | "
            f"{mean('filled', fixed):.3f} | {mean('empty_off', fixed):.3f} |"
        )
    unfloored = float(np.mean([rows[q]["unfloored"][0] for q in ids]))
    print(f"no floor, no gate: StRecall@8 {unfloored:.3f}")
    print("\n".join(lines))
    for name in sorted(set(source.values())) if len(set(source.values())) > 1 else []:
        mine = [q for q in ids if source[q] == name]
        value = float(np.mean([objective[q][held[q]] for q in mine]))
        kept = float(np.mean([rows[q]["strecall"][held[q]] for q in mine]))
        empty = float(np.mean([rows[q]["empty_off"][held[q]] for q in mine]))
        print(
            f"{name}: {len(mine)} topics, CV objective {value:.3f}, StRecall@8 {kept:.3f}, "
            f"unanswerable slots empty {empty:.3f}"
        )
    if args.rows:
        return
    saved_rows = {"floors": args.floors, "gates": args.gates, "rows": rows, "held_out_choice": held}
    args.out.write_text(json.dumps(saved_rows, indent=2))


if __name__ == "__main__":
    main()
