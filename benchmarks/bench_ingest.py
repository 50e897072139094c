"""Indexing a folder of documents: a full build, an update with nothing changed, one file changed.

    .venv/bin/python benchmarks/bench_ingest.py [--dataset perspectrum-evidence:dev] [--kind bm25]

The folder is made from a bundled dataset's pools: one document per topic (its pool's passages,
one paragraph each), written in turn as .txt, .md (a heading, then the paragraphs), .html (a
page with a title) and .pdf (fpdf2, Helvetica; text outside Latin-1 replaced). Prints a markdown
table of the folder's size and the seconds of each update (``covrag.ingest.update_index``, the
code behind ``covrag index --docs``).
"""

from __future__ import annotations

import argparse
import html
import tempfile
import time
from pathlib import Path

from covrag.data import load_dataset
from covrag.ingest import Chunker, update_index

FORMATS = ("txt", "md", "html", "pdf")


def _pdf(path: Path, title: str, paragraphs: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(title.encode("latin-1", "replace").decode("latin-1"))
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    for paragraph in paragraphs:
        pdf.multi_cell(0, 6, paragraph.encode("latin-1", "replace").decode("latin-1"))
        pdf.ln(3)
    path.write_bytes(bytes(pdf.output()))


def make_folder(dataset: str, folder: Path) -> tuple[int, int]:
    """Write one document per topic; returns (files, characters of text)."""
    chars = 0
    topics = load_dataset(dataset)
    for i, topic in enumerate(topics):
        paragraphs = [p.text for p in topic.passages]
        chars += sum(len(p) for p in paragraphs)
        kind = FORMATS[i % len(FORMATS)]
        path = folder / f"topic-{i:04d}.{kind}"
        if kind == "txt":
            path.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
        elif kind == "md":
            body = "\n\n".join(paragraphs)
            path.write_text(f"# {topic.query}\n\n{body}\n", encoding="utf-8")
        elif kind == "html":
            body = "".join(f"<p>{html.escape(p)}</p>\n" for p in paragraphs)
            title = html.escape(topic.query)
            page = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
            path.write_text(page, encoding="utf-8")
        else:
            _pdf(path, topic.query, paragraphs)
    return len(topics), chars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="perspectrum-evidence:dev")
    parser.add_argument("--kind", default="bm25", choices=["bm25", "dense", "hybrid"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "docs", Path(tmp) / "idx"
        folder.mkdir()
        files, chars = make_folder(args.dataset, folder)
        rows = []
        chunker = Chunker()
        started = time.perf_counter()
        first = update_index([folder], out, kind=args.kind, chunker=chunker)
        rows.append(("full build", time.perf_counter() - started, len(first.parsed)))
        started = time.perf_counter()
        same = update_index([folder], out, kind=args.kind, chunker=chunker)
        rows.append(("update, nothing changed", time.perf_counter() - started, len(same.parsed)))
        changed = folder / "topic-0000.txt"
        changed.write_text(changed.read_text() + "\nOne more paragraph.\n", encoding="utf-8")
        started = time.perf_counter()
        one = update_index([folder], out, kind=args.kind, chunker=chunker)
        rows.append(("update, one file changed", time.perf_counter() - started, len(one.parsed)))
    print(
        f"{args.dataset}: {files} files ({', '.join(FORMATS)} in turn), {chars:,} characters, "
        f"{first.passages} passages of <= {chunker.tokens} tokens; index {args.kind}\n"
    )
    print("| update | seconds | files read |")
    print("|---|---:|---:|")
    for name, seconds, parsed in rows:
        print(f"| {name} | {seconds:.2f} | {parsed} |")


if __name__ == "__main__":
    main()
