from __future__ import annotations

from covrag.data import load_dataset
from covrag.tokens import HFTokenCounter, WhitespaceTokenCounter, default_counter, with_token_costs


def test_minilm_wordpiece_counts_without_truncation_or_specials() -> None:
    counter = default_counter()
    assert counter.count(["hello world"]) == [2]
    long_text = "word " * 1000
    assert counter.count([long_text]) == [1000]  # never truncated at 128/256
    assert counter.count([]) == []


def test_token_costs_filled_once_and_kept() -> None:
    topic = load_dataset("perspectrum-evidence:dev")[0]
    costed = with_token_costs(topic)
    assert all(p.tokens and p.tokens > 0 for p in costed.passages)
    assert with_token_costs(costed, WhitespaceTokenCounter()) is costed
    assert isinstance(default_counter(), HFTokenCounter)
