"""How well "covered" (P >= threshold) matches ArgKP's labels: the card's threshold against one
fitted by leave-topics-out cross-validation.

    .venv/bin/python benchmarks/cv_threshold.py [--form statements|questions] [--coverage SPEC]
        [--threshold 0.8] [--folds 5] [--seed 0] [--cross-topic N] [--answers N [--llm SPEC]]

Every labelled (argument, key point) pair of ArgKP's 28 train + dev topics (positives, and the
annotators' explicit negatives) is scored by the estimator, with the key points worded as
statements or as their question forms (``argkp2021:SPLIT:questions``). For each fold the
threshold with the best F1 on the other folds' pairs is fitted
(:func:`covrag_lab.train.calibrate.best_f1_threshold`) and the held-out pairs are judged with it and
with the fixed ``--threshold``. Prints JSON: per fold the fitted threshold and both held-out F1,
then F1 over all held-out pairs and the threshold fitted on every topic.

ArgKP's annotators judged only pairs within a topic. ``--cross-topic N`` adds, for each topic,
N arguments of other topics (seeded) against every key point of the topic, as negatives: what a
mixed pool holds, and all that a question the corpus cannot answer gets.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random

import numpy as np

from covrag.coverage import parse_estimator
from covrag.data import load_dataset
from covrag.llm import parse_llm
from covrag.plan.sketch import AnswerSketcher
from covrag.types import Topic
from covrag_lab.cv import assign_folds
from covrag_lab.train.calibrate import best_f1_threshold, f1_at


def labelled(topic: Topic, probs: np.ndarray, passage_ids: list[str], aspect_ids: list[str]):
    """(labels, scores) of the topic's judged pairs."""
    row = {p: i for i, p in enumerate(passage_ids)}
    col = {a: j for j, a in enumerate(aspect_ids)}
    labels, scores = [], []
    for passage in topic.passages:
        positives = topic.labels.get(passage.id, frozenset())
        negatives = topic.non_labels.get(passage.id, frozenset()) - positives
        for label, aspects in ((1, positives), (0, negatives)):
            for aspect in sorted(aspects):
                labels.append(label)
                scores.append(probs[row[passage.id], col[aspect]])
    return np.array(labels), np.array(scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--form", choices=["statements", "questions"], default="questions")
    parser.add_argument("--coverage", default="cross-encoder", help="estimator spec")
    parser.add_argument("--threshold", type=float, default=0.8, help="the fixed threshold")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cross-topic",
        type=int,
        default=0,
        help="also score N arguments of other topics against each topic's key points, as "
        "negatives (what a mixed pool holds, and all an unanswerable question gets)",
    )
    parser.add_argument(
        "--answers",
        type=int,
        default=0,
        help="give each question-form key point N answer sketches written by the --llm",
    )
    parser.add_argument("--llm", default="local", help="LLM spec for --answers")
    args = parser.parse_args()
    suffix = "" if args.form == "statements" else ":questions"
    topics = [*load_dataset(f"argkp2021:train{suffix}"), *load_dataset(f"argkp2021:dev{suffix}")]
    if args.answers:
        sketcher = AnswerSketcher(parse_llm(args.llm), n=args.answers)
        topics = [sketcher.apply(t) for t in topics]
    folds = assign_folds(sorted(t.query_id for t in topics), args.folds, args.seed)
    estimator = parse_estimator(args.coverage)
    pairs = {}
    rng = random.Random(args.seed)
    for topic in topics:
        matrix = estimator.estimate(topic)
        pairs[topic.query_id] = labelled(
            topic, np.asarray(matrix.probs), list(matrix.passage_ids), list(matrix.aspect_ids)
        )
        if args.cross_topic:
            others = [p for t in topics if t.query_id != topic.query_id for p in t.passages]
            strangers = rng.sample(others, args.cross_topic)
            off = estimator.estimate(dataclasses.replace(topic, passages=tuple(strangers)))
            scores = np.asarray(off.probs).ravel()
            labels, judged = pairs[topic.query_id]
            pairs[topic.query_id] = (
                np.concatenate([labels, np.zeros(scores.size, dtype=labels.dtype)]),
                np.concatenate([judged, scores]),
            )

    def joined(ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.concatenate([pairs[q][0] for q in ids]),
            np.concatenate([pairs[q][1] for q in ids]),
        )

    report: dict[str, object] = {
        "form": args.form,
        "answers": args.answers,
        "coverage": args.coverage,
        "cross_topic": args.cross_topic,
        "folds": [],
    }
    held_labels, held_scores, fitted = [], [], []
    for fold in range(args.folds):
        train = [q for q in pairs if folds[q] != fold]
        threshold, _ = best_f1_threshold(*joined(train))
        labels, scores = joined([q for q in pairs if folds[q] == fold])
        # a score above its fold's threshold counts as covered: 1 is above every threshold
        held_labels.append(labels)
        held_scores.append(scores)
        fitted.append(np.where(scores >= threshold, 1.0, 0.0))
        report["folds"].append(  # type: ignore[attr-defined]
            {
                "threshold": float(threshold),
                "held_out_f1_fitted": f1_at(labels, scores, threshold),
                f"held_out_f1_{args.threshold:g}": f1_at(labels, scores, args.threshold),
            }
        )
    labels = np.concatenate(held_labels)
    report["held_out_f1_fitted"] = f1_at(labels, np.concatenate(fitted), 0.5)
    report[f"held_out_f1_{args.threshold:g}"] = f1_at(
        labels, np.concatenate(held_scores), args.threshold
    )
    everything = joined(list(pairs))
    report["threshold_fitted_on_all_topics"] = float(best_f1_threshold(*everything)[0])
    report["pairs"] = int(everything[0].size)
    report["positives"] = int(everything[0].sum())
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
