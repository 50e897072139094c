"""CoveR: training examples, a tiny real model trained here, used as retriever and estimator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from covrag.cli import main
from covrag.coverage import CoverCoverage, CrossEncoderCoverage, parse_estimator
from covrag.errors import ConfigError
from covrag.retrieve import CoverRetriever, cover_query, load_index
from covrag.retrieve.cover import COVERED_PREFIX, COVERED_SEPARATOR
from covrag.types import Aspect, Passage, Topic
from covrag_lab.cli import main as lab_main
from covrag_lab.train.cover import CoverConfig, cover_examples, train_cover

pytestmark = pytest.mark.model

ASPECTS = {
    "a1": "Cars pollute the air.",
    "a2": "Car bans hurt local shops.",
    "a3": "Bikes are cheaper than cars.",
}
PASSAGES = {
    "p1": ("Exhaust fumes from cars make city air dirty.", {"a1"}),
    "p2": ("Traffic smog harms children's lungs.", {"a1"}),
    "p3": ("Shops in the centre lose customers when cars are banned.", {"a2"}),
    "p4": ("Retailers report fewer sales after the car ban.", {"a2"}),
    "p5": ("A bicycle costs far less to run than a car.", {"a3"}),
    "p6": ("Cycling saves money and cuts fumes.", {"a1", "a3"}),
    "p7": ("The weather was sunny on Tuesday.", set()),
}


def topic() -> Topic:
    passages = tuple(Passage(pid, text) for pid, (text, _) in PASSAGES.items())
    aspects = tuple(Aspect(aid, text) for aid, text in ASPECTS.items())
    labels = {pid: frozenset(found) for pid, (_, found) in PASSAGES.items()}
    return Topic("q", "Should cities ban cars?", passages, aspects, labels=labels)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = CoverConfig(examples=8, batch_size=4, max_seq_length=48, threads=1)
    examples = cover_examples([topic()], 8, config)
    out = tmp_path_factory.mktemp("cover")
    card = train_cover({"inline": examples}, out, config)
    assert card.steps == 2 and card.examples["inline"]["all"] == 8
    return out


def test_cover_query_lists_the_covered_aspects() -> None:
    assert cover_query(" Q? ") == "Q?"
    assert (
        cover_query("Q?", ["a", " ", "b"]) == "Q?" + COVERED_PREFIX + "a" + COVERED_SEPARATOR + "b"
    )


def test_examples_follow_the_cover_objective() -> None:
    config = CoverConfig(examples=200, examples_per_topic=200, aspect_share=0.3, seed=3)
    examples = cover_examples([topic()], 200, config)
    assert len(examples) == 200
    labels = {text: found for text, found in PASSAGES.values()}
    by_text = {text: aid for aid, text in ASPECTS.items()}
    kinds = {e.kind for e in examples}
    assert kinds == {"coverage", "aspect"}
    for e in examples:
        if e.kind == "aspect":
            aspect = by_text[e.anchor]
            assert aspect in labels[e.positive] and aspect not in labels[e.negative]
            continue
        question, _, listed = e.anchor.partition(COVERED_PREFIX)
        assert question == "Should cities ban cars?"
        covered = {by_text[t] for t in listed.split(COVERED_SEPARATOR)}
        assert 1 <= len(covered) < len(ASPECTS)
        assert labels[e.positive] - covered  # answers an uncovered aspect
        if e.negative_kind == "redundant":
            assert labels[e.negative] and labels[e.negative] <= covered
        else:
            assert e.negative_kind == "irrelevant" and not labels[e.negative]
    assert {e.negative_kind for e in examples} == {"redundant", "other-aspect"}


def test_without_a_redundant_passage_the_negative_is_irrelevant() -> None:
    overlapping = Topic(
        "q",
        "Q?",
        (Passage("p1", "one"), Passage("p2", "two"), Passage("p3", "none")),
        (Aspect("a1", "A1"), Aspect("a2", "A2")),
        labels={"p1": frozenset({"a1", "a2"}), "p2": frozenset({"a1", "a2"}), "p3": frozenset()},
    )
    examples = cover_examples([overlapping], 20, CoverConfig(aspect_share=0.0))
    assert examples and {(e.negative, e.negative_kind) for e in examples} == {
        ("none", "irrelevant")
    }


def test_a_topic_with_one_answered_aspect_gives_no_examples() -> None:
    one = Topic(
        "q",
        "Q?",
        (Passage("p", "x"), Passage("n", "y")),
        (Aspect("a", "A"),),
        labels={"p": frozenset({"a"}), "n": frozenset()},
    )
    assert cover_examples([one], 10, CoverConfig()) == []


def test_retriever_searches_with_covered_aspects_and_round_trips(
    tiny_model: Path, tmp_path: Path
) -> None:
    passages = topic().passages
    retriever = CoverRetriever(model=str(tiny_model)).index(passages)
    plain = retriever.search("Should cities ban cars?", k=3)
    covered = retriever.search_covered("Should cities ban cars?", [ASPECTS["a1"]], k=3)
    assert len(plain) == len(covered) == 3
    assert all(p.score is not None for p in covered)
    aspects = list(topic().aspects)
    assert retriever.aspect_queries("Q?", aspects) == ("Q?", *ASPECTS.values())
    queries = retriever.aspect_queries("Q?", aspects, others_covered=True)
    assert queries[0] == "Q?" and len(queries) == 4
    assert queries[1] == cover_query("Q?", [ASPECTS["a2"], ASPECTS["a3"]])
    for others_covered in (False, True):
        pool = retriever.search_aspects("Q?", aspects, k=5, others_covered=others_covered)
        assert len(pool) == 5 and len({p.id for p in pool}) == 5
    retriever.save(tmp_path / "index")
    loaded = load_index(tmp_path / "index")
    assert isinstance(loaded, CoverRetriever)
    again = loaded.search_covered("Should cities ban cars?", [ASPECTS["a1"]], k=3)
    assert [p.id for p in again] == [p.id for p in covered]


def test_a_cover_index_needs_a_model_the_estimator_defaults_to_minilm() -> None:
    with pytest.raises(ConfigError, match="covrag-lab train cover"):
        CoverRetriever()
    assert parse_estimator("cover").estimate(topic()).probs.shape == (7, 3)  # plain MiniLM


def test_estimator_and_prefilter(tiny_model: Path) -> None:
    t = topic()
    cosine = parse_estimator(f"cover(model={str(tiny_model)!r})")
    assert isinstance(cosine, CoverCoverage)
    matrix = cosine.estimate(t)
    assert matrix.probs.shape == (7, 3) and matrix.pairs_scored == 21
    assert ((matrix.probs >= 0) & (matrix.probs <= 1)).all() and matrix.threshold == 0.5
    pre = CoverCoverage(model=str(tiny_model), rerank=2)
    cut = pre.estimate(t)
    full = CrossEncoderCoverage().estimate(t)
    assert cut.pairs_scored <= 2 * 3 and cut.threshold == full.threshold
    kept = cut.probs > 0
    assert (kept.sum(axis=0) <= 2).all()
    np.testing.assert_allclose(cut.probs[kept], full.probs[kept], atol=1e-9)
    filled = CoverCoverage(model=str(tiny_model), rerank=2, fill="cosine").estimate(t)
    assert (filled.probs[~kept] < full.threshold).all()
    assert "rerank=2" in repr(pre)


@pytest.mark.slow  # trains, indexes and searches through the CLI: three model loads
def test_cli_trains_indexes_and_searches(tmp_path: Path, write_jsonl) -> None:  # type: ignore[no-untyped-def]
    from covrag.data.jsonl import topic_to_record

    data = str(write_jsonl([topic_to_record(topic())]))
    out = tmp_path / "model"
    args = ["train", "cover", "--datasets", data, "--out", str(out), "--examples", "8"]
    assert lab_main([*args, "--batch-size", "4", "--max-seq-length", "48", "--threads", "1"]) == 0
    card = json.loads((out / "training_card.json").read_text())
    assert card["steps"] == 2 and card["config"]["examples"] == 8
    index = tmp_path / "index"
    args = ["index", "--corpus", data, "--kind", "cover", "--model", str(out), "--out", str(index)]
    assert main(args) == 0
    assert main(["search", "--index", str(index), "cars", "--covered", "pollution"]) == 0
    assert main(["index", "--corpus", data, "--kind", "bm25", "--out", str(tmp_path / "b")]) == 0
    assert main(["search", "--index", str(tmp_path / "b"), "cars", "--covered", "x"]) != 0


def test_ask_searches_a_cover_index_with_the_other_aspects_covered(tiny_model: Path) -> None:
    from covrag.pipeline.ask import retrieve_pool
    from covrag.plan import C2Query

    retriever = CoverRetriever(model=str(tiny_model)).index(topic().passages)
    aspects = topic().aspects
    queries, pooled = retrieve_pool(
        C2Query.explicit("Should cities ban cars?"), aspects, retriever, 4
    )
    assert queries == retriever.aspect_queries("Should cities ban cars?", aspects)
    assert len(pooled.passages) == 4 and pooled.aspects == aspects
