"""Same-point similarity against MiniLM cosine, on topics the similarity never saw.

``train`` fits the models this experiment needs (each kept in ``CACHE/<name>/`` as a
sentence-transformers folder and its int8 ONNX export; a finished one is not trained again):

- ``argkp-fold<i>``: on the ArgKP train + dev topics of every fold but i (5 folds, seed 0, the
  folds ``covrag-lab cv`` deals), for leave-topics-out CV on ArgKP;
- ``no-argkp``: on Perspectrum and Perspectrum-evidence train (no ArgKP), scored on ArgKP and
  on Perspectrum dev;
- ``no-perspectrum``: on ArgKP train (no Perspectrum), scored on Perspectrum;
- ``all``: ``no-argkp`` continued on ArgKP train (the shipped candidate).

The fold models continue from ``no-argkp`` too (it saw no ArgKP topic). CPU time was scarce
(2 cores shared by several jobs), so each model sees few batches: ``STEPS`` and ``SETTINGS``.

``check`` compares an int8 export with its torch model (the figures of a training card).

``score`` scores random, MMR, cluster and facility location over MiniLM cosine beside the same
selectors over same-point similarity, on the topics ``covrag-lab cv`` prepares (same pools, same
measures): with ``folds``, each ArgKP topic with the fold model trained without it (the folds of
``covrag-lab cv --folds 5 --seed 0``); with a model's name, that model, which saw none of the
topics. It prints each setting's mean alpha-nDCG@10 with a bootstrap 95% CI over topics, and
its paired difference from facility location over MiniLM cosine (bootstrap CI of the per-topic
differences).

Usage::

    python benchmarks/cv_same_point.py train CACHE argkp-fold0 ... all
    python benchmarks/cv_same_point.py train CACHE10 --steps-scale=10 no-argkp argkp-fold0 ...
    python benchmarks/cv_same_point.py train CACHE_MPNET --base=mpnet no-argkp argkp-fold0 ...
    python benchmarks/cv_same_point.py score CACHE OUT.json argkp2021 train,dev no-argkp folds
    python benchmarks/cv_same_point.py score CACHE OUT.json perspectrum dev no-perspectrum no-argkp
    python benchmarks/cv_same_point.py check CACHE/all/model CACHE/all/onnx
    python benchmarks/cv_same_point.py speed
    python benchmarks/cv_same_point.py score CACHE OUT.json argkp2021 train,dev folds \
        --contrast=0.5,1
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from covrag.data import load_dataset
from covrag.evaluation.stats import bootstrap_ci
from covrag.pipeline.bench import Method, build_methods
from covrag.pipeline.config import config_for
from covrag.types import Budget, Topic
from covrag_lab.cv import CVConfig, TopicScores, assign_folds, cv_measures
from covrag_lab.train.same_point import SamePointConfig, export_encoder_onnx, train_same_point
from cv_label_free import FOLDS, SEED, K, cv_chosen  # the sibling script's per-fold choice

logger = logging.getLogger("cv_same_point")

ALPHA = f"alpha-nDCG@{K}"

STEPS = {"argkp": 25, "no-argkp": 50, "no-perspectrum": 30, "all": 25, "keypoints": 40,
         "all-keypoints": 40}  # fmt: skip
#: Models that continue from ``no-argkp`` (Perspectrum only), as the coverage model's stage 2.
STAGED = ("argkp", "all", "keypoints", "all-keypoints")
#: Models whose batches hold their topics' key points too (as statements and as questions).
WITH_KEY_POINTS = ("keypoints", "all-keypoints")
SETTINGS = {"batch_size": 24, "max_length": 96, "learning_rate": 4e-5}
BASELINES = ["random", "mmr(lam=0.5)", "cluster", "facility-location"]
SAME_POINT = ["mmr(lam=0.5, similarity='same-point')", "cluster(similarity='same-point')",
              "facility-location(similarity='same-point')"]  # fmt: skip


def argkp_topics(form: str = "") -> list[Topic]:
    """ArgKP's train + dev topics; ``form`` ":questions" for the key points worded as questions."""
    return [t for s in ("train", "dev") for t in load_dataset(f"argkp2021:{s}{form}")]


def training_data(name: str) -> tuple[dict[str, list[Topic]], int]:
    """The topics a model is trained on (by dataset) and its steps."""
    if name.startswith(("argkp-fold", "keypoints-fold")):
        fold = int(name.split("-fold")[1])
        topics = argkp_topics()
        fold_of = assign_folds([t.query_id for t in topics], FOLDS, SEED)
        train = {"argkp2021": [t for t in topics if fold_of[t.query_id] != fold]}
        if name.startswith("keypoints"):
            questions = argkp_topics(":questions")
            train["argkp2021:questions"] = [t for t in questions if fold_of[t.query_id] != fold]
            return train, STEPS["keypoints"]
        return train, STEPS["argkp"]
    if name == "all-keypoints":
        names = ("argkp2021:train", "argkp2021:train:questions")
        return {n: load_dataset(n) for n in names}, STEPS[name]
    perspectrum = {d: load_dataset(f"{d}:train") for d in ("perspectrum", "perspectrum-evidence")}
    argkp = {"argkp2021:train": load_dataset("argkp2021:train")}
    data = {"no-argkp": perspectrum, "no-perspectrum": argkp, "all": argkp}[name]
    return dict(data), STEPS[name]


def train(cache: Path, names: Sequence[str], scale: int = 1, base: str | None = None) -> None:
    """Train the named models into ``cache``, each for ``scale`` times its ``STEPS`` (use one
    cache folder per scale and base: the staged models continue from that folder's
    ``no-argkp``, which starts from ``base``, the packaged MiniLM when None)."""
    for name in names:
        onnx = cache / name / "onnx"
        if onnx.is_dir():
            continue
        data, steps = training_data(name)
        staged = name.split("-fold")[0] in STAGED
        start = str(cache / "no-argkp" / "model") if staged else base
        config = SamePointConfig(
            base_model=start,
            max_steps=steps * scale,
            with_aspects=name.split("-fold")[0] in WITH_KEY_POINTS,
            **SETTINGS,  # type: ignore[arg-type]
        )
        card = train_same_point(data, cache / name / "model", config)
        card.notes.append(f"{name}: trained on " + ", ".join(
            f"{k} ({len(v)} topics)" for k, v in data.items()))  # fmt: skip
        if "-fold" in name:
            card.notes.append("topics: " + ", ".join(sorted(t.query_id for t in data["argkp2021"])))
        card.save(cache / name / "model")
        export_encoder_onnx(cache / name / "model", onnx)
        logger.info("%s: %d steps in %.0f s", name, card.steps, card.seconds)


def with_model(spec: str, model: Path) -> str:
    """``spec`` with ``similarity_model`` set (a spec that ends with its parameters)."""
    return spec[:-1] + f", similarity_model='{model}')"


def fold_methods(
    cache: Path, fold_of: dict[str, int], specs: Sequence[str]
) -> dict[str, dict[int, Method]]:
    """Each same-point selector per fold, over the model trained without that fold."""
    return {
        spec: {
            f: build_methods([with_model(spec, cache / f"argkp-fold{f}" / "onnx")], ["gold"])[0]
            for f in sorted(set(fold_of.values()))
        }
        for spec in specs
    }


def score(
    cache: Path,
    out: Path,
    dataset: str,
    splits: Sequence[str],
    models: Sequence[str],
    contrasts: Sequence[float] = (),
) -> None:
    """Every setting's alpha-nDCG@10 per topic, each topic scored by a model that never saw it:
    ``folds`` (ArgKP) is each topic's fold model, any other name one model for every topic;
    facility location once more per ``contrasts`` value (MiniLM and same-point)."""
    same_point = SAME_POINT + [
        f"facility-location(similarity='same-point', contrast={c:g})" for c in contrasts
    ]
    budget = Budget(max_passages=10)
    topics = [t for s in splits for t in load_dataset(f"{dataset}:{s}")]
    ids = [t.query_id for t in topics]
    fold_of = assign_folds(ids, FOLDS, SEED)
    baselines = build_methods(
        BASELINES + [f"facility-location(contrast={c:g})" for c in contrasts], ["gold"]
    )
    config = config_for([m.selector for m in baselines])
    measures = cv_measures(budget, CVConfig(), topics)
    scores = TopicScores(topics, budget, measures, config)
    measure = measures[0]
    table: dict[str, dict[str, float]] = {}
    for method in baselines:
        table[method.name] = scores.values(method, ids)[measure]
        logger.info("%s done", method.name)
    for model in models:
        methods = fold_methods(cache, fold_of, same_point) if model == "folds" else {}
        for spec in same_point:
            if model == "folds":
                values = {}
                for f, method in methods[spec].items():
                    test = [q for q in ids if fold_of[q] == f]
                    values.update(scores.values(method, test)[measure])
                table[spec + " [fold models]"] = {q: values[q] for q in ids}
            else:
                while not (cache / model / "onnx").is_dir():  # a model still in training
                    time.sleep(30)
                method = build_methods([with_model(spec, cache / model / "onnx")], ["gold"])[0]
                table[f"{spec} [{model}]"] = scores.values(method, ids)[measure]
            logger.info("%s [%s] done", spec, model)
    report(f"{dataset}:{'+'.join(splits)}", measure, table, out)


def contrast_chosen(table: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per similarity (MiniLM, each same-point model), facility location with the contrast
    chosen per fold (5, seed 0) as the best mean on the other folds, scored on the held-out
    fold (:func:`cv_label_free.cv_chosen`): the figure of choosing the contrast by
    cross-validation (no contrast is a candidate)."""
    groups: dict[str, list[str]] = {}
    for name in table:
        if name.startswith("facility-location"):
            base = name.split(" [")[-1].rstrip("]") if " [" in name else "MiniLM"
            same_point = "same-point" in name
            groups.setdefault(f"{'same-point ' if same_point else ''}{base}", []).append(name)
    nested = {name: {q: {ALPHA: v} for q, v in values.items()} for name, values in table.items()}
    chosen: dict[str, dict[str, float]] = {}
    for group, names in groups.items():
        if len(names) < 2:
            continue
        values, best = cv_chosen(nested, names)
        picks = [b.split("contrast=")[1].split(")")[0] if "contrast=" in b else "-" for b in best]
        chosen[f"facility location, contrast chosen per fold ({', '.join(picks)}) [{group}]"] = {
            q: values[q][ALPHA] for q in table["facility-location"]
        }
    return chosen


def report(what: str, measure: str, table: dict[str, dict[str, float]], out: Path) -> None:
    """Means with bootstrap 95% CIs, and paired differences from facility location (MiniLM)."""
    table = {**table, **contrast_chosen(table)}
    reference = table["facility-location"]
    rows = {}
    for name, values in table.items():
        v = list(values.values())
        diff = [values[q] - reference[q] for q in values]
        rows[name] = {
            "mean": float(np.mean(v)),
            "ci95": list(bootstrap_ci(v, n_resamples=10_000, seed=SEED)),
            "minus_facility_location": float(np.mean(diff)),
            "diff_ci95": list(bootstrap_ci(diff, n_resamples=10_000, seed=SEED)),
            "wins": int(sum(d > 0 for d in diff)),
            "losses": int(sum(d < 0 for d in diff)),
            "per_topic": values,
        }
        r = rows[name]
        print(
            f"{r['mean']:.3f} ({r['ci95'][0]:.3f}-{r['ci95'][1]:.3f})  "
            f"{r['minus_facility_location']:+.3f} "
            f"({r['diff_ci95'][0]:+.3f}..{r['diff_ci95'][1]:+.3f})"
            f"  {r['wins']}/{r['losses']}  {name}"
        )
    out.write_text(json.dumps({"what": what, "measure": measure, "topics": len(reference),
                               "rows": rows}, indent=2) + "\n")  # fmt: skip


def check(model: Path, onnx: Path) -> None:
    """The int8 export against its fp32 torch model on 120 passages (60 ArgKP dev arguments, 60
    Perspectrum-evidence dev paragraphs): the largest difference of a pairwise cosine, and the
    smallest cosine between a passage's two embeddings (the figures a training card states)."""
    from sentence_transformers import SentenceTransformer

    from covrag.coverage.onnx_encoder import OnnxEncoder

    texts = [p.text for t in load_dataset("argkp2021:dev") for p in t.passages][:60]
    texts += [p.text for t in load_dataset("perspectrum-evidence:dev") for p in t.passages][:60]
    encoder = OnnxEncoder(onnx)
    torch_model = SentenceTransformer(str(model), device="cpu")
    torch_model.max_seq_length = 128  # the encoder's token limit (training used 96)
    exact = torch_model.encode(texts, normalize_embeddings=True)
    got = encoder.encode(texts)
    pairs = float(np.abs(got @ got.T - exact @ exact.T).max())
    own = float(np.min(np.sum(got * exact, axis=1)))
    print(f"{len(texts)} passages: pairwise cosines within {pairs:.3f} of torch's, "
          f"each embedding's cosine to torch's >= {own:.3f}")  # fmt: skip


def speed() -> None:
    """Seconds each shipped same-point model takes to embed one ArgKP dev topic's arguments (the
    pool the label-free default embeds), best of two fresh encoders (no cached texts)."""
    from covrag.coverage.onnx_encoder import SAME_POINT_MODELS, OnnxEncoder

    texts = [p.text for p in load_dataset("argkp2021:dev")[0].passages]
    for name, folder in SAME_POINT_MODELS.items():
        best = float("inf")
        for _ in range(2):
            encoder = OnnxEncoder(folder)
            started = time.perf_counter()
            encoder.encode(texts)
            best = min(best, time.perf_counter() - started)
        print(f"{name}: {len(texts)} passages in {best:.2f} s ({len(texts) / best:.0f} a second)")


def main(argv: Sequence[str]) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if argv[0] == "train":
        names = list(argv[2:])
        options = {}
        while names and names[0].startswith("--"):
            key, _, value = names.pop(0)[2:].partition("=")
            options[key] = value
        unknown = set(options) - {"steps-scale", "base"}
        if unknown:
            sys.exit(f"cv_same_point.py train: unknown option(s) {sorted(unknown)}")
        train(Path(argv[1]), names, int(options.get("steps-scale", 1)), options.get("base"))
    elif argv[0] == "check":
        check(Path(argv[1]), Path(argv[2]))
    elif argv[0] == "speed":
        speed()
    else:
        models = [m for m in argv[5:] if not m.startswith("--contrast=")]
        contrasts = [float(c) for m in argv[5:] if m.startswith("--contrast=")
                     for c in m.split("=", 1)[1].split(",")]  # fmt: skip
        score(Path(argv[1]), Path(argv[2]), argv[3], argv[4].split(","), models, contrasts)


if __name__ == "__main__":
    main(sys.argv[1:])
