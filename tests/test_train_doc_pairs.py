"""Documents' coverage training pairs (covrag_lab.train.doc_pairs) and the float32 copy of the
shipped int8 model they train from (covrag_lab.train.dequantize)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from covrag.coverage.cross_encoder import CrossEncoderCoverage, PairScorer, passage_input
from covrag.data import load_dataset
from covrag.types import Aspect, Passage, Topic
from covrag_lab.train import doc_pairs as dp

RSYNC = """-L, --copy-links
    When symlinks are encountered, the item that they point to is copied."""
SCP = """-L  Limits the used bandwidth, specified in Kbit/s."""
RSYNC_OTHER = """The daemon reads its configuration from rsyncd.conf at start."""


def _p(pid: str, text: str, title: str) -> Passage:
    return Passage(pid, text, metadata={"title": title})


def test_an_option_pair_names_its_tool_and_takes_the_other_tools_option_as_negative() -> None:
    passages = [
        _p("man/rsync.1.txt#1", RSYNC, "rsync.1"),
        _p("man/rsync.1.txt#2", RSYNC_OTHER, "rsync.1"),
        _p("man/scp.1.txt#1", SCP, "scp.1"),
    ]
    pairs = {(p.aspect, p.positive.id): p for p in dp.structure_pairs(passages, per_name=3)}
    rsync = pairs[("What does the -L option of rsync do?", "man/rsync.1.txt#1")]
    assert {n.id for n in rsync.negatives} == {"man/scp.1.txt#1", "man/rsync.1.txt#2"}
    scp = pairs[("What does the -L option of scp do?", "man/scp.1.txt#1")]
    assert "man/rsync.1.txt#1" in {n.id for n in scp.negatives}


def test_pairs_are_coverage_jsonl_topics_that_covrag_reads(tmp_path: Path) -> None:
    passages = [
        _p("man/rsync.1.txt#1", RSYNC, "rsync.1"),
        _p("man/rsync.1.txt#2", RSYNC_OTHER, "rsync.1"),
        _p("man/scp.1.txt#1", SCP, "scp.1"),
    ]
    out = tmp_path / "pairs.jsonl"
    written = dp.write_topics(list(dp.structure_pairs(passages, per_name=3)), out)
    topics = load_dataset(str(out))
    assert len(topics) == written == 2
    first = topics[0]
    positives = [p for p in first.passages if first.labels.get(p.id)]
    assert len(positives) == 1 and positives[0].metadata["title"] in {"rsync.1", "scp.1"}
    assert all(first.non_labels.get(p.id) for p in first.passages if p not in positives)


def test_the_llm_questions_resume_where_a_run_stopped(tmp_path: Path) -> None:
    passages = [_p(f"man/t.1.txt#{i}", f"text {i} " * 30, "t.1") for i in range(1, 5)]
    asked: list[str] = []

    def chat(prompt: str) -> str:
        asked.append(prompt)
        if len(asked) == 3:
            raise KeyboardInterrupt  # the run stops in the middle
        return f"Question: How do I do thing {len(asked)} with t?\nextra"

    out = tmp_path / "q.jsonl"
    with pytest.raises(KeyboardInterrupt):
        dp.ask_questions(passages, chat, out)
    assert len(out.read_text().splitlines()) == 2
    asked.clear()
    done = dp.ask_questions(passages, lambda prompt: "How do I do the rest with t?", out)
    assert len(done) == 4 and done["man/t.1.txt#1"] == "How do I do thing 1 with t?"
    assert len(out.read_text().splitlines()) == 4


def test_a_question_bm25_cannot_find_its_passage_again_is_dropped() -> None:
    passages = [
        _p("readme/a.md#1", "Install the package with pip install alpha and import alpha.", "a"),
        _p("readme/b.md#1", "Beta parses configuration files written in TOML syntax.", "b"),
        _p("readme/c.md#1", "Gamma draws charts of time series in the terminal.", "c"),
    ]
    questions = {
        "readme/b.md#1": "How can beta parse my TOML configuration files?",
        "readme/c.md#1": "How do I install alpha with pip?",  # finds a.md, not c.md
    }
    kept, dropped = dp.question_pairs(questions, passages)
    assert [p.positive.id for p in kept] == ["readme/b.md#1"]
    assert dropped == 1
    assert all(dp.document_of(n) != "readme/b.md" for n in kept[0].negatives)


def test_a_title_header_is_what_the_model_reads_when_its_card_asks(tmp_path: Path) -> None:
    shipped = Path(CrossEncoderCoverage().model_path())
    model = tmp_path / "model"
    shutil.copytree(shipped, model)
    card = json.loads((model / "training_card.json").read_text())
    assert card.get("passage_header") is None  # the shipped model reads the text alone
    card["passage_header"] = "title"
    (model / "training_card.json").write_text(json.dumps(card))
    passage = _p("p1", "ServerAliveInterval sets a timeout interval in seconds.", "ssh_config.5")
    assert passage_input(passage, "title") == "ssh_config.5: " + passage.text
    assert passage_input(passage, None) == passage.text
    aspect = "How do I keep an SSH connection alive?"
    topic = Topic("q", aspect, (passage,), (Aspect("a", aspect),))
    headed = CrossEncoderCoverage(model=str(model)).estimate(topic).probs[0, 0]
    plain = CrossEncoderCoverage(model=str(shipped)).estimate(topic).probs[0, 0]
    scorer = PairScorer(str(shipped), 8, 256, cache_size=10)
    expected, _, _ = scorer.score([("ssh_config.5: " + passage.text, aspect)])
    assert headed == pytest.approx(expected[0], abs=1e-6)
    assert headed != pytest.approx(plain, abs=1e-6)


def test_the_float32_copy_scores_as_the_shipped_int8_model(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from covrag_lab.train.dequantize import check_dequantized, dequantized_model

    shipped = Path(CrossEncoderCoverage().model_path())
    copy = dequantized_model(shipped, tmp_path / "fp32")
    pairs = [
        ("Homework takes time away from sport and family.", "Homework harms free time"),
        ("Homework takes time away from sport and family.", "School uniforms cost money"),
        ("Set ServerAliveInterval to send keepalive messages.", "How do I keep ssh alive?"),
        ("gzip reduces the size of the named files.", "How do I keep ssh alive?"),
    ]
    close = check_dequantized(shipped, copy, pairs)
    assert close["max_abs_diff"] < 0.08 and close["pearson"] > 0.98
