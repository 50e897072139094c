"""Gold key points, expected coverage alone and with a facility-location term, on ArgKP topics.

``expected-coverage(power=p, represent=w)`` adds ``w`` x facility location over the pool's
same-point similarity (contrast 1) to expected coverage; with ``targets='supported',
scale='uncertain'`` each pool passage counts by its likeliest aspect's probability and the weight
by the share of aspects left uncovered. This scores both over a grid of ``p`` and ``w`` on
ArgKP's 28 train + dev topics, with the key points as statements and as questions, and chooses
the setting per fold (5 folds, seed 0: the folds of ``covrag-lab cv``) as the best mean on the other
folds, within each family (:data:`FAMILIES`): that is the cross-validated figure.

The coverage probabilities come from one of these estimators:

- ``fold``: the same-point fold model that never saw the topic (``CACHE/argkp-fold<i>/onnx``,
  from ``cv_same_point.py train``), its cosine of argument and key point turned into a
  probability by a logistic fit on gold pairs of other folds' topics (8 of them, seeded). Every
  figure is for unseen topics; the estimator is weaker than the cross-encoder, but trains per
  fold in minutes on these cores.
- ``short``: a coverage cross-encoder trained per fold on the other folds' topics (key points as
  statements and as questions, 4 negatives per positive, from the packaged MiniLM) for a quarter
  of an epoch (about 300 steps, 7 minutes a fold on 2 cores; ``train-short`` trains them into
  ``CACHE/represent/short-fold<i>``). Weaker than the shipped recipe (section 20's per-fold
  models trained 1,200+ steps after a Perspectrum stage), but the real estimator, on unseen
  topics.
- ``trained=MODELS``: the fold cross-encoders that ``covrag-lab cv --folds 5 --seed 0
  --train-coverage ... --train-cache MODELS`` trained (section 20's recipe: from a Perspectrum
  stage, on the other folds' topics); each topic is scored by the one that never saw it.
  ``trained=MODELS,OTHER`` averages the probabilities of such sets of fold models (e.g.
  MiniLM's and all-mpnet-base-v2's, from ``cv_fold_models.py``): an ensemble, still on unseen
  topics.
- ``shipped``: covrag's coverage cross-encoder. It trained on the 24 ArgKP train topics, so its
  figures there are in-sample (flattering expected coverage alone); the 4 dev topics are unseen.

The facility-location term reads the same fold model's embeddings in both cases. Topics' vectors
and probabilities are cached in ``CACHE/represent/``.

Usage::

    python benchmarks/cv_same_point.py train CACHE --base=mpnet no-argkp argkp-fold0 ... argkp-fold4
    python benchmarks/cv_represent.py train-short CACHE
    python benchmarks/cv_represent.py score CACHE MODELS   # the folds finished so far
    python benchmarks/cv_represent.py CACHE OUT.json [fold|short|shipped|trained=MODELS[,OTHER] ...]

With several estimators, each later one's cross-validated rows are also compared with the first's,
paired by topic (mean difference and its 95% bootstrap CI).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import covrag
from covrag.coverage.cross_encoder import CrossEncoderCoverage
from covrag.coverage.onnx_encoder import onnx_encoder
from covrag.data import load_dataset
from covrag.evaluation.stats import bootstrap_ci
from covrag.selectors import Candidates, parse_selector
from covrag.types import Budget, CoverageMatrix, Topic
from covrag_lab.cv import assign_folds
from covrag_lab.train.cv_coverage import fold_models
from cv_label_free import FOLDS, SEED, K, cv_chosen

logger = logging.getLogger("cv_represent")

ALPHA = f"alpha-nDCG@{K}"
POWERS = (1, 2, 4, 8)
WEIGHTS = (0, 0.5, 1, 2, 4, 8, 16)
#: Weights of the term that counts passages by their likeliest aspect and fades with the
#: estimator's certainty (``targets='supported', scale='uncertain'``): settings ``p<power> s<w>``.
SUPPORTED_WEIGHTS = (8, 16, 32, 64)
#: Each setting's term: its name in the table and its selector arguments.
TERMS = [(f"w{w:g}", f"represent={w:g}") for w in WEIGHTS] + [
    (f"s{w:g}", f"represent={w:g}, targets='supported', scale='uncertain'")
    for w in SUPPORTED_WEIGHTS
]
#: The families of settings chosen among per fold, by the term of their name (``w0``, ``w8``,
#: ``s16``): the term off, every passage counted (as in section 25), counted by support.
FAMILIES: dict[str, Callable[[str], bool]] = {
    "expected coverage, power chosen per fold": lambda term: term == "w0",
    "with represent, (power, weight) chosen per fold": lambda term: term.startswith("w"),
    "with represent(targets='supported', scale='uncertain'), chosen per fold": (
        lambda term: term == "w0" or term.startswith("s")
    ),
}
FORMS = {"statements": "", "questions": ":questions"}
CALIBRATION_TOPICS = 8

#: (query id, form) -> passages x key points probabilities.
Probs = dict[tuple[str, str], np.ndarray]
Arrays = dict[str, np.ndarray]


def topics(form: str) -> dict[str, Topic]:
    return {t.query_id: t for s in ("train", "dev") for t in load_dataset(f"argkp2021:{s}{form}")}


def cached_arrays(path: Path, compute: Callable[[], Arrays]) -> Arrays:
    """The arrays saved at ``path``, computed and saved (whole or not at all) when absent."""
    if not path.exists():
        arrays = compute()
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path.with_suffix(".partial.npz"), **arrays)
        path.with_suffix(".partial.npz").replace(path)
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def by_topic_and_form(arrays: dict[str, np.ndarray]) -> Probs:
    """``"query id|form"`` keys as (query id, form)."""
    return {(k.split("|")[0], k.split("|")[1]): v for k, v in arrays.items()}


def fold_vectors(cache: Path, fold: int, topic: Topic, questions: Topic) -> dict[str, np.ndarray]:
    """Passages, statements and questions of ``topic`` under fold ``fold``'s model (cached)."""

    def encode() -> dict[str, np.ndarray]:
        encoder = onnx_encoder(str(cache / f"argkp-fold{fold}" / "onnx"))
        return {
            "passages": encoder.encode([p.text for p in topic.passages]),
            "statements": encoder.encode([a.text for a in topic.aspects]),
            "questions": encoder.encode([a.text for a in questions.aspects]),
        }

    return cached_arrays(cache / "represent" / f"fold{fold}-{topic.query_id}.npz", encode)


def logistic(x: np.ndarray, y: np.ndarray, steps: int = 50) -> tuple[float, float]:
    """Slope and intercept of a 1-D logistic regression (Newton's method, a small ridge)."""
    a, b = 1.0, 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(a * x + b)))
        w = p * (1 - p)
        grad = np.array([np.sum((p - y) * x) + 1e-3 * a, np.sum(p - y)])
        hess = np.array([[np.sum(w * x * x) + 1e-3, np.sum(w * x)], [np.sum(w * x), np.sum(w)]])
        a, b = np.array([a, b]) - np.linalg.solve(hess, grad)
    return float(a), float(b)


def fold_probs(cache: Path, st: dict[str, Topic], qu: dict[str, Topic]) -> Probs:
    """(query id, form) -> probabilities from the fold model, calibrated on other folds."""
    ids = sorted(st)
    fold_of = assign_folds(ids, FOLDS, SEED)
    out: Probs = {}
    for fold in range(FOLDS):
        others = [q for q in ids if fold_of[q] != fold]
        rng = np.random.default_rng(fold)
        calibration = rng.choice(others, CALIBRATION_TOPICS, replace=False)
        for form in FORMS:
            xs, ys = [], []
            for q in calibration:
                v = fold_vectors(cache, fold, st[q], qu[q])
                xs.append((v["passages"] @ v[form].T).ravel())
                ys.append(st[q].label_matrix().ravel())
            a, b = logistic(np.concatenate(xs), np.concatenate(ys).astype(float))
            logger.info("fold %d %s: P = sigmoid(%.2f cos %+.2f)", fold, form, a, b)
            for q in (q for q in ids if fold_of[q] == fold):
                v = fold_vectors(cache, fold, st[q], qu[q])
                out[(q, form)] = 1.0 / (1.0 + np.exp(-(a * (v["passages"] @ v[form].T) + b)))
    return out


def cross_encoder_arrays(
    estimator_for: Callable[[str], CrossEncoderCoverage],
    st: dict[str, Topic],
    qu: dict[str, Topic],
) -> Arrays:
    """``"query id|form"`` -> the probabilities of each topic's cross-encoder (topics of ``st``)."""
    probs = {}
    for q in sorted(st):
        estimator = estimator_for(q)
        for form, topic in (("statements", st[q]), ("questions", qu[q])):
            probs[f"{q}|{form}"] = np.asarray(estimator.estimate(topic).probs)
            logger.info("cross-encoder: %s %s", q, form)
    return probs


def cross_encoder_probs(
    path: Path,
    estimator_for: Callable[[str], CrossEncoderCoverage],
    st: dict[str, Topic],
    qu: dict[str, Topic],
) -> Probs:
    """(query id, form) -> the probabilities of each topic's cross-encoder (cached at ``path``)."""
    arrays = cached_arrays(path, lambda: cross_encoder_arrays(estimator_for, st, qu))
    return by_topic_and_form(arrays)


def shipped_probs(cache: Path, st: dict[str, Topic], qu: dict[str, Topic]) -> Probs:
    """(query id, form) -> the shipped cross-encoder's probabilities (cached)."""
    shipped = CrossEncoderCoverage()
    path = cache / "represent" / "shipped-cross-encoder.npz"
    return cross_encoder_probs(path, lambda _: shipped, st, qu)


def train_short(cache: Path) -> None:
    """The per-fold cross-encoders of the ``short`` estimator (a finished fold is kept)."""
    from covrag_lab.train.coverage import TrainConfig
    from covrag_lab.train.coverage_run import train_coverage
    from covrag_lab.train.pairs import dataset_pairs

    st, qu = topics(""), topics(":questions")
    ids = sorted(st)
    fold_of = assign_folds(ids, FOLDS, SEED)
    for fold in range(FOLDS):
        out = cache / "represent" / f"short-fold{fold}"
        if (out / "onnx").is_dir():
            continue
        others = [q for q in ids if fold_of[q] != fold]
        train = {
            form: dataset_pairs([t[q] for q in others[2:]], max_negatives_per_positive=4)
            for form, t in (("statements", st), ("questions", qu))
        }
        dev = {"statements": dataset_pairs([st[q] for q in others[:2]])}
        config = TrainConfig(epochs=0.25)
        run = train_coverage(train, dev, out / "model", config, onnx_out=out / "onnx")
        logger.info("short fold %d: %d steps in %.0f s", fold, run.card.steps, run.card.seconds)


def trained_probs(models: Path, cache: Path, st: dict[str, Topic], qu: dict[str, Topic]) -> Probs:
    """(query id, form) -> the probabilities of the fold cross-encoder ``covrag-lab cv
    --train-cache models`` trained without the topic's fold (cached; each fold's topics are
    cached on their own first, so :func:`score_finished_folds` can score a fold as soon as
    its model is trained)."""

    def join() -> Arrays:
        arrays: Arrays = {}
        for fold in range(FOLDS):
            fold_arrays = trained_fold_probs(models, cache, st, qu, fold)
            if fold_arrays is None:
                raise SystemExit(f"{models}: no finished fold model trained without fold {fold}")
            arrays.update(fold_arrays)
        return arrays

    return by_topic_and_form(
        cached_arrays(cache / "represent" / f"trained-{models.name}.npz", join)
    )


def trained_fold_probs(
    models: Path, cache: Path, st: dict[str, Topic], qu: dict[str, Topic], fold: int
) -> Arrays | None:
    """``"query id|form"`` -> probabilities of fold ``fold``'s topics under the fold model
    trained without them (cached), or None while that model is not finished."""
    ids = sorted(st)
    fold_of = assign_folds(ids, FOLDS, SEED)
    train = frozenset(q for q in ids if fold_of[q] != fold)
    model = fold_models(models).get(train)
    if model is None:
        return None
    estimator = CrossEncoderCoverage(model=str(model))
    held_out = {q: st[q] for q in ids if fold_of[q] == fold}
    path = cache / "represent" / f"trained-{models.name}-fold{fold}.npz"
    return cached_arrays(path, lambda: cross_encoder_arrays(lambda _: estimator, held_out, qu))


def score_finished_folds(models: Path, cache: Path) -> None:
    """Score each fold whose model is finished (``score MODELS``): beside a training run."""
    st, qu = topics(""), topics(":questions")
    for fold in range(FOLDS):
        done = trained_fold_probs(models, cache, st, qu, fold) is not None
        logger.info("%s fold %d: %s", models, fold, "scored" if done else "no finished model")


def short_probs(cache: Path, st: dict[str, Topic], qu: dict[str, Topic]) -> Probs:
    """(query id, form) -> the ``short`` fold cross-encoder's probabilities (cached)."""
    fold_of = assign_folds(sorted(st), FOLDS, SEED)

    def estimator_for(q: str) -> CrossEncoderCoverage:
        model = cache / "represent" / f"short-fold{fold_of[q]}" / "onnx"
        return CrossEncoderCoverage(model=str(model))

    path = cache / "represent" / "short-cross-encoders.npz"
    return cross_encoder_probs(path, estimator_for, st, qu)


def scores(
    cache: Path, probs: Probs, st: dict[str, Topic], qu: dict[str, Topic], form: str
) -> dict[str, dict[str, float]]:
    """Setting -> query id -> alpha-nDCG@10, each topic with its fold model's vectors."""
    ids = sorted(st)
    fold_of = assign_folds(ids, FOLDS, SEED)
    table: dict[str, dict[str, float]] = {}
    budget = Budget(max_passages=K)
    for q in ids:
        topic = st[q]
        vectors = fold_vectors(cache, fold_of[q], topic, qu[q])["passages"]
        coverage = CoverageMatrix(topic.passage_ids, topic.aspect_ids, probs[(q, form)])
        candidates = Candidates(
            q,
            topic.query,
            topic.passages,
            relevance=np.zeros(len(topic.passages)),
            embeddings=vectors,
            coverage=coverage,
        )
        for power in POWERS:
            for name, term in TERMS:
                spec = (f"expected-coverage(power={power}, {term}, "
                        "similarity='embedding', contrast=1)")  # fmt: skip
                picked = parse_selector(spec).select(candidates, budget).passage_ids
                value = covrag.evaluate([topic], {q: list(picked)}, [ALPHA])[ALPHA]
                table.setdefault(f"p{power} {name}", {})[q] = value
    return table


def chosen(table: dict[str, dict[str, float]], names: Sequence[str]) -> tuple[dict, list[str]]:
    """Per fold, the setting best on the other folds, scored on the held-out fold
    (:func:`cv_label_free.cv_chosen` over this flat table)."""
    nested = {name: {q: {ALPHA: v} for q, v in table[name].items()} for name in names}
    values, picks = cv_chosen(nested, names)
    return {q: v[ALPHA] for q, v in values.items()}, picks


def summary(table: dict[str, dict[str, float]]) -> dict[str, dict]:
    """Each family's CV choice, its paired difference from the term off, and every setting."""
    out: dict[str, dict] = {}
    base: dict[str, float] = {}
    for family, member in FAMILIES.items():
        names = [n for n in table if member(n.split()[1])]
        values, picks = chosen(table, names)
        out[family] = {"values": values, "picks": picks}
        if not base:
            base = values
            continue
        out[family]["difference"] = paired_difference(values, base)
    return out


def paired_difference(values: dict[str, float], base: dict[str, float]) -> dict[str, Any]:
    """``values - base`` paired by topic: mean, 95% bootstrap CI, topics better and worse."""
    diff = [values[q] - base[q] for q in sorted(base)]
    return {
        "mean": float(np.mean(diff)),
        "ci95": list(bootstrap_ci(diff, n_resamples=10_000, seed=SEED)),
        "wins": int(sum(d > 0 for d in diff)),
        "losses": int(sum(d < 0 for d in diff)),
    }


def main(argv: Sequence[str]) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if argv[0] == "train-short":
        train_short(Path(argv[1]))
        return
    if argv[0] == "score":
        score_finished_folds(Path(argv[2]), Path(argv[1]))
        return
    cache, out = Path(argv[0]), Path(argv[1])
    estimators = list(argv[2:]) or ["fold", "shipped"]
    st, qu = topics(""), topics(":questions")
    report = {}
    for estimator in estimators:
        if estimator.startswith("trained="):
            folders = estimator.removeprefix("trained=").split(",")
            sets = [trained_probs(Path(m), cache, st, qu) for m in folders]
            probs = {key: np.mean([s[key] for s in sets], axis=0) for key in sets[0]}
        else:
            read = {"fold": fold_probs, "short": short_probs, "shipped": shipped_probs}[estimator]
            probs = read(cache, st, qu)
        for form in FORMS:
            table = scores(cache, probs, st, qu, form)
            result = summary(table)
            ids = sorted(st)
            dev = [q for q in ids if "-dev-" in q]
            print(f"\n{estimator} estimator, key points as {form} (28 topics | 4 dev topics):")
            for name, row in table.items():
                print(f"  {np.mean([row[q] for q in ids]):.3f} | "
                      f"{np.mean([row[q] for q in dev]):.3f}  {name}")  # fmt: skip
            for name in result:
                values = result[name]["values"]
                ci = bootstrap_ci([values[q] for q in ids], n_resamples=10_000, seed=SEED)
                print(f"  {np.mean([values[q] for q in ids]):.3f} ({ci[0]:.3f}-{ci[1]:.3f}) | "
                      f"{np.mean([values[q] for q in dev]):.3f}  {name}: "
                      f"{', '.join(result[name]['picks'])}")  # fmt: skip
                if "difference" in result[name]:
                    d = result[name]["difference"]
                    print(f"    against the term off {d['mean']:+.3f} ({d['ci95'][0]:+.3f}.."
                          f"{d['ci95'][1]:+.3f}), better on {d['wins']}, worse on "
                          f"{d['losses']}")  # fmt: skip
            report[f"{estimator} {form}"] = {"settings": table, **result}
    if len(estimators) > 1:
        report["against the first estimator"] = against_first(report, estimators)
    out.write_text(json.dumps(report, indent=2) + "\n")


def against_first(report: dict[str, dict], estimators: Sequence[str]) -> dict[str, dict]:
    """Each later estimator's CV-chosen rows against the first's, paired by topic (printed)."""
    out: dict[str, dict] = {}
    first = estimators[0]
    print(f"\nagainst {first} (paired by topic, 28 topics, 95% bootstrap CI):")
    for estimator in estimators[1:]:
        for form in FORMS:
            for family in FAMILIES:
                d = paired_difference(
                    report[f"{estimator} {form}"][family]["values"],
                    report[f"{first} {form}"][family]["values"],
                )
                out[f"{estimator} {form} {family}"] = d
                low, high = d["ci95"]
                print(f"  {estimator}, {form}, {family}: {d['mean']:+.3f} "
                      f"({low:+.3f}..{high:+.3f}), better on {d['wins']}, worse on "
                      f"{d['losses']}")  # fmt: skip
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
