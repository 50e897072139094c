"""Indexing a folder of documents: a full build, an update with nothing changed, one file changed.

    .venv/bin/python benchmarks/bench_ingest.py [--dataset perspectrum-evidence:dev] [--kind bm25]
    .venv/bin/python benchmarks/bench_ingest.py --files 100000 --small [--folder /tmp/docs100k]

The folder is made from a bundled dataset's pools: one document per topic (its pool's passages,
one paragraph each), written in turn as .txt, .md (a heading, then the paragraphs), .html (a
page with a title) and .pdf (fpdf2, Helvetica; text outside Latin-1 replaced). Prints a markdown
table of the folder's size and the seconds of each update (``covrag.ingest.update_index``, the
code behind ``covrag index --docs``).

With ``--files N`` the folder is instead N synthetic files (``--small``: a few sentences each,
about 300 bytes; else a few paragraphs, about 3 kB) in 100 sub-folders, .txt and .md in turn,
written under ``--folder`` (kept, and reused when it already holds N files) or a temporary
folder; the table adds files per second and the process's peak RSS, which is what shows whether
memory grows with the number of files.
"""

from __future__ import annotations

import argparse
import html
import os
import random
import resource
import sys
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


WORDS = (
    "tea coffee cocoa water leaf bean farm brew cup sleep milk sugar acid heat green black "
    "grows drink morning caffeine health study shows people often cold hot steep minutes"
).split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
    return " ".join(words).capitalize() + "."


def make_synthetic(folder: Path, files: int, small: bool) -> int:
    """Write ``files`` synthetic documents (reused when already there); returns their bytes."""
    # os.walk keeps no list of every path (rglob does), so the baseline RSS is not inflated
    sizes = [
        os.stat(os.path.join(here, name)).st_size
        for here, _, names in os.walk(folder)
        for name in names
        if name.startswith("doc-")
    ]
    if len(sizes) == files:
        return sum(sizes)
    rng = random.Random(0)
    total = 0
    for i in range(files):
        sub = folder / f"part-{i % 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        sentences = rng.randint(2, 4) if small else rng.randint(20, 40)
        body = " ".join(_sentence(rng) for _ in range(sentences)) + f" Note {i}.\n"
        path = sub / (f"doc-{i:06d}.txt" if i % 2 else f"doc-{i:06d}.md")
        text = body if path.suffix == ".txt" else f"# Document {i}\n\n{body}"
        path.write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB


def run_synthetic(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        folder = Path(args.folder) if args.folder else Path(tmp) / "docs"
        out = Path(tmp) / "idx"
        size = make_synthetic(folder, args.files, args.small)
        chunker = Chunker()
        chunker.split(_probe(), "probe")  # loads the tokenizer before the baseline
        baseline = _peak_mb()
        done = 0

        def progress(_path: Path) -> None:
            nonlocal done
            done += 1
            if done % 10_000 == 0:
                print(f"  {done:,} files", file=sys.stderr, flush=True)

        started = time.perf_counter()
        first = update_index([folder], out, kind=args.kind, chunker=chunker, on_file=progress)
        build = time.perf_counter() - started
        build_peak = _peak_mb()
        started = time.perf_counter()
        same = update_index([folder], out, kind=args.kind, chunker=chunker)
        again = time.perf_counter() - started
    kind = "small (2-4 sentences)" if args.small else "3-kB"
    print(
        f"{args.files:,} {kind} files (.txt and .md in turn), {size:,} bytes, "
        f"{first.passages:,} passages; index {args.kind}\n"
    )
    print("| update | seconds | files/s | peak RSS, MB |")
    print("|---|---:|---:|---:|")
    print(f"| before indexing (imports, tokenizer) | | | {baseline:.0f} |")
    print(f"| full build | {build:.1f} | {args.files / build:,.0f} | {build_peak:.0f} |")
    rate = len(same.reused) / again
    print(f"| update, nothing changed | {again:.1f} | {rate:,.0f} | {_peak_mb():.0f} |")


def _probe() -> object:
    from covrag.ingest import Document

    return Document("/probe.txt", "probe", "Tea is an old drink.", "0" * 64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="perspectrum-evidence:dev")
    parser.add_argument("--kind", default="bm25", choices=["bm25", "dense", "hybrid"])
    parser.add_argument("--files", type=int, default=None, help="synthetic files instead")
    parser.add_argument("--small", action="store_true", help="synthetic files of 2-4 sentences")
    parser.add_argument("--folder", default=None, help="where synthetic files are kept")
    args = parser.parse_args()
    if args.files is not None:
        run_synthetic(args)
        return
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
