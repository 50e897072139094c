"""A document's title is its own (HTML title, PDF metadata, a Markdown file's top heading,
package metadata), else its file name."""

from __future__ import annotations

from pathlib import Path

import pytest

from covrag.ingest import find_files, read_document, update_index
from covrag.ingest.library import read_documents
from ingest_support import write_pdf

pytest.importorskip("inscriptis")

PKG_INFO = """Metadata-Version: 2.1
Name: teapot
Version: 1.0
Summary: Brew tea
  over HTTP.
License: MIT

Teapot brews tea when asked politely.
"""


def _title(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return read_document(path).title


@pytest.mark.parametrize(
    ("source", "title"),
    [
        ("# Brewing *green* tea\n\nUse water at 80 degrees.", "Brewing green tea"),
        ("Brewing guide\n=============\n\nUse water at 80 degrees.", "Brewing guide"),
        # Only a top-level heading that comes first is a title.
        ("## Code of Conduct\n\nBe kind.\n\n# Brewing tea\n\nSteep it.", "README"),
        ("Intro text.\n\n## Usage\n\nSteep it.", "README"),
        ("No heading at all, only text.", "README"),
    ],
)
def test_markdown_title_is_its_opening_top_level_heading(
    tmp_path: Path, source: str, title: str
) -> None:
    assert _title(tmp_path / "README.md", source) == title


def test_html_title_then_first_h1_then_file_name(tmp_path: Path) -> None:
    page = "<html><head><title> Cocoa\n farming </title></head><body><h1>Cocoa</h1>x</body></html>"
    assert _title(tmp_path / "a.html", page) == "Cocoa farming"
    assert _title(tmp_path / "b.html", "<html><body><h1>Beans</h1><p>x</p></body></html>") == (
        "Beans"
    )
    assert _title(tmp_path / "page.html", "<html><body><p>Only text.</p></body></html>") == "page"


def test_pdf_title_is_its_metadata_title_else_the_file_name(tmp_path: Path) -> None:
    write_pdf(tmp_path / "herbal.pdf", ("Rooibos has no caffeine.",), "Herbal infusions")
    assert read_document(tmp_path / "herbal.pdf").title == "Herbal infusions"
    write_pdf(tmp_path / "untitled.pdf", ("Rooibos has no caffeine.",), "")
    assert read_document(tmp_path / "untitled.pdf").title == "untitled"


def test_package_metadata_is_titled_by_name_and_summary_and_found_in_folders(
    tmp_path: Path,
) -> None:
    info = tmp_path / "teapot-1.0.dist-info"
    info.mkdir()
    assert _title(info / "METADATA", PKG_INFO) == "teapot: Brew tea over HTTP."
    assert _title(tmp_path / "PKG-INFO", PKG_INFO.replace("Summary", "X-Other")) == "teapot"
    assert "brews tea when asked politely" in read_document(info / "METADATA").text
    files, missing = find_files([tmp_path, info / "METADATA"])
    assert sorted(files.values()) == ["PKG-INFO", "teapot-1.0.dist-info/METADATA"]
    assert missing == []
    report = update_index([tmp_path], tmp_path.parent / "idx")
    listing = read_documents(tmp_path.parent / "idx")
    assert report.documents == 2 and listing is not None
    assert {d.title for d in listing.documents} == {"teapot: Brew tea over HTTP.", "teapot"}


def test_plain_text_is_titled_by_its_file_name(tmp_path: Path) -> None:
    assert _title(tmp_path / "LICENSE-notes.txt", "Permission is granted.") == "LICENSE-notes"
