"""One selector setting, two kinds of corpus: documents (nugget recall) and debates (alpha-nDCG).

    nice -n 10 .venv/bin/python benchmarks/compare_selector_domains.py --pools DIR
        [--selectors SPEC ...] [--debates argkp2021:train+dev ...] [--k 8]

``covrag ask`` chooses its context with one selector for every corpus. This puts selector
settings side by side on the two kinds of corpus the project measures:

- **documents**: the pools of a context-stage run of the answer benchmark
  (``bench_answer_nuggets.py --stage context --out DIR``; each question's file keeps its 50
  pooled passages), each setting choosing 8 of them (``--k``; ``ask`` chooses 12), scored by
  nugget recall of the context (:func:`covrag.evaluation.nuggets.check_answer`), pooled per
  corpus, with a paired bootstrap
  95% CI against the first setting over the answerable questions;
- **debates**: the bundled debate datasets (never a test split), each topic's passages chosen
  10 at a time, scored by alpha-nDCG@10 against their gold key points.

Every setting reads the same candidates: relevance ``sentences`` (``ask``'s default;
``--relevance dense``: the passage's cosine alone), the pool's MiniLM embeddings and the
same-point vectors. The default settings include facility location with ``focus`` (each pooled
passage weighed by ``exp((r - max r) / focus)``, ``r`` its relevance: a small focus represents
only the passages nearest the question, as top-k does, a large one the whole pool, as the
label-free default does); ``--selectors`` replaces the list. ``--encoder FOLDER`` adds each
setting again under another bi-encoder's vectors (``train_question_encoder.py``'s; relevance
``--encoder-relevance``), paired with the packaged MiniLM's first setting.
``--cross-encoders`` also ranks the documents' pools by a cross-encoder's probability for the
question (documents only). Nothing is fitted: the figures compare fixed settings
(docs/experiments/34-one-selector-two-kinds.md); the last lines leave each corpus out in turn
and choose on the others by the mean change relative to the first setting.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from covrag.coverage.cross_encoder import PairScorer, passage_input
from covrag.data.bundled import load_dataset
from covrag.embed import Encoder
from covrag.evaluation.judgments import Judgments
from covrag.evaluation.nuggets import check_answer
from covrag.evaluation.scoring import evaluate
from covrag.evaluation.stats import bootstrap_ci
from covrag.pipeline.config import PrepareConfig
from covrag.pipeline.inputs import with_inputs
from covrag.pipeline.prepare import prepare
from covrag.schema.runfile import RunPassage
from covrag.selectors import parse_selector
from covrag.selectors.base import Candidates
from covrag.types import Budget, Topic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_answer_nuggets import CORPORA, questions_of  # noqa: E402

FOCUS = (0.02, 0.05, 0.1, 0.2, 0.3, 1.0)
SELECTORS = (
    "topk",
    "mmr(lam=0.7)",
    "mmr(lam=0.7, similarity='same-point')",
    "facility-location(similarity='same-point', contrast=1)",
    "random",
    *(f"facility-location(similarity='same-point', contrast=1, focus={f})" for f in FOCUS),
)
SAME_POINT = parse_selector("facility-location(similarity='same-point', contrast=1)")
Choose = Callable[[Candidates, int], list[int]]


def selector_choice(spec: str) -> Choose:
    selector = parse_selector(spec)

    def choose(candidates: Candidates, k: int) -> list[int]:
        ready = with_inputs(candidates, [selector])
        by_id = {p.id: i for i, p in enumerate(candidates.passages)}
        return [by_id[s.passage_id] for s in selector.select(ready, Budget(max_passages=k)).steps]

    return choose


def cross_encoder_choice(model: str, header: str | None) -> Choose:
    """The k passages a cross-encoder scores highest against the question itself."""
    scorer = PairScorer(model, batch_size=32, max_length=256, cache_size=1_000_000)

    def choose(candidates: Candidates, k: int) -> list[int]:
        pairs = [(passage_input(p, header), candidates.query) for p in candidates.passages]
        scores = scorer.score(pairs)[0]
        return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]

    return choose


#: The bi-encoders read: None = the packaged MiniLM; --encoder adds a folder's.
ENCODERS: dict[str | None, Encoder | None] = {None: None}
Source = tuple[str | None, str]  # (encoder folder or None, relevance)
Setting = tuple[Source, Choose]


def candidates_of(topic: Topic, source: Source = (None, "sentences")) -> Candidates:
    encoder, relevance = source
    config = PrepareConfig(relevance=relevance, embeddings=True, encoder=ENCODERS[encoder])
    prepared = prepare(topic, None, config)
    return with_inputs(prepared.candidates, [SAME_POINT])


def documents(
    pools: Path, settings: dict[str, Setting], k: int = 8
) -> dict[str, list[tuple[str, int, int]]]:
    """Setting -> (corpus, context nuggets, nuggets) per answerable question, ``k`` passages
    chosen of each pool."""
    rows: dict[str, list[tuple[str, int, int]]] = {name: [] for name in settings}
    for corpus in CORPORA:
        for question in questions_of(corpus):
            if not question.nuggets:
                continue
            record = json.loads((pools / f"{question.id}.json").read_text(encoding="utf-8"))
            if "passages" not in record:
                raise SystemExit(f"{pools}: {question.id}.json is not a context-stage file")
            passages = tuple(RunPassage.model_validate(p).to_passage() for p in record["passages"])
            topic = Topic(query_id=question.id, query=question.question, passages=passages,
                          aspects=())  # fmt: skip
            ready = {key: candidates_of(topic, key) for key, _ in settings.values()}
            for name, (key, choose) in settings.items():
                ids = [passages[i].id for i in choose(ready[key], k)]
                verdicts = check_answer(question, list(passages), ids, []).verdicts
                rows[name].append((corpus, sum(v.in_context for v in verdicts), len(verdicts)))
    return rows


def debates(spec: str, settings: dict[str, Setting]) -> dict[str, float]:
    """Setting -> mean alpha-nDCG@10 over the topics of ``spec`` (``+`` joins splits)."""
    name, splits = spec.split(":")
    topics = [t for split in splits.split("+") for t in load_dataset(f"{name}:{split}")]
    judgments = Judgments.from_topics(topics)
    runs: dict[str, dict[str, list[str]]] = {s: {} for s in settings}
    for topic in topics:
        ready = {key: candidates_of(topic, key) for key, _ in settings.values()}
        for setting, (key, choose) in settings.items():
            chosen = choose(ready[key], 10)
            runs[setting][topic.query_id] = [topic.passages[i].id for i in chosen]
    return {
        s: float(next(iter(evaluate(judgments, run, ["alpha-nDCG@10"]).means().values())))
        for s, run in runs.items()
    }


def recall(rows: Sequence[tuple[str, int, int]], corpus: str | None = None) -> float:
    picked = [r for r in rows if corpus is None or r[0] == corpus]
    return sum(r[1] for r in picked) / max(1, sum(r[2] for r in picked))


def paired_ci(
    rows: Sequence[tuple[str, int, int]], base: Sequence[tuple[str, int, int]]
) -> tuple[float, float, float]:
    """Mean per-question recall difference and its 95% bootstrap interval (seed 0)."""
    diff = np.array([a[1] / a[2] - b[1] / b[2] for a, b in zip(rows, base, strict=True)])
    interval = bootstrap_ci(diff)
    return float(diff.mean()), interval.low, interval.high


def leave_one_out(
    docs: dict[str, list[tuple[str, int, int]]], debate: dict[str, dict[str, float]]
) -> None:
    """Hold out each corpus (the document corpora and the debate sets) in turn; on the others,
    score each setting by its mean change relative to the first setting, each corpus on its own
    figure; choose the best (ties to the first); print the held-out corpus's figure."""
    first = next(iter(docs))
    figure = {
        name: {
            **{c: recall(docs[name], c) for c in CORPORA},
            **{spec: d[name] for spec, d in debate.items() if name in d},
        }
        for name in docs
    }
    corpora = list(figure[first])
    names = [n for n in docs if set(figure[n]) == set(corpora)]
    for held in corpora:
        train = [c for c in corpora if c != held]

        def change(name: str, train: list[str] = train) -> float:
            return float(np.mean([figure[name][c] / figure[first][c] - 1 for c in train]))

        best = max(names, key=lambda n: (round(change(n), 9), n == first))
        print(
            f"leave {held} out: choose {best} ({change(best):+.3f} on the others); "
            f"{held} {figure[best][held]:.3f} ({first} {figure[first][held]:.3f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pools", type=Path, required=True,
                        help="a context-stage run folder of bench_answer_nuggets.py")  # fmt: skip
    parser.add_argument("--selectors", nargs="*", default=list(SELECTORS))
    parser.add_argument("--debates", nargs="*", default=["argkp2021:train+dev", "perspectrum:dev"])
    parser.add_argument(
        "--encoder", help="also every setting under this sentence-transformers folder's vectors"
    )
    parser.add_argument(
        "--cross-encoders",
        nargs="*",
        default=[],
        help="cross-encoder folders (the shipped coverage-minilm, a stage-3 export) to rank "
        "documents by their probability for the question, with and without titles",
    )
    parser.add_argument("--relevance", choices=["sentences", "dense"], default="sentences")
    parser.add_argument("--k", type=int, default=8, help="passages chosen of each pool")
    parser.add_argument(
        "--encoder-relevance",
        choices=["sentences", "dense"],
        help="the --encoder settings' relevance (default: --relevance)",
    )
    args = parser.parse_args()
    shipped: Source = (None, args.relevance)
    settings: dict[str, Setting] = {s: (shipped, selector_choice(s)) for s in args.selectors}
    if args.encoder:
        ENCODERS[args.encoder] = Encoder(args.encoder)
        name = Path(args.encoder).name
        source: Source = (args.encoder, args.encoder_relevance or args.relevance)
        settings.update(
            {f"{s} @ {name}, {source[1]}": (source, selector_choice(s)) for s in args.selectors}
        )
    rerank: dict[str, Setting] = {
        f"cross-encoder {Path(m).name}{', titles' if h else ''}": (
            shipped,
            cross_encoder_choice(m, h),
        )
        for m in args.cross_encoders
        for h in (None, "title")
    }
    docs = documents(args.pools, {**settings, **rerank}, args.k)
    debate = {spec: debates(spec, settings) for spec in args.debates}
    first = next(iter(settings))
    header = ["setting", "documents", *(c for c in CORPORA), f"paired vs {first}", *debate]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in [*settings, *rerank]:
        mean, low, high = paired_ci(docs[name], docs[first])
        cells = [
            name,
            f"{recall(docs[name]):.3f}",
            *(f"{recall(docs[name], c):.2f}" for c in CORPORA),
            f"{mean:+.3f} ({low:+.3f}..{high:+.3f})",
            *(f"{d[name]:.3f}" if name in d else "-" for d in debate.values()),
        ]
        print("| " + " | ".join(cells) + " |")
    print(f"documents: context nugget recall of {args.k} passages; debates: alpha-nDCG@10 of 10.")
    if debate:
        leave_one_out({n: docs[n] for n in settings}, debate)


if __name__ == "__main__":
    main()
