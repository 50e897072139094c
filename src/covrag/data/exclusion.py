"""Exclusion experiments on labelled datasets: mark gold aspects as ones to leave out.

A coverage-conditioned request ("... but skip the cost arguments") asks a context *not* to cover
some aspects. Labelled datasets have no such requests, so ``--exclude-aspects`` makes them: it sets
the polarity of chosen gold aspects to ``exclude``. Selectors then treat them by their ``exclude``
mode (ignore, penalize, forbid), :meth:`~covrag.evaluation.Judgments.from_topics` takes them out of
the gains, and ``Excl@k`` reports how much of a ranking still supports them.

Specs:

- ``random:N``: per topic, ``N`` of the aspects that some passage supports, drawn with a seed and
  the topic id (so ``select`` and ``eval`` given the same spec and seed mark the same ones); at
  least one supported aspect is always left wanted.
- anything else: an aspect id; every id given must name an aspect of some topic.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence

import numpy as np

from covrag.errors import ConfigError
from covrag.registry import check_seed
from covrag.types import Topic


def _random_count(spec: str) -> int | None:
    if not spec.startswith("random:"):
        return None
    value = spec.removeprefix("random:")
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"--exclude-aspects {spec!r}: expected random:N with N >= 1")
    return int(value)


def chosen_for(topic: Topic, count: int, seed: int) -> frozenset[str]:
    """The ``count`` aspects ``random:count`` excludes in ``topic`` (seeded by the topic id)."""
    supported = {a for names in topic.labels.values() for a in names}
    candidates = [a.id for a in topic.aspects if a.id in supported]
    count = min(count, len(candidates) - 1)
    if count < 1:
        return frozenset()
    rng = np.random.default_rng([seed, zlib.crc32(topic.query_id.encode("utf-8"))])
    picks = rng.choice(len(candidates), size=count, replace=False)
    return frozenset(candidates[int(i)] for i in picks)


def exclude_aspects(topics: Sequence[Topic], specs: Sequence[str], seed: int = 0) -> list[Topic]:
    """``topics`` with the aspects ``specs`` name set to polarity ``exclude``.

    Raises:
        ConfigError: a malformed ``random:N``, aspect ids no topic has, or a negative seed.
    """
    check_seed("the seed of random:N", seed)
    if not specs:
        return list(topics)
    parsed = {spec: _random_count(spec) for spec in specs}
    counts = [c for c in parsed.values() if c is not None]
    if len(counts) > 1:
        raise ConfigError("--exclude-aspects: give at most one random:N")
    ids = {spec for spec, count in parsed.items() if count is None}
    known = {a.id for t in topics for a in t.aspects}
    unknown = sorted(ids - known)
    if unknown:
        raise ConfigError(f"--exclude-aspects: no topic has the aspects {unknown[:10]}")
    result = []
    for topic in topics:
        chosen = set(ids) | (chosen_for(topic, counts[0], seed) if counts else set())
        aspects = tuple(
            dataclasses.replace(a, polarity="exclude") if a.id in chosen else a
            for a in topic.aspects
        )
        result.append(dataclasses.replace(topic, aspects=aspects))
    return result
