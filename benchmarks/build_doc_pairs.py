"""Build the documents' coverage training pairs (issue 47; covrag_lab.train.doc_pairs).

    python benchmarks/build_doc_pairs.py collect WORK            # render the documents (minutes)
    python benchmarks/build_doc_pairs.py questions WORK N        # the LLM's questions (resumable)
    python benchmarks/build_doc_pairs.py pairs WORK OUT.jsonl    # structure + question pairs

WORK holds the rendered documents (``man/``, ``pydoc/``, ``readme/``). The LLM's questions are
appended to ``benchmarks/doc_pairs/questions.jsonl`` (committed: the slow part of the build), so
``questions`` resumes where it stopped and ``pairs`` rebuilds the training file from it and the
documents in a few minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from covrag_lab.train import doc_pairs as dp

QUESTIONS = Path(__file__).parent / "doc_pairs" / "questions.jsonl"
#: Structure pairs kept per kind (a hash-ordered sample of what the documents define).
STRUCTURE_CAP = {"option": 3000, "function": 1500}


def collect(work: Path, man_limit: int, readme_limit: int) -> None:
    started = time.monotonic()
    pages = [p for p in dp.man_pages(man_limit) if dp.render_man(p, work) is not None]
    modules = [m for m in dp.MODULES if dp.render_pydoc(m, work) is not None]
    readmes = dp.write_readmes(work, readme_limit)
    print(
        f"man pages {len(pages)}, pydoc modules {len(modules)}, READMEs {len(readmes)} "
        f"in {time.monotonic() - started:.0f} s"
    )


def passages(work: Path) -> list[dp.Passage]:
    files = sorted(p for kind in ("man", "pydoc", "readme") for p in (work / kind).glob("*"))
    return dp.chunk_files(files, work)


def sample(items: list[dp.Passage], n: int) -> list[dp.Passage]:
    """``n`` passages spread over the three kinds, hash-ordered (repeatable), long enough to
    answer something (200+ characters)."""
    usable = [p for p in items if len(p.text) >= 200]
    by_kind: dict[str, list[dp.Passage]] = {}
    for p in usable:
        by_kind.setdefault(dp.document_of(p).split("/")[0], []).append(p)
    for kind in by_kind:
        by_kind[kind].sort(key=lambda p: hashlib.sha256(p.id.encode()).hexdigest())
    chosen: list[dp.Passage] = []
    while len(chosen) < n and any(by_kind.values()):
        for kind in sorted(by_kind):
            if by_kind[kind] and len(chosen) < n:
                chosen.append(by_kind[kind].pop(0))
    return chosen


def questions(work: Path, n: int, llm_spec: str) -> None:
    from covrag.llm import parse_llm
    from covrag.llm.base import ChatParams, Message

    llm = parse_llm(llm_spec)
    params = ChatParams(max_tokens=60)
    started = time.monotonic()

    def chat(prompt: str) -> str:
        return llm.chat([Message("user", prompt)], params=params).text

    def progress(done: int, total: int) -> None:
        if done % 10 == 0 or done == total:
            print(f"{done}/{total} {time.monotonic() - started:.0f} s", flush=True)

    QUESTIONS.parent.mkdir(parents=True, exist_ok=True)
    dp.ask_questions(sample(passages(work), n), chat, QUESTIONS, progress=progress)


def pairs(work: Path, out: Path) -> None:
    items = passages(work)
    structure: dict[str, list[dp.DocPair]] = {}
    for pair in dp.structure_pairs(items):
        structure.setdefault(pair.kind, []).append(pair)
    chosen: list[dp.DocPair] = []
    for kind, found in sorted(structure.items()):
        found.sort(key=lambda p: hashlib.sha256(p.aspect.encode()).hexdigest())
        kept = [p for p in found if p.negatives][: STRUCTURE_CAP[kind]]
        print(f"{kind}: {len(found)} defined, {len(kept)} kept")
        chosen.extend(kept)
    asked = {}
    if QUESTIONS.is_file():
        for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            asked[record["id"]] = record["question"]
    kept_q, dropped = dp.question_pairs(asked, items)
    print(f"questions: {len(asked)} asked, {len(kept_q)} kept by the round trip, {dropped} dropped")
    lines = dp.write_topics(chosen + [p for p in kept_q if p.negatives], out)
    print(f"{lines} topics -> {out} ({len(items)} passages in the collection)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stage", choices=["collect", "questions", "pairs"])
    parser.add_argument("work", type=Path)
    parser.add_argument("arg", nargs="?", help="questions: how many; pairs: the output file")
    parser.add_argument("--man", type=int, default=150, help="man pages to render")
    parser.add_argument("--readmes", type=int, default=40, help="READMEs to write")
    parser.add_argument("--llm", default="local", help="LLM spec (covrag.llm)")
    args = parser.parse_args()
    if args.stage == "collect":
        collect(args.work, args.man, args.readmes)
    elif args.stage == "questions":
        questions(args.work, int(args.arg or 400), args.llm)
    else:
        if not args.arg:
            sys.exit("pairs needs an output file")
        pairs(args.work, Path(args.arg))


if __name__ == "__main__":
    main()
