"""What draft evidence costs an answer as the index grows (``covrag.generate.evidence``).

Run from the repository root::

    .venv/bin/python benchmarks/bench_evidence.py [--copies 1 10 100] [--repeat 5]

The answer benchmark's ``manuals`` corpus is indexed as ``covrag index --docs`` cuts it, then
copied ``--copies`` times under new document names (``find.1-17``: the copies are other
documents, so a prose name's lookup must scan them all). For each size it times, per draft, what
``ask`` does once a draft is written: build :class:`~covrag.generate.evidence.Evidence` over the
index's passages and look up the names of four drafts the benchmark's writer wrote (a command
whose options the context lacks, a prose option beside its program, a setting, and a sentence
naming nothing a context passage lacks). Printed: passages, seconds to group them by document
("group"), the median and the slowest seconds of a lookup per draft, and how many passages the
four drafts found (a setting that many documents define is found in none: with the copies,
``ProxyJump`` is defined in a hundred ``ssh_config`` documents and the lookup takes none of
them).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from covrag.generate.evidence import Evidence
from covrag.ingest import update_index
from covrag.llm.prompts import document_of
from covrag.retrieve import load_index
from covrag.types import Passage

MANUALS = Path(__file__).parent / "answers" / "corpora" / "manuals"

DRAFTS = (  # what the 1.5B writer wrote on the benchmark's manuals questions
    ['find . -mtime -7 -type f -exec grep -l "TODO" {} +'],
    ["You can use the grep command with the -q option to print nothing."],
    ["Set ProxyJump for the host in your ssh configuration."],
    ["The exit status is 0 if a line is selected and 1 if no lines were selected."],
)


def copies_of(passages: tuple[Passage, ...], n: int) -> list[Passage]:
    """``passages`` and ``n - 1`` copies of them, each copy a document of its own."""
    out = list(passages)
    for i in range(1, n):
        for p in passages:
            title = f"{document_of(p)}-{i}"
            out.append(
                dataclasses.replace(p, id=f"{i}/{p.id}", metadata={**p.metadata, "title": title})
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        update_index([MANUALS], Path(tmp) / "index")
        passages = tuple(load_index(str(Path(tmp) / "index")).passages)
    atime = next(p for p in passages if p.text.lstrip().startswith("-atime"))
    context = (atime,)
    print("| passages | group (s) | lookup per draft, median (s) | slowest (s) | found |")
    print("|---|---|---|---|---|")
    for n in args.copies:
        corpus = copies_of(passages, n)
        grouped, looked = [], []
        found = 0
        for _ in range(args.repeat):
            evidence = Evidence(corpus)
            started = time.perf_counter()
            evidence.by_document()
            grouped.append(time.perf_counter() - started)
            for draft in DRAFTS:
                started = time.perf_counter()
                found += len(evidence.lookup(draft, context))
                looked.append(time.perf_counter() - started)
        print(
            f"| {len(corpus):,} | {statistics.median(grouped):.3f} | "
            f"{statistics.median(looked):.3f} | {max(looked):.3f} | {found // args.repeat} |"
        )


if __name__ == "__main__":
    main()
