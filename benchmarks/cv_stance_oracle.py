"""How much stance awareness could add at most (issue 13): the oracle that knows every
argument's and key point's stance.

    .venv/bin/python benchmarks/cv_stance_oracle.py --fold-models DIR [--form statements|questions]
        [--factors 1 0.5 0.2 0] [--folds 5] [--seed 0]

``DIR`` is ``covrag-lab cv --train-cache``'s folder of per-fold cross-encoders (each ``KEY/model``
with its training card naming its training topics, ``KEY/onnx-uint8`` the int8 model). Each of
ArgKP's 28 train + dev topics is scored by the fold model that never saw it; then every pair whose
argument and key point have different stances (ArgKP labels both) is multiplied by a factor (1:
the model as it is; 0: the oracle mask) and expected coverage (power 4) selects k = 10. Prints
alpha-nDCG@10 over the 28 topics for each factor and the paired difference from factor 1.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from covrag.coverage import CrossEncoderCoverage
from covrag.coverage.base import CoverageEstimator
from covrag.data import load_dataset
from covrag.pipeline import Method
from covrag.selectors import parse_selector
from covrag.types import Budget, CoverageMatrix, FloatArray, Topic
from covrag_lab.cv import CVConfig, run_cv
from covrag_lab.train import cv_coverage


def fold_models(root: Path, topics: set[str]) -> dict[str, str]:
    """Query id -> the int8 model folder of the fold that held it out."""
    model_of: dict[str, str] = {}
    for train, onnx in cv_coverage.fold_models(root).items():
        model_of.update(dict.fromkeys(topics - train, str(onnx)))
    if missing := topics - set(model_of):
        raise SystemExit(f"no fold model held out {sorted(missing)}")
    return model_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fold-models", type=Path, required=True)
    parser.add_argument("--form", choices=["statements", "questions"], default="statements")
    parser.add_argument("--factors", type=float, nargs="+", default=[1.0, 0.5, 0.2, 0.0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    suffix = "" if args.form == "statements" else ":questions"
    topics = [*load_dataset(f"argkp2021:train{suffix}"), *load_dataset(f"argkp2021:dev{suffix}")]
    model_of = fold_models(args.fold_models, {t.query_id for t in topics})
    scored: dict[str, FloatArray] = {}

    @dataclass(frozen=True, repr=False)
    class StanceMasked(CoverageEstimator):
        name = "stance-masked"
        factor: float = 1.0

        def estimate(self, topic: Topic) -> CoverageMatrix:
            if topic.query_id not in scored:
                model = CrossEncoderCoverage(model=model_of[topic.query_id], threshold=0.8)
                scored[topic.query_id] = model.estimate(topic).probs
            probs = scored[topic.query_id].copy()
            passage = np.array([p.metadata.get("stance") for p in topic.passages])
            aspect = np.array([a.metadata.get("stance") for a in topic.aspects])
            probs[passage[:, None] != aspect[None, :]] *= self.factor
            return CoverageMatrix(topic.passage_ids, topic.aspect_ids, probs, 0.8, repr(self))

        def __repr__(self) -> str:
            return f"stance-masked(factor={self.factor:g})"

    selector = parse_selector("expected-coverage(power=4)")
    settings = [Method(selector, StanceMasked(f)) for f in args.factors]
    config = CVConfig(folds=args.folds, seed=args.seed, n_resamples=200)
    result = run_cv(f"argkp2021 {args.form}", topics, settings, Budget(max_passages=10), config)
    measure = result.measure
    base = result.settings[0].values[measure]
    for row in result.settings:
        diff = [row.values[measure][q] - base[q] for q in sorted(base)]
        better = sum(d > 1e-9 for d in diff)
        print(
            f"{args.form}: {row.name}: {measure} {row.means[measure]:.3f}, "
            f"minus factor {args.factors[0]:g}: {np.mean(diff):+.3f} (better on {better} of "
            f"{len(diff)} topics)"
        )


if __name__ == "__main__":
    main()
