"""Ways to combine an aspect's own score with its answer sketches' scores, under ``covrag-lab cv``.

    .venv/bin/python benchmarks/cv_sketch_rules.py cv --dataset argkp2021 \
        --splits train:questions dev:questions --folds 5 --seed 0 \
        --selectors "expected-coverage(power=4)" --aspects gold+answers --llm "local(n_threads=2)" \
        --coverage "sketch-rule(rule='none')" "sketch-rule(rule='max')" \
        "sketch-rule(rule='checked', gate=0.5)" ...

Registers the estimator ``sketch-rule`` (the shipped cross-encoder, or ``model``) and runs the
``covrag`` command line given as arguments (``cv`` or ``bench``). Each aspect's column is built
from its question's probability q and its sketches' S (:func:`covrag.coverage.base.expand_answers`):

- ``none``: q (the sketches are ignored); ``max``: max(q, max S);
- ``mean``: the mean of q and every S; ``mix``: (1 - w) q + w max S; ``maxmix``: max(q, mix);
- ``geo``: sqrt(q max S); ``smean``: max(q, mean S); ``second``: max(q, second-best S);
- ``checked``: max(q, max of the S whose sketch the model, reading it as a passage, gives at
  least ``gate`` against its question): what ``cross-encoder`` ships (gate 0.5, ``ANSWERS_GATE``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from covrag.coverage import CrossEncoderCoverage
from covrag.coverage.base import ESTIMATORS, CoverageEstimator, expand_answers
from covrag.types import CoverageMatrix, Topic


def combine(rule: str, q: np.ndarray, sketches: np.ndarray, ok: np.ndarray, w: float) -> np.ndarray:
    """One aspect's column under ``rule`` (``ok``: the sketches that pass the check)."""
    best = sketches.max(axis=1)
    rules = {
        "none": lambda: q,
        "max": lambda: np.maximum(q, best),
        "mean": lambda: np.column_stack([q, sketches]).mean(axis=1),
        "mix": lambda: (1 - w) * q + w * best,
        "maxmix": lambda: np.maximum(q, (1 - w) * q + w * best),
        "geo": lambda: np.sqrt(q * best),
        "smean": lambda: np.maximum(q, sketches.mean(axis=1)),
        "second": lambda: np.maximum(q, np.sort(sketches, axis=1)[:, -min(2, sketches.shape[1])]),
        "checked": lambda: np.maximum(q, sketches[:, ok].max(axis=1)) if ok.any() else q,
    }
    if rule not in rules:
        raise ValueError(f"rule must be one of {sorted(rules)}, got {rule!r}")
    return rules[rule]()


@ESTIMATORS.register
@dataclass(frozen=True, repr=False)
class SketchRule(CoverageEstimator):
    name = "sketch-rule"
    rule: str = "max"
    w: float = 0.5
    gate: float = 0.5
    model: str | None = None

    def estimate(self, topic: Topic) -> CoverageMatrix:
        ce = CrossEncoderCoverage(model=self.model)
        expanded, owners = expand_answers(topic)
        scorer = ce.scorer()
        pairs = [(p.text, a.text) for p in topic.passages for a in expanded.aspects]
        values, scored, _ = scorer.score(pairs)
        probs = values.reshape(len(topic.passages), len(expanded.aspects))
        checks, _, _ = scorer.score(
            [(a.text, topic.aspects[o].text) for a, o in zip(expanded.aspects, owners, strict=True)]
        )
        out = np.zeros((len(topic.passages), len(topic.aspects)))
        for j in range(len(topic.aspects)):
            cols = np.flatnonzero(owners == j)
            q, sketches = probs[:, cols[0]], probs[:, cols[1:]]
            if sketches.shape[1] == 0:
                out[:, j] = q
            else:
                ok = checks[cols[1:]] >= self.gate
                out[:, j] = combine(self.rule, q, sketches, ok, self.w)
        threshold, per_aspect = ce.thresholds(topic)
        return CoverageMatrix(
            topic.passage_ids,
            topic.aspect_ids,
            out,
            threshold=threshold,
            source=repr(self),
            pairs_scored=scored,
            aspect_thresholds=per_aspect,
        )


if __name__ == "__main__":
    from covrag.cli import main

    sys.exit(main(sys.argv[1:]))
