"""The citation check's precision on technical answer sentences labelled by a reader.

    nice .venv/bin/python benchmarks/bench_support_docs.py [--model DIR] [--threshold 0.75 0.9]

``benchmarks/answers/support/labels.jsonl`` holds 281 (sentence, cited passage) pairs taken from
``covrag ask`` answers on the answer benchmark's five corpora (the 50-question run of
2026-12-06 and a re-run of ``manuals``), each labelled by a reader who did not see the check's
verdict (an AI agent working for the developers, told to read each pair and to ignore the
stored verdicts; the label and its reason are in the file, for anyone to re-check):
``supported`` (everything the sentence claims is in the passage, about the subject the passage
documents), ``partial`` or ``unsupported``. The check
(:class:`covrag.generate.support.SupportChecker`) is run on each sentence as the answer cited
it, with the answer's context (``contexts.jsonl``: the passages the writer was given, so that
the attribution rule sees the other documents). It accepts the pair when the sentence keeps
exactly the labelled passage as its citation; an accepted pair is right when the reader
labelled it ``supported``. A sentence the check re-points to other passages, or to more than
the labelled one, is counted apart (``moved``): its label is not about what it then cites.
Printed per corpus: pairs accepted, precision and recall, and how the accepted split between
alignment and the judge.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from covrag.coverage import CrossEncoderCoverage
from covrag.generate.support import JUDGE_THRESHOLD, SupportChecker
from covrag.types import Citation, Passage

HERE = Path(__file__).parent / "answers" / "support"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _passage(pid: str, text: str, title: str | None, doc: str) -> Passage:
    """A passage with the metadata the attribution rule reads (its document and title)."""
    return Passage(pid, text, metadata={"title": title, "doc_id": doc, "source": doc})


def contexts(path: Path = HERE / "contexts.jsonl") -> dict[str, list[Passage]]:
    return {
        record["context"]: [
            _passage(p["id"], p["text"], p["title"], p["doc_id"]) for p in record["passages"]
        ]
        for record in read_jsonl(path)
    }


def verdicts(
    checker: SupportChecker, rows: list[dict[str, Any]], context: dict[str, list[Passage]]
) -> list[str]:
    """The check's verdict on each pair: aligned or judged (it keeps the labelled passage),
    moved (it cites another instead) or unsupported."""
    out = []
    for row in rows:
        passages = context[row["context"]]
        if row["passage_id"] not in {p.id for p in passages}:
            doc = row["passage_id"].rsplit("#", 1)[0]
            passages = [*passages, _passage(row["passage_id"], row["passage"], row["title"], doc)]
        sentence = Citation(row["sentence"], (row["passage_id"],))
        checked = checker.check_sentences([sentence], passages)[0]
        if checked.check is None or not checked.supported:
            out.append("unsupported")
        elif checked.passage_ids != (row["passage_id"],):
            out.append("moved")
        else:
            out.append(checked.check.verified)
    return out


def report(rows: list[dict[str, Any]], found: list[str], name: str) -> None:
    groups: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        groups[row["question_id"].rsplit("-", 1)[0]].append(i)
        groups["overall"].append(i)
    print(f"## {name}")
    print(
        "| corpus | pairs | supported | accepted | precision | recall | aligned | judged | moved |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for corpus in [*sorted(k for k in groups if k != "overall"), "overall"]:
        idx = groups[corpus]
        good = [i for i in idx if rows[i]["label"] == "supported"]
        accepted = [i for i in idx if found[i] in ("aligned", "judged")]
        right = [i for i in accepted if rows[i]["label"] == "supported"]
        precision = len(right) / len(accepted) if accepted else float("nan")
        recall = len(right) / len(good) if good else float("nan")
        kinds = [found[i] for i in accepted]
        print(
            f"| {corpus} | {len(idx)} | {len(good)} | {len(accepted)} | {precision:.3f} | "
            f"{recall:.3f} | {kinds.count('aligned')} | {kinds.count('judged')} | "
            f"{sum(found[i] == 'moved' for i in idx)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--model", default=None, help="judge model folder (default: shipped)")
    parser.add_argument(
        "--threshold",
        nargs="+",
        default=["none", str(JUDGE_THRESHOLD)],
        help="judge thresholds to compare; none = alignment only (the check's default)",
    )
    args = parser.parse_args()
    rows = read_jsonl(HERE / "labels.jsonl")
    context = contexts()
    for raw in args.threshold:
        threshold = None if raw == "none" else float(raw)
        checker = SupportChecker(CrossEncoderCoverage(model=args.model), threshold=threshold)
        name = "alignment only" if threshold is None else f"judge at {threshold}"
        report(rows, verdicts(checker, rows, context), f"{args.model or 'shipped'}, {name}")


if __name__ == "__main__":
    main()
