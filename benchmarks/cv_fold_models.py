"""Train the per-fold coverage cross-encoders of ``covrag-lab cv`` with settings its CLI does not
take.

``covrag-lab cv --train-coverage statements+questions --train-cache MODELS`` trains one
cross-encoder per fold (5 folds, seed 0 over ArgKP's 28 train + dev topics) at learning rate 2e-5
in fp32. Item 3 of issue 36 needs the same folds from the packaged all-mpnet-base-v2, which on
these 2 cores trains at about 80 minutes a fold only in bf16 (``--precision bf16`` of ``covrag-lab
train coverage``; fp32 is about twice as slow). This trains the folds into MODELS exactly as
``covrag-lab cv`` would (the same topics, pairs, cache layout and training card), with the base and
precision named here; a fold already finished is kept, and an interrupted one resumes from its last
checkpoint (every 200 steps). ``benchmarks/cv_represent.py CACHE OUT trained=MODELS`` then scores
every topic with the fold model that never saw it.

Usage::

    python benchmarks/cv_fold_models.py MODELS [--base mpnet] [--precision bf16] [--folds 0 1 ...]
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from covrag.pipeline import build_methods
from covrag_lab.cv import assign_folds
from covrag_lab.train.coverage import TrainConfig
from covrag_lab.train.cv_coverage import TrainedCoverage
from cv_represent import topics

FOLDS, SEED = 5, 0
#: The learning rate of ``covrag-lab cv``'s fold models (at 5e-5 all-mpnet-base-v2 collapsed on one
#: half of ArgKP: docs/experiments/20-question-aware-coverage.md).
LEARNING_RATE = 2e-5

logger = logging.getLogger("cv_fold_models")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", type=Path, help="folder keeping the fold models")
    parser.add_argument("--base", default="mpnet", help="model to start from")
    parser.add_argument("--precision", default="bf16", choices=("fp32", "bf16"))
    parser.add_argument("--folds", type=int, nargs="*", default=list(range(FOLDS)))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    forms = {"statements": topics(""), "questions": topics(":questions")}
    # covrag-lab cv's topic order (train split, then dev, as ``topics`` reads them): the order the
    # fold's pairs are built in
    order = list(forms["statements"])
    fold_of = assign_folds(order, FOLDS, SEED)
    config = TrainConfig(
        base_model=args.base, learning_rate=LEARNING_RATE, precision=args.precision
    )
    (method,) = build_methods(["expected-coverage"], ["cross-encoder"])
    trainer = TrainedCoverage(method, forms, ("statements", "questions"), config, args.models)
    for fold in args.folds:
        train = [q for q in order if fold_of[q] != fold]
        start = time.monotonic()
        onnx = trainer.model_for(train)
        logger.info("fold %d: %s (%.0f s)", fold, onnx, time.monotonic() - start)


if __name__ == "__main__":
    main()
