"""How well could a reader of the aspect's words alone select? (issue 13, question forms)

    .venv/bin/python benchmarks/question_form_ceiling.py [--datasets argkp2021:train argkp2021:dev]
        [--forms statements questions] [--taus 1 0.95 0.9 0.85 0.8] [--questions FILE]

An estimator sees an aspect only through its text. When two aspects of a topic are worded alike
(the bundled ArgKP question forms give "What are the benefits of private military companies?"
to two different key points), no estimator can tell which of the two a passage answers. This
bounds what that costs: the gold labels of aspects whose texts are near-duplicates (MiniLM
cosine >= tau) are merged, so each aspect is "covered" by every passage that answers any of
its look-alikes, and expected coverage (power 4) selects k = 10 from that oracle matrix. The
measures still use the true labels. tau = 1 merges only identical texts.

Prints, per form, the aspect pairs within a topic at each cosine, and alpha-nDCG@10 and
StRecall@10 of the merged oracle at each tau. ``--questions FILE`` reads the question forms
from a ``covrag-lab train question-forms`` JSONL instead of the bundled ones.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from covrag.coverage.base import CoverageEstimator
from covrag.data import load_dataset
from covrag.data.question_forms import as_questions, read_question_forms
from covrag.embed import default_encoder
from covrag.pipeline.bench import Method, run_bench
from covrag.selectors import parse_selector
from covrag.types import Budget, CoverageMatrix, FloatArray, Topic


def similarity(topic: Topic) -> FloatArray:
    vectors = default_encoder().encode([a.text for a in topic.aspects])
    result: FloatArray = vectors @ vectors.T
    return result


@dataclass(frozen=True, repr=False)
class MergedGold(CoverageEstimator):
    """The gold labels with those of look-alike aspects (cosine >= tau, or identical) merged."""

    tau: float
    name = "merged-gold"

    def __repr__(self) -> str:
        return f"merged-gold(tau={self.tau})"

    def estimate(self, topic: Topic) -> CoverageMatrix:
        started = time.perf_counter()
        texts = [a.text.strip().lower() for a in topic.aspects]
        alike = similarity(topic) >= self.tau - 1e-9
        alike |= np.array([[a == b for b in texts] for a in texts])
        gold = topic.label_matrix().astype(float)
        return CoverageMatrix(
            passage_ids=topic.passage_ids,
            aspect_ids=topic.aspect_ids,
            probs=np.minimum(1.0, gold @ alike.astype(float)),
            threshold=0.5,
            source=repr(self),
            seconds=time.perf_counter() - started,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["argkp2021:train", "argkp2021:dev"])
    parser.add_argument("--forms", nargs="+", default=["statements", "questions"])
    parser.add_argument("--taus", nargs="+", type=float, default=[1.0, 0.95, 0.9, 0.85, 0.8])
    parser.add_argument("--questions", default=None, help="question-form JSONL to use instead")
    args = parser.parse_args()
    for form in args.forms:
        topics = [t for spec in args.datasets for t in load_dataset(spec)]
        if form == "questions":
            if args.questions:
                forms = read_question_forms(args.questions)
                topics = as_questions(topics, forms, args.questions)
            else:
                topics = [t for spec in args.datasets for t in load_dataset(f"{spec}:questions")]
        counts = dict.fromkeys(args.taus, 0)
        identical = 0
        for topic in topics:
            upper = np.triu_indices(len(topic.aspects), 1)
            values = similarity(topic)[upper]
            texts = [a.text.strip().lower() for a in topic.aspects]
            identical += sum(texts[i] == texts[j] for i, j in zip(*upper, strict=True))
            for tau in args.taus:
                counts[tau] += int(np.sum(values >= tau - 1e-9))
        print(
            f"{form}: {len(topics)} topics; aspect pairs within a topic with identical texts "
            f"{identical}, at cosine >= tau: {counts}",
            flush=True,
        )
        methods = [
            Method(parse_selector("expected-coverage(power=4)"), MergedGold(t)) for t in args.taus
        ]
        result = run_bench(
            "merged",
            topics,
            methods,
            [Budget(max_passages=10)],
            measures=["alpha-nDCG@10", "StRecall@10"],
            baseline=methods[0].name,
            exact=False,
            n_resamples=1000,
        )
        for tau, method in zip(args.taus, result.results, strict=True):
            means = {k: round(v, 3) for k, v in method.means.items()}
            print(f"{form}: tau {tau}: {means}", flush=True)


if __name__ == "__main__":
    main()
