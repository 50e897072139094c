"""The datasets bundled with covrag, addressable as ``name:split`` (e.g. ``argkp2021:dev``).

Test splits are withheld from the package: tune on train and dev only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from covrag.data.jsonl import read_topics
from covrag.errors import DataError
from covrag.types import Topic


@dataclass(frozen=True)
class BundledDataset:
    name: str
    description: str
    licence: str
    splits: tuple[str, ...] = ("train", "dev")

    def path(self, split: str) -> Path:
        if split not in self.splits:
            raise DataError(
                f"dataset {self.name!r} has no split {split!r} bundled "
                f"(bundled: {', '.join(self.splits)}; test splits are withheld)"
            )
        root = resources.files("covrag.data") / "bundled" / self.name
        return Path(str(root / f"{self.name}-{split}.jsonl"))

    @property
    def folder(self) -> Path:
        return Path(str(resources.files("covrag.data") / "bundled" / self.name))


BUNDLED: dict[str, BundledDataset] = {
    d.name: d
    for d in (
        BundledDataset(
            "argkp2021",
            "IBM ArgKP 2021: crowd arguments matched to expert key points (both stances)",
            "CDLA-Sharing-1.0, (c) IBM; Bar-Haim et al. ACL 2020, Friedman et al. ArgMining 2021",
        ),
        BundledDataset(
            "perspectrum",
            "Perspectrum v1.0: perspective sentences in paraphrase clusters, with hard negatives",
            "CC BY-SA 4.0; Chen et al. NAACL 2019",
        ),
        BundledDataset(
            "perspectrum-evidence",
            "Perspectrum v1.0: evidence paragraphs citing perspective clusters (token budgets)",
            "CC BY-SA 4.0; Chen et al. NAACL 2019",
        ),
    )
}


def resolve_dataset(spec: str | os.PathLike[str]) -> Path:
    """The JSONL path for a bundled ``name:split`` or an existing file path."""
    text = str(spec)
    if os.path.exists(text):
        return Path(text)
    name, sep, split = text.partition(":")
    if sep and name in BUNDLED:
        return BUNDLED[name].path(split)
    if name in BUNDLED:
        raise DataError(f"name a split: {name}:{' or '.join(BUNDLED[name].splits)}")
    known = ", ".join(f"{n}:{s}" for n, d in BUNDLED.items() for s in d.splits)
    raise DataError(f"{text!r} is neither a file nor a bundled dataset (bundled: {known})")


def load_dataset(spec: str | os.PathLike[str]) -> list[Topic]:
    """Load the topics of a bundled dataset (``argkp2021:dev``) or of a coverage JSONL file."""
    return read_topics(resolve_dataset(spec))
