"""Labelled (passage, aspect) pairs for training and calibrating coverage estimators.

Where the pairs come from, per bundled dataset:

- ArgKP: an argument and a key point its annotators matched (1) or judged non-matching (0);
  undecided pairs are left out.
- Perspectrum: a perspective and its own cluster (1), other clusters of the same claim (0), and the
  claim's judged non-relevant perspectives against every cluster (0). The aspect text of a cluster
  is its first member's text, so the pair of that member with its own cluster is left out (a copy
  teaches nothing).
- Perspectrum-evidence: a paragraph and the clusters that cite it (1), and the claim's other
  clusters (0).

Any coverage JSONL works the same way: labelled aspects are positives; ``non_aspects`` (or, when
a topic lists none, every other aspect of the topic) are negatives. Where passages and aspects
both carry a ``stance`` (ArgKP), an aspect of the other stance is also a negative: ArgKP labelled
arguments only against key points of their own stance, yet a pool mixes both stances.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from covrag.types import Topic


@dataclass(frozen=True, slots=True)
class Pair:
    passage: str
    aspect: str
    label: int
    query_id: str


def topic_pairs(topic: Topic) -> list[Pair]:
    """Positive and negative pairs of one labelled topic (see the module docstring)."""
    aspects = {a.id: a.text for a in topic.aspects}
    stances = {a.id: a.metadata.get("stance") for a in topic.aspects}
    explicit_negatives = bool(topic.non_labels)
    pairs: list[Pair] = []
    for passage in topic.passages:
        positives = topic.labels.get(passage.id, frozenset())
        if explicit_negatives:
            negatives = topic.non_labels.get(passage.id, frozenset())
            stance = passage.metadata.get("stance")
            if stance is not None:
                negatives |= {a for a, s in stances.items() if s is not None and s != stance}
        else:
            negatives = frozenset(aspects) - positives
        for aspect_id in sorted(positives):
            if aspects[aspect_id].strip() != passage.text.strip():
                pairs.append(Pair(passage.text, aspects[aspect_id], 1, topic.query_id))
        for aspect_id in sorted(negatives - positives):
            pairs.append(Pair(passage.text, aspects[aspect_id], 0, topic.query_id))
    return pairs


def dataset_pairs(
    topics: Iterable[Topic], *, max_negatives_per_positive: float | None = None, seed: int = 0
) -> list[Pair]:
    """Pairs of many topics, optionally subsampling negatives per topic to a ratio."""
    rng = np.random.default_rng(seed)
    result: list[Pair] = []
    for topic in topics:
        pairs = topic_pairs(topic)
        if max_negatives_per_positive is not None:
            positives = [p for p in pairs if p.label == 1]
            negatives = [p for p in pairs if p.label == 0]
            cap = max(1, int(round(max_negatives_per_positive * max(len(positives), 1))))
            if len(negatives) > cap:
                keep = rng.choice(len(negatives), cap, replace=False)
                negatives = [negatives[i] for i in sorted(keep)]
            pairs = positives + negatives
        result.extend(pairs)
    return result


def shuffled(pairs: Sequence[Pair], seed: int) -> list[Pair]:
    order = np.random.default_rng(seed).permutation(len(pairs))
    return [pairs[i] for i in order]
