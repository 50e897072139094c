"""Ingestion on real files: readers, chunks with offsets, incremental updates, skipped files."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from covrag.errors import ConfigError, DataError
from covrag.ingest import (
    Chunker,
    Document,
    UnreadableError,
    find_files,
    read_document,
    read_documents,
    update_index,
)
from covrag.ingest import library as ingest_library
from covrag.ingest.unwrap import unwrap
from covrag.retrieve import load_index
from covrag.retrieve.versions import resolve_index
from covrag.tokens import WhitespaceTokenCounter, default_counter
from ingest_support import PDF_PAGES, PDF_TITLE, TEA, make_folder, write_pdf

pytest.importorskip("semchunk")
pytest.importorskip("pypdf")
pytest.importorskip("inscriptis")


def test_each_format_reads_as_text_with_a_title(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    tea = read_document(folder / "tea.txt")
    assert tea.text == TEA and tea.title == "tea" and tea.source == str(folder / "tea.txt")
    md = read_document(folder / "guides" / "coffee.md")
    assert md.title == "Coffee and health"
    # Markup is gone, the words stay: emphasis, link targets and list marks are not text.
    assert "main source of caffeine" in md.text and "**" not in md.text
    assert "example.org" not in md.text and "Decaffeinated coffee" in md.text
    html = read_document(folder / "cocoa.html")
    assert html.title == "Cocoa farming"
    assert "fermented for five days" in html.text and "Côte d'Ivoire" in html.text
    assert "tracking" not in html.text and "color" not in html.text
    pdf = read_document(folder / "herbal.pdf")
    assert pdf.title == PDF_TITLE
    for page in PDF_PAGES:
        assert " ".join(page.split()) in " ".join(pdf.text.split())
    # Each passage of a PDF names the page it starts on.
    (second,) = [start for start, number in pdf.pages if number == 2]
    assert pdf.text[second:].startswith("Chamomile") and pdf.page_at(second - 3) == 1
    passages = Chunker(tokens=16, overlap=0).split(pdf, "herbal.pdf")
    pages = {p.text.split()[0]: p.metadata["page"] for p in passages}
    assert pages["Herbal"] == 1 and pages["Chamomile"] == 2
    assert "page" not in Chunker(tokens=16, overlap=0).split(tea, "tea.txt")[0].metadata


def test_find_files_walks_folders_and_globs_and_reports_what_it_cannot_read(
    tmp_path: Path,
) -> None:
    folder = make_folder(tmp_path)
    (folder / "slides.pptx").write_bytes(b"PK")  # another type inside a folder: ignored
    (folder / ".hidden.txt").write_text("secret")
    files, missing = find_files([folder, str(tmp_path / "nowhere"), folder / "slides.pptx"])
    assert sorted(files.values()) == ["cocoa.html", "guides/coffee.md", "herbal.pdf", "tea.txt"]
    assert [m.reason for m in missing] == ["no such file or folder", missing[1].reason]
    assert missing[1].reason.startswith("unsupported file type")
    globbed, _ = find_files([str(folder / "**" / "*.md")])
    assert list(globbed.values()) == ["coffee.md"]


def test_chunks_keep_offsets_into_the_extracted_text(tmp_path: Path) -> None:
    text = " ".join(f"Sentence number {i} says something about tea." for i in range(60))
    document = Document(str(tmp_path / "long.txt"), "long", text, "0" * 64)
    chunker = Chunker(tokens=40, overlap=12)
    passages = chunker.split(document, "long.txt")
    assert len(passages) > 5
    counts = default_counter().count([p.text for p in passages])
    assert max(counts) <= 40
    for number, passage in enumerate(passages, start=1):
        start, end = passage.metadata["start"], passage.metadata["end"]
        assert text[start:end] == passage.text
        assert passage.id == f"long.txt#{number}"
        assert passage.metadata["title"] == "long" and passage.metadata["doc_id"] == "long.txt"
        # Sentence-respecting: a passage begins and ends at sentence boundaries.
        assert passage.text.startswith("Sentence") and passage.text.endswith(".")
    # Consecutive passages overlap by whole sentences (one of about 10 tokens fits in 12).
    assert passages[1].metadata["start"] < passages[0].metadata["end"]
    assert passages[0].text.endswith(
        text[passages[1].metadata["start"] : passages[0].metadata["end"]]
    )
    with pytest.raises(ConfigError, match="overlap"):
        Chunker(tokens=40, overlap=20)
    words = Chunker(tokens=8, overlap=0, counter=WhitespaceTokenCounter())
    assert words.settings["counter"] == "whitespace"


def _passages(index: Path) -> dict[str, dict[str, object]]:
    lines = (resolve_index(index) / "passages.jsonl").read_text(encoding="utf-8").splitlines()
    return {record["id"]: record for record in map(json.loads, lines)}


def test_an_index_of_documents_then_an_incremental_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_folder(tmp_path)
    out = tmp_path / "idx"
    first = update_index([folder], out, chunker=Chunker(tokens=48, overlap=8))
    assert first.documents == 4 and len(first.parsed) == 4 and first.written
    before = _passages(out)
    assert {r["doc_id"] for r in before.values()} == {
        "tea.txt", "guides/coffee.md", "cocoa.html", "herbal.pdf",
    }  # fmt: skip
    for record in before.values():
        document = read_document(Path(str(record["source"])))
        start, end = int(str(record["start"])), int(str(record["end"]))
        assert unwrap(document.text[start:end]) == record["text"]
        assert record["title"] == document.title

    # Change one file, add one, remove one: only the changed and the new file are read.
    read: list[str] = []
    real = ingest_library.read_document

    def spy(path: Path, data: bytes | None = None) -> Document:
        read.append(path.name)
        return real(path, data)

    monkeypatch.setattr(ingest_library, "read_document", spy)
    (folder / "tea.txt").write_text(TEA + "\nOolong tea is partly oxidised.\n", encoding="utf-8")
    (folder / "cocoa.html").unlink()
    write_pdf(folder / "rooibos.pdf", ("Rooibos is red bush tea.",), "Rooibos")
    second = update_index([folder], out, chunker=Chunker(tokens=48, overlap=8))
    assert sorted(read) == ["rooibos.pdf", "tea.txt"]
    assert [Path(p).name for p in second.parsed] == ["rooibos.pdf", "tea.txt"]
    assert sorted(Path(p).name for p in second.reused) == ["coffee.md", "herbal.pdf"]
    assert [Path(p).name for p in second.removed] == ["cocoa.html"]
    after = _passages(out)
    assert not any(r["doc_id"] == "cocoa.html" for r in after.values())
    assert any("Oolong" in str(r["text"]) for r in after.values())
    kept = ("herbal.pdf", "guides/coffee.md")
    unchanged = [pid for pid, r in before.items() if r["doc_id"] in kept]
    assert all(after[pid] == before[pid] for pid in unchanged)
    assert load_index(out).search("oolong", 1)[0].metadata["doc_id"] == "tea.txt"

    # Nothing changed: nothing is read and nothing rewritten.
    read.clear()
    third = update_index([folder], out, chunker=Chunker(tokens=48, overlap=8))
    assert read == [] and not third.written and third.passages == second.passages
    # Other chunk settings re-read every file.
    fourth = update_index([folder], out, chunker=Chunker(tokens=64, overlap=8))
    assert len(fourth.parsed) == 4
    # A listing that names passages the index lacks: that file is read again.
    listing = json.loads((resolve_index(out) / "documents.json").read_text())
    listing["documents"][0]["passages"].append("gone#9")
    (resolve_index(out) / "documents.json").write_text(json.dumps(listing))
    read.clear()
    update_index([folder], out, chunker=Chunker(tokens=64, overlap=8))
    assert read == [Path(listing["documents"][0]["source"]).name]


def test_corrupt_files_are_skipped_and_reported_and_the_index_stays_whole(
    tmp_path: Path,
) -> None:
    folder = make_folder(tmp_path)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage")
    (folder / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (folder / "empty.md").write_text("   \n")
    (folder / "bad.jsonl").write_text('{"id": "x"}\n')
    out = tmp_path / "idx"
    report = update_index([folder], out)
    reasons = {Path(s.source).name: s.reason for s in report.skipped}
    assert set(reasons) == {"broken.pdf", "latin1.txt", "empty.md", "bad.jsonl"}
    assert reasons["broken.pdf"].startswith("not a readable PDF")
    assert "not UTF-8" in reasons["latin1.txt"] and reasons["empty.md"] == "no text in the file"
    assert "text" in reasons["bad.jsonl"]
    assert report.documents == 4
    listing = read_documents(out)
    assert listing is not None and {Path(s.source).name for s in listing.skipped} == set(reasons)

    # An update that reads nothing is an error naming the reasons, and the old index stays.
    with pytest.raises(DataError, match="no passages") as caught:
        update_index([folder / "broken.pdf", tmp_path / "missing.txt"], out)
    assert "broken.pdf: not a readable PDF" in str(caught.value)
    assert "missing.txt: no such file or folder" in str(caught.value)
    assert len(load_index(out).passages) == report.passages
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_passage_jsonl_files_index_as_they_are(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "p1", "text": "Wind farms need land.", "source": "blog"}\n')
    (tmp_path / "note.txt").write_text("Solar panels work in winter too.")
    report = update_index([corpus, tmp_path / "note.txt"], tmp_path / "idx")
    passages = {p.id: p for p in load_index(tmp_path / "idx").passages}
    assert report.documents == 2 and set(passages) == {"p1", "note.txt#1"}
    assert passages["p1"].metadata == {"source": "blog"}


@pytest.mark.model
@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_a_dense_update_embeds_only_new_passages(tmp_path: Path, kind: str) -> None:
    from covrag.embed import default_encoder

    folder = make_folder(tmp_path)
    out = tmp_path / "idx"
    update_index([folder], out, kind=kind)
    encoder = default_encoder()  # what a dense index (and a hybrid one's dense part) embeds with
    texts: list[str] = []
    real = encoder.encode

    def spy(batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        texts.extend(batch)
        return real(batch, *args, **kwargs)

    encoder.encode = spy
    try:
        (folder / "tea.txt").write_text("Oolong tea is partly oxidised.", encoding="utf-8")
        update_index([folder], out, kind=kind)
    finally:
        del encoder.encode
    assert texts == ["Oolong tea is partly oxidised."]
    assert load_index(out).search("partly oxidised oolong", 1)[0].id == "tea.txt#1"


_PDF_FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@_PDF_FUZZ
@given(cuts=st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=8)), max_size=4))
def test_a_damaged_pdf_reads_or_is_unreadable_never_another_error(
    cuts: list[tuple[int, bytes]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "damaged.pdf"
        write_pdf(path)
        data = bytearray(path.read_bytes())
        for at, junk in cuts:
            at %= len(data)
            data[at : at + len(junk)] = junk
        try:
            document = read_document(path, bytes(data))
        except UnreadableError as exc:
            assert str(exc)
        else:
            assert document.text.strip()


@_PDF_FUZZ
@given(data=st.binary(max_size=300))
def test_documents_json_reads_or_is_a_data_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "documents.json").write_bytes(data)
        try:
            read_documents(tmp)
        except DataError:
            pass


@_PDF_FUZZ
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_html_bytes_read_or_are_unreadable(data: bytes) -> None:
    try:
        document = read_document(Path("/nowhere/page.html"), b"<html><body>" + data)
    except UnreadableError as exc:
        assert str(exc)
    else:
        assert document.text.strip() and document.title
