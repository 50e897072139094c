"""HTML as a documentation site writes it: the text a reader of the page sees, as it reads
(the shapes of the Node.js API reference's pages, which the answer benchmark's nodejs corpus
holds)."""

from __future__ import annotations

from pathlib import Path

from covrag.ingest import read_document
from covrag.ingest.chunk import Chunker


def _text(body: str) -> str:
    head = '<head><meta charset="utf-8"><title>Path</title></head>'
    page = f"<html>{head}<body>{body}</body></html>"
    return read_document(Path("/docs/page.html"), page.encode()).text


def test_inline_markup_is_read_as_written_and_code_keeps_its_lines() -> None:
    text = _text(
        "<p>Use path.<span>basename</span>(<span>'x'</span>) to get it.</p>"
        "<pre><code>const a = 1;\nconst b = 2; // two\n<span>const</span> c = 3;</code>"
        "<code>import path from 'node:path';</code><button>copy</button></pre>"
    )
    assert "Use path.basename('x') to get it." in text
    # the example keeps its lines; its two forms are two lines; the copy button is no text
    assert "const a = 1;\nconst b = 2; // two\nconst c = 3;\nimport path from 'node:path';" in text
    assert "copy" not in text


def test_a_permalink_mark_goes_and_an_in_page_link_stays() -> None:
    text = _text(
        '<h3>path.join([...paths])<span><a class="mark" href="#path_join">#</a></span></h3>'
        '<h3>Closures<a class="headerlink" href="#closures">\u00b6</a></h3>'
        '<p>See <a href="#path_join">path.join()</a> and issue <a href="/i/5">#</a>.</p>'
    )
    assert "path.join([...paths])\n" in text and "Closures\n" in text
    assert "\u00b6" not in text
    assert "See path.join() and issue #." in text  # a link elsewhere keeps its text


def test_the_main_landmark_is_read_alone_else_the_page_without_navigation() -> None:
    site = (
        '<a class="skip-to-content" href="#apicontent">Skip to content</a>'
        '<div role="navigation"><ul><li>Worker threads</li><li>Zlib</li></ul></div>'
        "<header><h1>Node.js documentation</h1><ul><li>Other versions</li></ul></header>"
    )
    main = '<div role="main" id="apicontent"><h2>Path</h2><p>The path module.</p></div>'
    assert _text(site + main) == "Path\n\nThe path module."
    # no main landmark: the navigation goes, the rest stays
    text = _text(site + "<div><h2>Path</h2><p>The path module.</p></div>")
    assert "Worker threads" not in text and "Zlib" not in text
    assert "Node.js documentation" in text and "The path module." in text
    # a page that is all navigation (a site's index) keeps it: it is the page's text
    assert "Worker threads" in _text("<nav><ul><li>Worker threads</li></ul></nav>")
    # an empty main landmark is no main content
    assert "The path module." in _text("<main> </main><p>The path module.</p>")


def test_an_index_built_by_another_reader_is_read_again() -> None:
    # what decides the passages includes how HTML is read, so an older index re-reads its files
    assert Chunker().settings["reader"] == 3


EXAMPLE = (
    "<p>Read a file line by line\nwith readline:</p>"
    "<pre><code>const rl = createInterface({\n  input: stream,\n  crlfDelay: Infinity,\n});\n"
    "for await (const line of rl) {\n  // Each line is here.\n  console.log(line);\n}</code></pre>"
    "<p>The loop\nends with the file.</p>"
)


def test_a_code_example_keeps_its_lines_in_the_passages() -> None:
    document = read_document(
        Path("/docs/readline.html"), f"<html><body>{EXAMPLE}</body></html>".encode()
    )
    ((start, end),) = document.verbatim
    assert document.text[start:end].startswith("const rl = createInterface({\n  input")
    assert document.text[start:end].endswith("console.log(line);\n}")
    (passage,) = Chunker().split(document, "readline.html")
    # the prose around it is unwrapped; the code keeps its lines and indentation, so the line
    # comment does not run over console.log (joined: "// Each line is here. console.log(line);")
    assert passage.text.startswith("Read a file line by line with readline:\n\nconst rl =")
    assert "  // Each line is here.\n  console.log(line);\n}" in passage.text
    assert passage.text.endswith("The loop ends with the file.")


def test_a_markdown_code_block_is_kept_and_a_myst_note_is_prose() -> None:
    source = (
        "# Caching\n\nRun\n\n```console\n$ pip cache dir\n$ pip cache purge\n```\n\n"
        "```{note}\nThe cache is\nsafe to delete.\n```\n"
    )
    document = read_document(Path("/docs/caching.md"), source.encode())
    assert [document.text[a:b] for a, b in document.verbatim] == [
        "$ pip cache dir\n$ pip cache purge"
    ]
    (passage,) = Chunker().split(document, "caching.md")
    assert "$ pip cache dir\n$ pip cache purge" in passage.text
    assert "The cache is safe to delete." in passage.text
