"""Do cited sentences say what their passages say? ``covrag ask`` over real documents.

    nice -n 10 .venv/bin/python benchmarks/bench_citations.py [--llm local] [--out DIR]
        [--folders licences compression] [--limit N]

For each corpus of ``benchmarks/answers/corpora/`` (real documents nobody on the project wrote;
see each ``<corpus>.md``) the folder is indexed as ``covrag ask --docs`` indexes it (BM25,
default chunking), and every question of ``benchmarks/answers/questions/<corpus>.jsonl`` is
asked with the default
:class:`~covrag.pipeline.AskConfig` and the given LLM (default: the embedded model). Each run
file is written to ``--out`` and then checked on its own terms, from the run file alone (the
sentences, the passage ids each cites and those passages' texts), independently of any check the
writer itself makes:

- **aligned**: a cited sentence is supported when one passage it cites holds at least
  0.6 of the sentence's content words or shares a run of 8 words with it
  (:func:`covrag.evaluation.nuggets.reader_supported`);
- **judged**: a cited sentence is supported when the shipped coverage cross-encoder, reading the
  sentence as an aspect, scores one of its cited passages at or above its own threshold
  (:func:`covrag.evaluation.answers.cheap_citations`);
- **either** of the two; and in every case a sentence that names documents of the context ("The
  MPL-2.0 grants ...") counts as supported only by a cited passage of a document it names
  (:func:`covrag.generate.attribution.candidates`).

Prints, per question and overall: cited sentences, the share of them supported (aligned, judged),
whether the answer has no supported citation at all, coverage (context: the share of the plan's
wanted aspects the selected passages cover, from the run's ``uncovered``; answer: the share the
answer states, from the run's ``aspect_coverage``), and seconds. ``--recheck`` scores the run
files already in ``--out`` without asking again.
``summary.json`` in ``--out`` holds the same figures. Replies are cached (``COVRAG_CACHE_DIR``),
so a rerun with the same code is fast.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import covrag
from covrag.coverage import CrossEncoderCoverage
from covrag.evaluation.answers import cheap_citations
from covrag.evaluation.nuggets import read_nugget_questions
from covrag.evaluation.nuggets import reader_supported as aligned
from covrag.files import atomic_write_text
from covrag.generate.attribution import candidates
from covrag.ingest import update_index
from covrag.llm import parse_llm
from covrag.schema.runfile import RunPassage, RunSentence
from covrag.types import Answer

HERE = Path(__file__).parent / "answers" / "corpora"
QUESTIONS = Path(__file__).parent / "answers" / "questions"


@dataclass(frozen=True)
class Checked:
    """One answer's figures."""

    folder: str
    kind: str
    question: str
    cited: int
    aligned: int
    judged: int
    coverage: float
    seconds: float
    declined: bool
    answer_coverage: float = float("nan")
    supported: int = 0


def answer_coverage(topic: Mapping[str, Any]) -> float:
    """The share of wanted aspects the answer states (a supported sentence cites a passage that
    covers it: the run's ``aspect_coverage``); NaN for a run file without that block."""
    rows = topic.get("aspect_coverage")
    if not rows:
        return float("nan")
    return sum(1 for r in rows if r.get("answer_sentences")) / len(rows)


def check(
    record: Mapping[str, Any], judge: CrossEncoderCoverage
) -> tuple[int, int, int, int, float, bool]:
    """Cited sentences, those aligned, those judged supported, those supported either way,
    context coverage, and whether
    the answer cites nothing (a refusal, or an answer that forgot its citations) for one run
    file."""
    topic = record["topics"][0]
    passages = [RunPassage.model_validate(p).to_passage() for p in topic["passages"]]
    texts = {p.id: p.text for p in passages}
    sentences = [
        RunSentence.model_validate(s) for s in (topic.get("answer") or {}).get("sentences", [])
    ]
    citing = [s for s in sentences if any(p in texts for p in s.passage_ids)]
    # a sentence that names documents is held only by a cited passage of one of them
    allowed = []
    for s in citing:
        held = {p.id for p in candidates(s.text, passages)}
        allowed.append([p for p in s.passage_ids if p in held])
    is_aligned = [
        any(aligned(s.text, texts[p]) for p in mine)
        for s, mine in zip(citing, allowed, strict=True)
    ]
    answer = Answer(tuple(s.to_citation() for s in citing))
    is_judged = [
        ok and bool(mine)
        for (_, ok), mine in zip(cheap_citations(judge, answer, passages), allowed, strict=True)
    ]
    n_aligned, n_judged = sum(is_aligned), sum(is_judged)
    n_either = sum(a or j for a, j in zip(is_aligned, is_judged, strict=True))
    wanted = [a["id"] for a in topic["aspects"] if a.get("polarity") != "exclude"]
    missed = set(topic.get("uncovered", [])) & set(wanted)
    coverage = 1 - len(missed) / len(wanted) if wanted else float("nan")
    return len(citing), n_aligned, n_judged, n_either, coverage, not citing


def run_folder(
    folder: str,
    questions: Sequence[dict[str, str]],
    llm: Any,
    judge: CrossEncoderCoverage,
    out: Path,
) -> list[Checked]:
    """Index one folder, ask its questions, check each run file."""
    index = out / f"index-{folder}"
    report = update_index([HERE / folder], index)
    print(
        f"## {folder}: {report.documents} documents, {report.passages} passages, "
        f"{len(report.skipped)} skipped ({report.seconds:.1f} s)",
        flush=True,
    )
    checked = []
    for n, q in enumerate(questions, start=1):
        started = time.perf_counter()
        result = covrag.ask(q["question"], str(index), llm=llm)
        seconds = time.perf_counter() - started
        record = result.run_record()
        atomic_write_text(out / f"{folder}-{n}.json", json.dumps(record) + "\n")
        row = checked_row(folder, q, record, judge, seconds)
        print(_row(row), flush=True)
        checked.append(row)
    return checked


def checked_row(
    folder: str,
    question: Mapping[str, str],
    record: Mapping[str, Any],
    judge: CrossEncoderCoverage,
    seconds: float,
) -> Checked:
    """One answer's figures from its run file."""
    cited, n_aligned, n_judged, n_either, coverage, declined = check(record, judge)
    return Checked(
        folder,
        question["kind"],
        question["question"],
        cited,
        n_aligned,
        n_judged,
        coverage,
        seconds,
        declined,
        answer_coverage(record["topics"][0]),
        n_either,
    )


def recheck(
    folder: str, questions: Sequence[dict[str, str]], judge: CrossEncoderCoverage, out: Path
) -> list[Checked]:
    """The figures of run files an earlier run wrote to ``out`` (no question is asked again);
    seconds are the run's own (its ``costs``)."""
    rows = []
    for n, q in enumerate(questions, start=1):
        path = out / f"{folder}-{n}.json"
        if not path.is_file():
            continue
        record = json.loads(path.read_text("utf-8"))
        seconds = float(record.get("costs", {}).get("seconds", float("nan")))
        rows.append(checked_row(folder, q, record, judge, seconds))
        print(_row(rows[-1]), flush=True)
    return rows


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.2f}" if whole else "-"


def _row(c: Checked) -> str:
    none = "cites nothing" if c.declined else ""
    if c.cited and not c.supported:
        none = "yes"
    return (
        f"| {c.kind} | {c.question[:60]} | {c.cited} | {_share(c.aligned, c.cited)} | "
        f"{_share(c.judged, c.cited)} | {_share(c.supported, c.cited)} | {none} | "
        f"{c.coverage:.2f} | {c.answer_coverage:.2f} | {c.seconds:.0f} |"
    )


def summary(rows: Sequence[Checked]) -> dict[str, float]:
    """Pooled figures: cited sentences supported (aligned, judged), answers without a supported
    citation (by either check), mean coverage, seconds."""
    cited = sum(r.cited for r in rows)
    return {
        "answers": len(rows),
        "cited_sentences": cited,
        "aligned_share": sum(r.aligned for r in rows) / cited if cited else float("nan"),
        "judged_share": sum(r.judged for r in rows) / cited if cited else float("nan"),
        "supported_share": sum(r.supported for r in rows) / cited if cited else float("nan"),
        "no_supported_citation": sum(1 for r in rows if r.cited and not r.supported),
        "no_citation": sum(1 for r in rows if r.declined),
        "mean_coverage": sum(r.coverage for r in rows) / len(rows) if rows else float("nan"),
        "mean_answer_coverage": sum(r.answer_coverage for r in rows) / len(rows)
        if rows
        else float("nan"),
        "seconds": sum(r.seconds for r in rows),
    }


def interleaved(questions: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    """The questions kind by kind in turn, each kind in its own order."""
    kinds: dict[str, list[dict[str, str]]] = {}
    for q in questions:
        kinds.setdefault(q["kind"], []).append(q)
    order: list[dict[str, str]] = []
    while any(kinds.values()):
        order += [queue.pop(0) for queue in kinds.values() if queue]
    return order


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--llm", default="local", help="LLM spec (covrag.llm)")
    parser.add_argument("--folders", nargs="+", default=["licences", "compression"])
    parser.add_argument("--limit", type=int, default=None, help="first N questions per folder")
    parser.add_argument("--out", type=Path, default=Path("bench-citations"))
    parser.add_argument(
        "--recheck", action="store_true", help="score the run files already in --out, ask nothing"
    )
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="ask each folder's questions kind by kind in turn (single, across, unanswerable, "
        "single, ...), so that --limit keeps every kind",
    )
    args = parser.parse_args()
    questions = [
        {"folder": q.corpus, "question": q.question, "kind": q.kind}
        for folder in args.folders
        for q in read_nugget_questions(QUESTIONS / f"{folder}.jsonl")
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    judge = CrossEncoderCoverage()
    llm = None if args.recheck else parse_llm(args.llm)
    print(
        "| kind | question | cited | aligned | judged | either | none supported | context coverage "
        "| answer coverage | s |"
    )
    rows: list[Checked] = []
    for folder in args.folders:
        mine = [q for q in questions if q["folder"] == folder]
        mine = (interleaved(mine) if args.interleave else mine)[: args.limit]
        if args.recheck:
            rows += recheck(folder, mine, judge, args.out)
        else:
            rows += run_folder(folder, mine, llm, judge, args.out)
    figures = {f: summary([r for r in rows if r.folder == f]) for f in args.folders}
    figures["overall"] = summary(rows)
    for name, values in figures.items():
        print(
            f"{name}: "
            + ", ".join(
                f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()
            )
        )
    payload = {"llm": args.llm, "summary": figures, "answers": [asdict(r) for r in rows]}
    atomic_write_text(args.out / "summary.json", json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
