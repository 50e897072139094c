"""The coverage cross-encoder: a tiny real model trained here, then used as an estimator."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from covrag.cli import main
from covrag.coverage import CrossEncoderCoverage, EmbeddingCoverage, cross_encoder
from covrag.errors import ConfigError, DataError
from covrag.types import Aspect, Passage, Topic
from covrag_lab.cli import main as lab_main
from covrag_lab.errors import TrainingError
from covrag_lab.train import coverage as coverage_training
from covrag_lab.train.calibrate import best_f1_threshold, roc_auc
from covrag_lab.train.coverage import TrainConfig, shaping_settings, train_cross_encoder
from covrag_lab.train.pairs import Pair, dataset_pairs, topic_pairs
from deadline_support import assert_stops_at_a_check, checks_made

pytestmark = pytest.mark.model

# two passages, each covering one of two aspects: a task a few steps of training learn
CAR_PAIRS = [
    Pair("Cars pollute the air in cities.", "pollution", 1, "q"),
    Pair("Car bans hurt local shops.", "pollution", 0, "q"),
    Pair("Car bans hurt local shops.", "economy", 1, "q"),
    Pair("Cars pollute the air in cities.", "economy", 0, "q"),
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pairs = CAR_PAIRS * 8
    out = tmp_path_factory.mktemp("ce")
    card = train_cross_encoder({"inline": pairs}, out, TrainConfig(batch_size=8, epochs=1.0))
    assert card.steps == 4 and card.train_pairs == {"inline": 32}
    assert card.train_roc_auc is not None  # recorded; too few steps for the check to judge
    return out


def topic() -> Topic:
    passages = (
        Passage("p1", "Cars pollute the air in cities."),
        Passage("p2", "Car bans hurt local shops. " + "They lose customers every day. " * 30),
        Passage("p3", "Cars pollute the air in cities."),
    )
    aspects = (Aspect("a1", "pollution"), Aspect("a2", "economy"))
    return Topic("q", "Should cities ban cars?", passages, aspects)


def test_estimator_scores_unique_pairs_once_and_caches(tiny_model: Path) -> None:
    estimator = CrossEncoderCoverage(model=str(tiny_model), threshold=0.5, max_length=32)
    first = estimator.estimate(topic())
    assert first.shape == (3, 2)
    assert first.pairs_scored == 4  # p3 repeats p1's text: its pairs are scored once
    assert first.truncated_pairs == 2  # p2 is longer than 32 tokens with either aspect
    assert np.allclose(first.probs[0], first.probs[2])
    again = estimator.estimate(topic())
    assert again.pairs_scored == 0 and np.allclose(again.probs, first.probs)
    assert repr(estimator).startswith("cross-encoder(model=")


def test_threshold_comes_from_the_training_card(tiny_model: Path) -> None:
    card = json.loads((tiny_model / "training_card.json").read_text())
    card["threshold"] = 0.35
    (tiny_model / "training_card.json").write_text(json.dumps(card))
    estimator = CrossEncoderCoverage(model=str(tiny_model))
    assert estimator.resolved_threshold() == 0.35


def test_question_worded_aspects_get_the_cards_question_threshold(tiny_model: Path) -> None:
    path = tiny_model / "training_card.json"
    saved = path.read_text()
    card = json.loads(saved)
    card["threshold"], card["question_threshold"] = 0.8, 0.3
    path.write_text(json.dumps(card))
    try:
        aspects = (Aspect("s", "pollution"), Aspect("q", "Do cars pollute the air?"))
        asked = Topic("q", "Should cities ban cars?", topic().passages, aspects)
        matrix = CrossEncoderCoverage(model=str(tiny_model)).estimate(asked)
        assert matrix.threshold == 0.8 and matrix.aspect_thresholds == (0.8, 0.3)
        assert (matrix.covered == (matrix.probs >= np.array([0.8, 0.3]))).all()
        assert matrix.threshold_text() == "0.8 (0.3 for q)"
        # A threshold the user gives holds for every aspect, unless they give both.
        given = CrossEncoderCoverage(model=str(tiny_model), threshold=0.5).estimate(asked)
        assert given.aspect_thresholds is None and given.threshold_text() == "0.5"
        both = CrossEncoderCoverage(model=str(tiny_model), threshold=0.5, question_threshold=0.2)
        assert both.estimate(asked).aspect_thresholds == (0.5, 0.2)
        # Statements only, or questions only: one threshold for the matrix.
        statements = CrossEncoderCoverage(model=str(tiny_model)).estimate(topic())
        assert statements.aspect_thresholds is None and statements.threshold == 0.8
        questions = Topic("q", "Q?", topic().passages, aspects[1:])
        alone = CrossEncoderCoverage(model=str(tiny_model)).estimate(questions)
        assert alone.aspect_thresholds is None and alone.threshold == 0.3
        with pytest.raises(ValueError, match="question_threshold must lie in"):
            CrossEncoderCoverage(question_threshold=1.5)
    finally:
        path.write_text(saved)


def test_pairs_from_the_bundled_data() -> None:
    from covrag.data import load_dataset

    argkp = load_dataset("argkp2021:dev")[0]
    pairs = topic_pairs(argkp)
    labelled = sum(len(v) for v in argkp.labels.values())
    stance = {a.id: a.metadata["stance"] for a in argkp.aspects}
    negatives = sum(
        len(
            argkp.non_labels.get(p.id, frozenset())
            | {a for a, s in stance.items() if s != p.metadata["stance"]}
        )
        for p in argkp.passages
    )
    assert sum(p.label for p in pairs) == labelled and len(pairs) == labelled + negatives
    assert negatives > sum(len(v) for v in argkp.non_labels.values())  # cross-stance added
    perspectrum = load_dataset("perspectrum:dev")
    pairs = dataset_pairs(perspectrum[:5], max_negatives_per_positive=1.0)
    assert all(p.passage.strip() != p.aspect.strip() for p in pairs if p.label == 1)
    assert sum(1 - p.label for p in pairs) <= sum(p.label for p in pairs) + 5


def test_roc_auc_and_threshold() -> None:
    labels = [1, 1, 0, 0, 1]
    scores = np.array([0.9, 0.8, 0.3, 0.8, 0.1])
    assert roc_auc(labels, scores) == pytest.approx((2 + 1.5 + 0) / 6)
    threshold, f1 = best_f1_threshold([1, 0], np.array([0.7, 0.2]))
    assert f1 == 1.0 and 0.2 < threshold <= 0.7


@pytest.mark.slow  # about 90 s: trains, calibrates and exports a cross-encoder
def test_train_coverage_cli_end_to_end(tmp_path: Path, write_jsonl) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    from covrag.data import load_dataset
    from covrag.data.jsonl import topic_to_record

    def sliced(name: str, n: int) -> str:
        topic = load_dataset(name)[0]
        small = dataclasses.replace(topic, passages=topic.passages[:n])
        return str(write_jsonl([topic_to_record(small)], name=f"{name.replace(':', '-')}.jsonl"))

    train, dev = sliced("argkp2021:train", 60), sliced("argkp2021:dev", 40)
    out = tmp_path / "model"
    onnx = tmp_path / "onnx"
    args = ["train", "coverage", "--datasets", train, "--dev", dev, "--out", str(out)]
    assert lab_main([*args, "--onnx-out", str(onnx)]) == 0
    assert (onnx / "model.int8.onnx").exists() and (onnx / "training_card.json").exists()
    card = json.loads((out / "training_card.json").read_text())
    assert card["steps"] >= 1 and 0 < card["threshold"] < 1
    assert 0 <= card["dev"][dev]["roc_auc"] <= 1
    run = tmp_path / "run.trec"
    coverage = f"cross-encoder(model={str(out)!r})"
    args = ["select", "--dataset", dev, "--selector", "greedy-coverage", "--coverage", coverage]
    assert main([*args, "--k", "3", "--out", str(run)]) == 0
    assert len(run.read_text().splitlines()) == 3


def test_int8_onnx_export_scores_like_the_torch_model(tiny_model: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from covrag.coverage.onnx_model import ONNX_FILE
    from covrag_lab.train.onnx_export import export_onnx

    folder = tmp_path / "onnx"
    assert export_onnx(tiny_model, folder).name == ONNX_FILE
    assert (folder / ONNX_FILE).stat().st_size < 30_000_000  # int8: a quarter of fp32's 90 MB
    torch_scores = CrossEncoderCoverage(model=str(tiny_model), threshold=0.5).estimate(topic())
    onnx_est = CrossEncoderCoverage(model=str(folder), threshold=0.5, max_length=32)
    onnx_scores = onnx_est.estimate(topic())
    assert np.allclose(onnx_scores.probs, torch_scores.probs, atol=0.03)
    assert onnx_scores.truncated_pairs == 2
    from covrag.coverage.cross_encoder import _scorer

    assert _scorer(str(folder), 64, 32).backend == "onnxruntime"


def test_per_row_and_static_int8_score_a_pair_the_same_in_any_batch(
    tiny_model: Path, tmp_path: Path
) -> None:
    pytest.importorskip("onnx")
    from covrag.coverage.onnx_model import ONNX_FILE, OnnxPairScorer
    from covrag_lab.train.onnx_export import export_onnx

    pair = ("Cars pollute the air in cities.", "pollution")
    longer = ("Car bans hurt local shops. " + "They lose customers every day. " * 6, "economy")
    calibration = [pair, longer, ("Car bans hurt local shops.", "pollution")] * 4
    found = {}
    for kind, pairs, per_row in (
        ("row", None, True),
        ("dynamic", None, False),
        ("static", calibration, True),
    ):
        export_onnx(tiny_model, tmp_path / kind, calibration=pairs, per_row=per_row)
        scorer = OnnxPairScorer(tmp_path / kind, batch_size=8, threads=1)
        alone = scorer.predict([pair])[0]
        # the same pair padded beside longer ones, and in a batch of its own
        batched = scorer.predict([pair, longer, longer])[0]
        found[kind] = (alone, abs(alone - batched))
    torch_estimator = CrossEncoderCoverage(model=str(tiny_model))
    torch_score = torch_estimator.estimate(topic()).probs[0, 0]
    for kind in ("row", "static"):  # the batch and its padding make no difference
        assert found[kind][1] < 1e-6, kind
    for kind in found:
        assert abs(found[kind][0] - torch_score) < 0.05, kind
    import onnx

    ops = {n.op_type for n in onnx.load(str(tmp_path / "row" / ONNX_FILE)).graph.node}
    assert "DynamicQuantizeLinear" not in ops and "MatMulIntegerToFloat" in ops
    ops = {n.op_type for n in onnx.load(str(tmp_path / "dynamic" / ONNX_FILE)).graph.node}
    assert "DynamicQuantizeLinear" in ops
    for kind in ("row", "dynamic"):  # weights stored as uint8: exact on every x86 CPU
        assert _product_weight_types(tmp_path / kind / ONNX_FILE) == {"UINT8"}, kind


def _product_weight_types(model_file: Path) -> set[str]:
    """The element types of the weights of a model's integer matrix products."""
    import onnx

    model = onnx.load(str(model_file))
    types = {i.name: onnx.TensorProto.DataType.Name(i.data_type) for i in model.graph.initializer}
    products = ("MatMulInteger", "MatMulIntegerToFloat")
    return {types[n.input[1]] for n in model.graph.node if n.op_type in products}


def test_the_shipped_model_multiplies_uint8_weights() -> None:
    pytest.importorskip("onnx")
    from covrag.coverage.cross_encoder import default_model_path
    from covrag.coverage.onnx_model import ONNX_FILE

    assert _product_weight_types(Path(default_model_path()) / ONNX_FILE) == {"UINT8"}


def test_uint8_weights_make_an_int8_product_exact_on_any_cpu() -> None:
    # On x86 CPUs without VNNI, ONNX Runtime's uint8 x int8 product saturates for weights beyond
    # +-64 (benchmarks/int8_exactness.py); stored as uint8, the same weights give the exact
    # integer product on every CPU.
    pytest.importorskip("onnx")
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from covrag_lab.train.onnx_rewrite import unsigned_weights

    rng = np.random.default_rng(0)
    weights = rng.integers(-127, 128, size=(64, 8)).astype(np.int8)
    weights[:, 0] = 127
    scales = rng.uniform(0.5, 2.0, size=8).astype(np.float32)
    inits = [
        numpy_helper.from_array(weights, "w"),
        numpy_helper.from_array(np.array(1.0, np.float32), "a_scale"),
        numpy_helper.from_array(scales, "w_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "a_zero"),
        numpy_helper.from_array(np.zeros(8, np.int8), "w_zero"),
    ]
    inputs = ["a", "w", "a_scale", "w_scale", "a_zero", "w_zero"]
    node = helper.make_node("MatMulIntegerToFloat", inputs, ["y"], domain="com.microsoft")
    graph = helper.make_graph(
        [node],
        "product",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [None, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])],
        inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    assert unsigned_weights(model) == 1
    assert unsigned_weights(model) == 0  # already uint8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for a in (np.full((4, 64), 255), rng.integers(0, 256, size=(4, 64))):
        exact = (a - 128) @ weights.astype(np.int64) * scales
        (got,) = session.run(None, {"a": a.astype(np.uint8)})
        np.testing.assert_allclose(got, exact, rtol=1e-6)


@pytest.fixture(scope="module")
def tiny_mpnet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small randomly initialised MPNet cross-encoder (:func:`model_support.tiny_mpnet`)."""
    from model_support import tiny_mpnet as build

    return build(tmp_path_factory.mktemp("mpnet"), "classifier")


def test_an_mpnet_cross_encoder_exports_with_its_own_inputs(
    tiny_mpnet: Path, tmp_path: Path
) -> None:
    pytest.importorskip("onnx")
    import onnx

    from covrag.coverage.onnx_model import ONNX_FILE, OnnxPairScorer
    from covrag_lab.train.onnx_export import export_onnx

    torch_probs = CrossEncoderCoverage(model=str(tiny_mpnet))
    expected = torch_probs.estimate(topic()).probs
    for kind, quantize in (("fp32", False), ("int8", True)):
        model_file = export_onnx(tiny_mpnet, tmp_path / kind, quantize=quantize)
        inputs = [i.name for i in onnx.load(str(model_file)).graph.input]
        assert inputs == ["input_ids", "attention_mask"], kind
        if not quantize:  # the scorer reads the first *.onnx file: keep the fp32 one alone
            assert model_file.name != ONNX_FILE
        scorer = OnnxPairScorer(tmp_path / kind, batch_size=8, threads=1)
        got = scorer.predict([(p.text, a.text) for p in topic().passages for a in topic().aspects])
        atol = 1e-5 if kind == "fp32" else 0.02
        np.testing.assert_allclose(got.reshape(expected.shape), expected, atol=atol, err_msg=kind)


def test_per_row_scales_refuse_a_graph_they_do_not_know(tiny_model: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    import onnx

    from covrag.coverage.onnx_model import ONNX_FILE
    from covrag.errors import ConfigError
    from covrag_lab.train.onnx_export import export_onnx
    from covrag_lab.train.onnx_rewrite import per_row_activations

    export_onnx(tiny_model, tmp_path, per_row=False)
    model = onnx.load(str(tmp_path / ONNX_FILE))
    products = {n.output[0] for n in model.graph.node if n.op_type == "MatMulInteger"}
    cast = next(n for n in model.graph.node if n.op_type == "Cast" and n.input[0] in products)
    cast.op_type = "Identity"  # an int8 product whose result is not cast to float
    del cast.attribute[:]
    with pytest.raises(ConfigError, match="quantize_dynamic"):
        per_row_activations(model)


def _weights(folder: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(folder / "model.safetensors"))


def test_an_interrupted_training_run_resumes_to_the_same_model(tmp_path: Path) -> None:
    pairs = CAR_PAIRS * 6
    config = TrainConfig(batch_size=4, epochs=1.0, checkpoint_every=2)
    whole = train_cross_encoder({"inline": pairs}, tmp_path / "whole", config)

    class Stop(Exception):
        pass

    def stop_at_step_5(step: int, total: int, loss: float) -> None:
        if step == 5:
            raise Stop

    out = tmp_path / "resumed"
    with pytest.raises(Stop):
        train_cross_encoder({"inline": pairs}, out, config, progress=stop_at_step_5)
    assert (tmp_path / "resumed.checkpoint" / "state.pt").is_file() and not out.exists()
    with pytest.raises(DataError, match="other training pairs or settings"):
        train_cross_encoder({"inline": pairs[:-1]}, out, config)
    card = train_cross_encoder({"inline": pairs}, out, config)
    assert card.steps == whole.steps == 6
    assert card.notes == ["resumed from the checkpoint at step 4"]
    assert not (tmp_path / "resumed.checkpoint").exists()
    expected, got = _weights(tmp_path / "whole"), _weights(out)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=1e-6, err_msg=name)


def test_a_collapsed_run_writes_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At a learning rate of 1 the model ends scoring every pair alike (ROC-AUC 0.5 on its own
    # training pairs): a run that looks finished but learned nothing.
    monkeypatch.setattr(coverage_training, "CHECKED_STEPS", 20)
    pairs = CAR_PAIRS * 20  # 20 steps of 4
    config = TrainConfig(batch_size=4, learning_rate=1.0, checkpoint_every=5)
    out = tmp_path / "model"
    out.mkdir()
    (out / "config.json").write_text("{}")  # an earlier model there is kept
    with pytest.raises(TrainingError, match=r"after 20 steps .* ROC-AUC 0\.500 .* >= 0\.55"):
        train_cross_encoder({"inline": pairs}, out, config)
    assert [p.name for p in out.iterdir()] == ["config.json"]
    assert (out / "config.json").read_text() == "{}"
    assert not (tmp_path / "model.checkpoint").exists()  # resuming it would end the same
    # With the check off, the same run is written and its card shows what the check saw.
    unchecked = replace(config, min_train_auc=0)
    card = train_cross_encoder({"inline": pairs}, tmp_path / "off", unchecked)
    assert card.train_roc_auc is not None and card.train_roc_auc < 0.55
    # The check is no part of what shapes a run: checkpoints and fold caches still match.
    assert shaping_settings(unchecked) == shaping_settings(config)
    # A run shorter than the checked length is not judged.
    monkeypatch.setattr(coverage_training, "CHECKED_STEPS", 21)
    assert train_cross_encoder({"inline": pairs}, tmp_path / "short", config).steps == 20
    with pytest.raises(ConfigError, match="min_train_auc must lie in"):
        TrainConfig(min_train_auc=1.5)


def test_bf16_training_learns_the_same_task_and_is_a_setting_of_its_own(tmp_path: Path) -> None:
    pairs = CAR_PAIRS * 8
    config = TrainConfig(batch_size=8, epochs=3.0, precision="bf16", checkpoint_every=0)
    card = train_cross_encoder({"inline": pairs}, tmp_path / "bf16", config)
    assert card.config["precision"] == "bf16"
    estimator = CrossEncoderCoverage(model=str(tmp_path / "bf16"), threshold=0.5)
    probs = estimator.estimate(topic()).probs
    # rows: pollution passage, shops passage, pollution passage again; columns: pollution, economy
    assert probs[0, 0] > probs[1, 0] and probs[1, 1] > probs[0, 1]
    # bf16 is part of what shapes a run (its checkpoints and fold caches are its own); fp32 is
    # left out so that those made before the setting existed still match
    assert shaping_settings(config)["precision"] == "bf16"
    assert "precision" not in shaping_settings(TrainConfig())
    with pytest.raises(ConfigError, match="precision must be one of fp32, bf16, not 'fp16'"):
        TrainConfig(precision="fp16")


def test_answer_sketches_are_scored_and_each_aspect_keeps_its_best(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cross_encoder, "ANSWERS_GATE", 0.0)  # every sketch counts
    estimator = CrossEncoderCoverage(model=str(tiny_model), threshold=0.5)
    plain = topic()
    # each aspect also worded as the other one: its best column is the higher of the two
    swapped = Topic(
        plain.query_id,
        plain.query,
        plain.passages,
        (
            Aspect("a1", "pollution", answers=("economy",)),
            Aspect("a2", "economy", answers=("pollution", "economy")),
        ),
    )
    alone = estimator.estimate(plain).probs
    matrix = estimator.estimate(swapped)
    best = np.maximum(alone[:, 0], alone[:, 1])
    assert np.allclose(matrix.probs, np.column_stack([best, best]))
    assert matrix.aspect_ids == ("a1", "a2") and matrix.shape == (3, 2)
    cosine = EmbeddingCoverage(threshold=0.0)
    assert np.allclose(
        cosine.estimate(swapped).probs.max(axis=1), cosine.estimate(plain).probs.max(axis=1)
    )


def test_a_sketch_counts_only_when_the_model_judges_it_to_answer_its_aspect(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = topic()
    sketch = "Car bans hurt local shops."
    sketched = Topic(
        plain.query_id,
        plain.query,
        plain.passages,
        (Aspect("a1", "pollution", answers=(sketch,)), plain.aspects[1]),
    )
    model = str(tiny_model)
    estimator = CrossEncoderCoverage(model=model, threshold=0.5)
    alone = estimator.estimate(plain).probs
    # the sketch read as a passage against its own aspect
    judged = float(
        estimator.estimate(Topic("c", "", (Passage("s", sketch),), plain.aspects[:1])).probs[0, 0]
    )
    as_aspect = estimator.estimate(Topic("q", "", plain.passages, (Aspect("a1", sketch),)))
    # the gate is a module constant (0.5, chosen by CV); set here on either side of the judgment
    monkeypatch.setattr(cross_encoder, "ANSWERS_GATE", judged - 1e-6)
    assert np.allclose(
        estimator.estimate(sketched).probs[:, 0], np.maximum(alone[:, 0], as_aspect.probs[:, 0])
    )
    monkeypatch.setattr(cross_encoder, "ANSWERS_GATE", judged + 1e-6)
    assert np.allclose(estimator.estimate(sketched).probs, alone)  # as if there were no sketch
    assert not np.allclose(as_aspect.probs[:, 0], alone[:, 0])  # so the two cases differ


def test_sentence_transformers_scoring_checks_a_deadline_between_chunks(tiny_model: Path) -> None:
    from covrag.coverage.cross_encoder import PairScorer

    scorer = PairScorer(str(tiny_model), batch_size=2, max_length=32, cache_size=100)
    assert scorer.backend == "sentence-transformers"
    pairs = [(f"Cars pollute the air in city {i}.", "pollution") for i in range(20)]
    plain = scorer._predict(pairs, scorer.lengths(pairs))
    timed, checks = checks_made(lambda: scorer._predict(pairs, scorer.lengths(pairs)))
    np.testing.assert_allclose(timed, plain, atol=1e-6)
    assert checks == 3  # chunks of 4 batches of 2 pairs: 8 + 8 + 4
    assert_stops_at_a_check(lambda: scorer.score(pairs))
    assert not scorer._cache  # nothing half-scored was kept


def test_the_shipped_model_scores_an_aspect_longer_than_its_window() -> None:
    """A text in the aspect's place past max_length (a long answer sentence the support judge
    reads) is cut from the longer text instead of failing the whole batch."""
    judge = CrossEncoderCoverage()
    long_one = Aspect("a", "Uniforms cost parents money every year. " * 80)
    topic = Topic(
        "t", "q", (Passage("p", "Uniforms cost money."),), (long_one, Aspect("b", "Cost?"))
    )
    probs = judge.estimate(topic).probs
    assert probs.shape == (1, 2) and np.all((probs >= 0) & (probs <= 1))
