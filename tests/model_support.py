"""Tiny randomly initialised models for export tests: architectures unlike the packaged MiniLM."""

from __future__ import annotations

from pathlib import Path
from typing import Literal


def tiny_mpnet(folder: Path, head: Literal["classifier", "encoder"]) -> Path:
    """A 2-layer MPNet with the packaged MiniLM's vocabulary, saved to ``folder``: an
    architecture whose forward takes no token types (position ids are its third argument) and
    whose tokenizer gives none. ``classifier`` is a one-label cross-encoder; ``encoder`` a
    sentence-transformers bi-encoder (mean pooling, unit vectors)."""
    import torch
    from transformers import (
        MPNetConfig,
        MPNetForSequenceClassification,
        MPNetModel,
        MPNetTokenizerFast,
    )

    from covrag.tokens import default_model_path

    special = {"bos": "[CLS]", "cls": "[CLS]", "eos": "[SEP]", "sep": "[SEP]", "unk": "[UNK]"}
    lines = (default_model_path() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tokenizer = MPNetTokenizerFast(
        vocab={token: i for i, token in enumerate(lines)},
        pad_token="[PAD]",
        mask_token="[MASK]",
        **{f"{k}_token": v for k, v in special.items()},
    )
    torch.manual_seed(0)
    config = MPNetConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    if head == "classifier":
        MPNetForSequenceClassification(config).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        return folder
    from sentence_transformers import SentenceTransformer, models

    raw = folder.with_name(folder.name + "-raw")
    MPNetModel(config).save_pretrained(raw)
    tokenizer.save_pretrained(raw)
    body = models.Transformer(str(raw), max_seq_length=64)
    pooling = models.Pooling(body.get_word_embedding_dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[body, pooling, models.Normalize()], device="cpu").save(str(folder))
    return folder
