"""The "same point" bi-encoder: training batches and loss, int8 ONNX export, selectors using it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.pipeline import with_inputs
from covrag.selectors import parse_selector
from covrag.selectors.base import Candidates, Input
from covrag.types import Aspect, Budget, Passage, Topic
from covrag_lab.train.same_point import (
    SamePointConfig,
    contrastive_loss,
    draw_batches,
    positives,
)
from deadline_support import assert_stops_at_a_check, checks_made

# Two points of one topic, two passages each, and one passage that makes neither.
TEXTS = (
    "School uniforms cost families a lot of money.",
    "Buying uniforms is expensive for parents.",
    "Uniforms stop children from expressing themselves.",
    "Kids lose their individuality when everyone dresses the same.",
    "The weather was sunny all week.",
)


def uniform_topic() -> Topic:
    passages = tuple(Passage(f"p{i}", text) for i, text in enumerate(TEXTS))
    aspects = (Aspect("cost", "uniforms are costly"), Aspect("self", "uniforms limit expression"))
    labels = {f"p{i}": frozenset({a}) for i, a in enumerate(("cost", "cost", "self", "self"))}
    return Topic("uniforms", "Should schools require uniforms?", passages, aspects, labels=labels)


def test_positives_are_different_passages_sharing_an_aspect() -> None:
    labels = uniform_topic().label_matrix()
    pos = positives(labels)
    assert pos[0, 1] and pos[1, 0] and pos[2, 3]
    assert not pos[0, 2] and not pos[0, 0] and not pos[4].any() and not pos[:, 4].any()


def test_batches_hold_one_topic_and_a_positive_pair() -> None:
    other = Topic("other", "q", (Passage("x", "alone"), Passage("y", "apart")), (Aspect("a", "a"),))
    config = SamePointConfig(batch_size=8, max_steps=5)
    batches = draw_batches({"inline": [uniform_topic(), other]}, config)
    assert len(batches) == 5  # the topic with no positive pair gives no batch
    assert all(sorted(b.texts) == sorted(TEXTS) for b in batches)
    with pytest.raises(ConfigError, match="no pair"):
        draw_batches({"inline": [other]}, config)


def test_batches_with_aspects_pair_each_key_point_with_its_passages() -> None:
    config = SamePointConfig(batch_size=3, max_steps=4, with_aspects=True)
    for batch in draw_batches({"inline": [uniform_topic()]}, config):
        assert batch.texts[-2:] == ("uniforms are costly", "uniforms limit expression")
        assert batch.labels[-2:].tolist() == [[True, False], [False, True]]
        pos = positives(batch.labels)
        for i, row in enumerate(batch.labels[:-2]):  # a passage is a positive of its key point
            assert pos[i, -2] == row[0] and pos[i, -1] == row[1]
        assert not pos[-2, -1]  # two key points are never a pair


def test_the_loss_is_lower_when_same_point_passages_are_closer() -> None:
    torch = pytest.importorskip("torch")
    labels = uniform_topic().label_matrix()
    good = torch.tensor([[1.0, 0], [1, 0.1], [0, 1], [0.1, 1], [-1, -1]])
    bad = torch.tensor([[1.0, 0], [0, 1], [1, 0.1], [0.1, 1], [-1, -1]])
    unit = torch.nn.functional.normalize
    assert contrastive_loss(unit(good, dim=-1), labels, 0.1) < contrastive_loss(
        unit(bad, dim=-1), labels, 0.1
    )


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two steps from the packaged MiniLM, exported to int8 ONNX (a real, small model)."""
    pytest.importorskip("onnx")
    from covrag_lab.train.same_point import export_encoder_onnx, train_same_point

    out = tmp_path_factory.mktemp("same-point")
    config = SamePointConfig(batch_size=8, max_steps=2, max_length=32)
    card = train_same_point({"inline": [uniform_topic()]}, out / "model", config)
    assert card.steps == 2 and card.train_topics == {"inline": 1} and len(card.losses) == 1
    export_encoder_onnx(out / "model", out / "onnx")
    return out


@pytest.mark.model
def test_int8_onnx_embeds_like_the_torch_model(tiny_model: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from covrag.coverage.onnx_encoder import ENCODER_FILE, OnnxEncoder

    assert (tiny_model / "onnx" / ENCODER_FILE).stat().st_size < 25_000_000
    assert (tiny_model / "onnx" / "training_card.json").exists()
    torch_vectors = SentenceTransformer(str(tiny_model / "model"), device="cpu").encode(
        list(TEXTS), normalize_embeddings=True
    )
    onnx_vectors = OnnxEncoder(tiny_model / "onnx").encode(TEXTS)
    assert np.allclose(np.linalg.norm(onnx_vectors, axis=1), 1.0)
    # the stated tolerance: cosines within 0.03 of torch's (int8 weights and activations)
    similarity = onnx_vectors @ onnx_vectors.T
    assert np.abs(similarity - torch_vectors @ torch_vectors.T).max() < 0.03
    assert np.min(np.sum(onnx_vectors * torch_vectors, axis=1)) > 0.99


@pytest.mark.model
def test_an_mpnet_bi_encoder_exports_without_token_types(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    import onnx
    from sentence_transformers import SentenceTransformer

    from covrag.coverage.onnx_encoder import OnnxEncoder
    from covrag_lab.train.same_point import export_encoder_onnx
    from model_support import tiny_mpnet

    model = tiny_mpnet(tmp_path / "mpnet", "encoder")
    model_file = export_encoder_onnx(model, tmp_path / "onnx")
    inputs = [i.name for i in onnx.load(str(model_file)).graph.input]
    assert inputs == ["input_ids", "attention_mask"]
    torch_vectors = SentenceTransformer(str(model), device="cpu").encode(list(TEXTS))
    onnx_vectors = OnnxEncoder(tmp_path / "onnx").encode(TEXTS)
    # the same tolerance as MiniLM's: cosines within 0.03 of torch's
    similarity = onnx_vectors @ onnx_vectors.T
    assert np.abs(similarity - torch_vectors @ torch_vectors.T).max() < 0.03
    assert np.min(np.sum(onnx_vectors * torch_vectors, axis=1)) > 0.99


@pytest.mark.model
def test_a_large_export_keeps_its_weights_in_shards(tiny_model: Path, tmp_path: Path) -> None:
    import shutil

    from covrag.coverage.onnx_encoder import ENCODER_FILE, OnnxEncoder
    from covrag_lab.train.same_point import shard_weights

    folder = tmp_path / "sharded"
    shutil.copytree(tiny_model / "onnx", folder)
    whole = OnnxEncoder(folder).encode(TEXTS)
    # the largest tensor (the 30,522 x 384 word embeddings, uint8) is 11.7 MB
    files = shard_weights(folder / ENCODER_FILE, limit=12_000_000)
    assert len(files) >= 2 and all(f.stat().st_size <= 12_000_000 for f in files)
    assert (folder / ENCODER_FILE).stat().st_size < 1_000_000  # the graph alone
    assert np.array_equal(OnnxEncoder(folder).encode(TEXTS), whole)
    assert shard_weights(folder / ENCODER_FILE, limit=12_000_000) == []  # small now: unchanged


@pytest.mark.model
def test_the_encoder_checks_a_deadline_between_batches(tiny_model: Path) -> None:
    from covrag.coverage.onnx_encoder import OnnxEncoder

    texts = [f"School uniforms cost money in town {i}." for i in range(10)]
    _, checks = checks_made(lambda: OnnxEncoder(tiny_model / "onnx", batch_size=4).encode(texts))
    assert checks == 3  # batches of 4 + 4 + 2
    encoder = OnnxEncoder(tiny_model / "onnx", batch_size=4)
    assert_stops_at_a_check(lambda: encoder.encode(texts))
    assert not encoder._cache  # nothing half-encoded was kept


@pytest.mark.model
def test_an_embedding_does_not_depend_on_its_batch(tiny_model: Path) -> None:
    from covrag.coverage.onnx_encoder import OnnxEncoder

    alone = OnnxEncoder(tiny_model / "onnx").encode([TEXTS[0]])
    together = OnnxEncoder(tiny_model / "onnx").encode(list(TEXTS))
    # per-row activation scales: padding and neighbours change only float rounding
    assert np.abs(alone[0] - together[0]).max() < 1e-6


@pytest.mark.model
@pytest.mark.parametrize("name", ["facility-location", "mmr", "cluster"])
def test_selectors_use_the_same_point_similarity(tiny_model: Path, name: str) -> None:
    from covrag.coverage.onnx_encoder import OnnxEncoder

    topic = uniform_topic()
    model = str(tiny_model / "onnx")
    selector = parse_selector(f"{name}(similarity='same-point', similarity_model='{model}')")
    assert "same-point" in repr(selector)
    vectors = OnnxEncoder(tiny_model / "onnx").encode(TEXTS)
    # MMR's relevance is the query cosine of the pool's embeddings; the others need none
    embeddings = vectors if name == "mmr" else None
    candidates = Candidates("q", topic.query, topic.passages, embeddings=embeddings)
    assert selector.needs("embeddings") == (name == "mmr")
    assert Input("same-point", model) in selector.reads
    with pytest.raises(ConfigError, match="computed before selecting"):
        selector.select(candidates, Budget(max_passages=2))  # selecting never loads a model
    prepared = with_inputs(candidates, [selector])  # the estimate step's model work
    assert np.array_equal(prepared.same_point[model], vectors)
    picked = selector.select(prepared, Budget(max_passages=2)).passage_ids
    assert len(picked) == 2 and len(set(picked)) == 2


def test_a_similarity_model_needs_the_same_point_similarity() -> None:
    with pytest.raises(ConfigError, match="similarity_model applies"):
        parse_selector("facility-location(similarity_model='x')")
    with pytest.raises(ConfigError, match="similarity must be one of"):
        parse_selector("mmr(similarity='coverage')")
    with pytest.raises(ConfigError, match="does not exist"):
        selector = parse_selector("cluster(similarity='same-point', similarity_model='/nope')")
        topic = uniform_topic()
        with_inputs(Candidates("q", topic.query, topic.passages), [selector])


@pytest.mark.model
@pytest.mark.parametrize("name", ["same-point-mpnet", "same-point-minilm"])
def test_the_shipped_models_load_offline_and_put_a_shared_point_closer(name: str) -> None:
    import json

    from covrag.coverage.onnx_encoder import (
        DEFAULT_SAME_POINT,
        ENCODER_FILE,
        SAME_POINT_MODELS,
        onnx_encoder,
    )

    folder = SAME_POINT_MODELS[name]
    limit = {"same-point-mpnet": 115_000_000, "same-point-minilm": 25_000_000}[name]
    sizes = [f.stat().st_size for f in folder.iterdir()]
    assert (folder / ENCODER_FILE).exists() and sum(sizes) < limit
    assert max(sizes) < 50_000_000  # no file a git host refuses or warns about
    card = json.loads((folder / "training_card.json").read_text())
    # trained on train splits only: dev topics stay unseen, test splits are never read
    assert card["train_topics"] and all(k.endswith(":train") or ":" not in k
                                        for k in card["train_topics"])  # fmt: skip
    assert onnx_encoder(name) is onnx_encoder(str(folder))  # a name is its folder, loaded once
    if name == DEFAULT_SAME_POINT:
        assert onnx_encoder(None) is onnx_encoder(name)
    vectors = onnx_encoder(name).encode(TEXTS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2] and similarity[2, 3] > similarity[1, 3]


def test_a_shipped_name_that_is_missing_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from covrag.coverage import onnx_encoder as module

    monkeypatch.setitem(module.SAME_POINT_MODELS, "same-point-mpnet", Path("/nonexistent/x"))
    with pytest.raises(ConfigError, match="does not ship with this version"):
        module.onnx_encoder("same-point-mpnet")
