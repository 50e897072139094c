"""A folder of real documents for the ingestion tests: .txt, .md, .html and a real PDF."""

from __future__ import annotations

from pathlib import Path

import pytest

TEA = (
    "Green tea is brewed with water at about 80 degrees, which keeps it from turning bitter. "
    "It holds catechins, antioxidants that studies link to lower blood pressure.\n\n"
    "Black tea is fully oxidised before drying. Its caffeine content is higher than that of "
    "green tea, about 47 milligrams a cup.\n"
)
COFFEE_MD = """# Coffee and health

Coffee is the **main source** of caffeine for most adults. See [the review](https://example.org).

## Sleep

Caffeine taken within six hours of bedtime shortens sleep by about an hour.

- Decaffeinated coffee keeps most of the flavour.
- Cold brew has less acid.
"""
COCOA_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>Cocoa farming</title>
<style>p { color: red }</style><script>var tracking = 1;</script></head>
<body><h1>Cocoa</h1>
<p>Cocoa beans are fermented for five days before they are dried in the sun.</p>
<p>Most cocoa comes from small farms in C&ocirc;te d'Ivoire and Ghana.</p>
</body></html>
"""
PDF_PAGES = (
    "Herbal infusions such as rooibos contain no caffeine at all. "
    "Rooibos grows only in the Cederberg mountains of South Africa.",
    "Chamomile infusions are drunk before sleep because they contain apigenin.",
)
PDF_TITLE = "Herbal infusions"


def write_pdf(path: Path, pages: tuple[str, ...] = PDF_PAGES, title: str = PDF_TITLE) -> None:
    """A real PDF with a text layer, one page per string (fpdf2, core Helvetica font)."""
    fpdf = pytest.importorskip("fpdf")
    pdf = fpdf.FPDF()
    pdf.set_title(title)
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    path.write_bytes(bytes(pdf.output()))


def make_folder(root: Path) -> Path:
    """``root/docs`` with one file of each type (the Markdown one in a sub-folder)."""
    folder = root / "docs"
    (folder / "guides").mkdir(parents=True)
    (folder / "tea.txt").write_text(TEA, encoding="utf-8")
    (folder / "guides" / "coffee.md").write_text(COFFEE_MD, encoding="utf-8")
    (folder / "cocoa.html").write_text(COCOA_HTML, encoding="utf-8")
    write_pdf(folder / "herbal.pdf")
    return folder
