"""The datasets bundled with covrag, addressable as ``name:split`` (e.g. ``argkp2021:dev``).

Test splits are withheld from the package: tune on train and dev only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from covrag.data.jsonl import read_topics
from covrag.data.question_forms import FORMS, as_paraphrases, as_questions, read_question_forms
from covrag.errors import DataError
from covrag.types import Topic


@dataclass(frozen=True)
class BundledDataset:
    name: str
    description: str
    licence: str
    splits: tuple[str, ...] = ("train", "dev")
    #: The bundled folder whose ``questions.jsonl`` holds this dataset's question forms.
    questions_from: str | None = None

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

    @property
    def questions_path(self) -> Path | None:
        """The question-form file of this dataset's aspects, when one is bundled."""
        if self.questions_from is None:
            return None
        path = self.folder.parent / self.questions_from / "questions.jsonl"
        return path if path.is_file() else None


BUNDLED: dict[str, BundledDataset] = {
    d.name: d
    for d in (
        BundledDataset(
            "argkp2021",
            "IBM ArgKP 2021: crowd arguments matched to expert key points (both stances)",
            "CDLA-Sharing-1.0, (c) IBM; Bar-Haim et al. ACL 2020, Friedman et al. ArgMining 2021",
            questions_from="argkp2021",
        ),
        BundledDataset(
            "perspectrum",
            "Perspectrum v1.0: perspective sentences in paraphrase clusters, with hard negatives",
            "CC BY-SA 4.0; Chen et al. NAACL 2019",
            questions_from="perspectrum",
        ),
        BundledDataset(
            "perspectrum-evidence",
            "Perspectrum v1.0: evidence paragraphs citing perspective clusters (token budgets)",
            "CC BY-SA 4.0; Chen et al. NAACL 2019",
            questions_from="perspectrum",
        ),
    )
}


def _parts(text: str) -> tuple[BundledDataset, str, str] | None:
    """``name:split[:form]`` of a bundled dataset, or None when ``text`` names none."""
    name, sep, rest = text.partition(":")
    if name not in BUNDLED:
        return None
    if not sep:
        raise DataError(f"name a split: {name}:{' or '.join(BUNDLED[name].splits)}")
    split, _, form = rest.partition(":")
    if form and form not in FORMS:
        raise DataError(f"{text!r}: the aspect form must be one of {', '.join(FORMS)}")
    return BUNDLED[name], split, form or "statements"


def resolve_dataset(spec: str | os.PathLike[str]) -> Path:
    """The JSONL path for a bundled ``name:split[:form]`` or an existing file path."""
    text = str(spec)
    if os.path.exists(text):
        return Path(text)
    parts = _parts(text)
    if parts is not None:
        dataset, split, _ = parts
        return dataset.path(split)
    known = ", ".join(f"{n}:{s}" for n, d in BUNDLED.items() for s in d.splits)
    raise DataError(f"{text!r} is neither a file nor a bundled dataset (bundled: {known})")


def load_dataset(spec: str | os.PathLike[str]) -> list[Topic]:
    """Load the topics of a bundled dataset or of a coverage JSONL file.

    ``argkp2021:dev`` gives the aspects as the dataset words them (statements);
    ``argkp2021:dev:questions`` gives each aspect as the neutral question it answers (see
    :mod:`covrag.data.question_forms`), with the same ids and labels;
    ``argkp2021:dev:paraphrases`` gives each aspect as one of the passages labelled with it.
    """
    text = str(spec)
    parts = None if os.path.exists(text) else _parts(text)
    if parts is None or parts[2] == "statements":
        return read_topics(resolve_dataset(spec))
    dataset, split, form = parts
    topics = read_topics(dataset.path(split))
    if form == "paraphrases":
        return as_paraphrases(topics)
    source = dataset.questions_path
    if source is None:
        raise DataError(f"{dataset.name} has no question forms bundled")
    return as_questions(topics, read_question_forms(source), str(source))
