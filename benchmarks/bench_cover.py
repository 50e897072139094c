"""Retrieval with CoveR against plain MiniLM and BM25: Recall@k and StRecall@k.

Measured in docs/experiments/19-cover-retriever.md.

The corpus is every passage of the split's topics (deduplicated by id); each topic's question is
searched over all of it. Recall@k is the share of the topic's labelled passages (those answering
at least one of its aspects) in the top k; StRecall@k the share of its answered aspects that a
top-k passage answers (``covrag.evaluate``). Modes:

- ``question``: one search with the question;
- ``multi``: the question and each gold aspect searched and fused by RRF (what ``covrag ask``
  does with its sub-questions), ``depth`` = k passages per search;
- ``others-covered`` (cover only): the question, then each aspect's search being the question
  with the other aspects given as covered (``CoverRetriever.search_aspects(others_covered=True)``;
  the first run's log called this mode ``cover-aware``).

Usage::

    python benchmarks/bench_cover.py --model cover-minilm --datasets argkp2021:dev perspectrum:dev
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence

import numpy as np

from covrag.data import load_dataset
from covrag.evaluation import Judgments, evaluate
from covrag.retrieve import (
    BM25Retriever,
    CoverRetriever,
    DenseRetriever,
    IndexRetriever,
    MultiQueryRetriever,
    Ranking,
    Retriever,
    corpus_from_topics,
)
from covrag.types import Topic

Search = Callable[[Topic], Ranking]


def recall(topic: Topic, ranking: Ranking) -> float:
    relevant = {p for p, labels in topic.labels.items() if labels}
    return len(relevant & {p.id for p in ranking}) / len(relevant) if relevant else float("nan")


def modes(retriever: Retriever, k: int, cover: bool) -> dict[str, Search]:
    multi = MultiQueryRetriever(retriever, depth=k)
    found: dict[str, Search] = {
        "question": lambda t: retriever.search(t.query, k),
        "multi": lambda t: multi.search(t.query, k, aspects=t.aspects),
    }
    if cover:
        assert isinstance(retriever, CoverRetriever)
        found["others-covered"] = lambda t: retriever.search_aspects(
            t.query, t.aspects, k, depth=k, others_covered=True
        )
    return found


def measure(topics: Sequence[Topic], search: Search, k: int) -> dict[str, float]:
    started = time.perf_counter()
    runs = {t.query_id: search(t) for t in topics}
    seconds = time.perf_counter() - started
    judgments = Judgments.from_topics(topics)
    strecall = evaluate(judgments, {q: [p.id for p in r] for q, r in runs.items()}, f"StRecall@{k}")
    return {
        f"Recall@{k}": float(np.nanmean([recall(t, runs[t.query_id]) for t in topics])),
        f"StRecall@{k}": strecall.mean(f"StRecall@{k}"),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="CoveR model folder (needed for cover)")
    parser.add_argument("--retrievers", nargs="+", default=["bm25", "minilm", "cover"])
    parser.add_argument("--datasets", nargs="+", default=["argkp2021:dev", "perspectrum:dev"])
    parser.add_argument("--k", type=int, default=50)
    args = parser.parse_args()
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name in args.datasets:
        topics = load_dataset(name)
        corpus = corpus_from_topics(topics)
        makers: dict[str, Callable[[], IndexRetriever]] = {
            "bm25": BM25Retriever,
            "minilm": DenseRetriever,
            "cover": lambda: CoverRetriever(model=args.model),
        }
        for label in args.retrievers:
            retriever = makers[label]().index(corpus)
            for mode, search in modes(retriever, args.k, label == "cover").items():
                row = measure(topics, search, args.k)
                results.setdefault(name, {})[f"{label} / {mode}"] = row
                print(name, len(topics), len(corpus), label, mode, row, flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
