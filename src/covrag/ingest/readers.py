"""A user's documents as plain text: the text and title of each file (which files: walk.py).

Supported: ``.txt``, ``.md`` / ``.markdown``, ``.html`` / ``.htm`` and ``.pdf`` (and passage
JSONL, read by :mod:`covrag.ingest.library` as passages, not as text). Each format goes through
a maintained parser, never a regex:

- **PDF**: ``pypdf``'s text extraction, page by page; pages are joined by a blank line. An
  encrypted PDF that opens with the empty password is read; one that needs a password, or has no
  text layer (a scan), is refused with that reason.
- **HTML**: parsed by ``lxml`` (which honours the page's declared encoding) and turned into text
  by ``inscriptis``, which keeps the layout of blocks, lists and tables. Scripts, styles, buttons
  ("copy" under every code example) and form controls go, and so does a heading's permalink
  mark (an in-page link reading "#" or "¶"). A page with a main landmark (``<main>``,
  ``role="main"``) holding text is read from it alone, else without its navigation (``<nav>``,
  ``role="navigation"``) unless that leaves no text: a documentation site's list of every
  module, version pickers and the page's table of contents wrote the names of pages the folder
  does not hold into each page. Inline markup is read as written (inscriptis' ``strict``
  profile: ``path.<span>basename</span>`` is ``path.basename``, not ``path. basename``), and
  an inline element inside ``<pre>`` keeps its line breaks (a code example in
  ``<pre><code>`` is not one long line; two ``<code>`` examples in one ``<pre>`` are two
  lines). The title is the page's ``<title>``, else its first ``<h1>``.
- **Markdown**: rendered by ``markdown-it-py`` (CommonMark) and then read like HTML, so emphasis
  marks, link targets and fences do not end up in passages; the title is the first heading when
  it is a top-level one (``# Title``): a README that opens with ``## Code of Conduct`` is not
  titled "Code of Conduct".
- **Package metadata** (``PKG-INFO``, ``METADATA``, by name): UTF-8 text; the title is the
  package's ``Name`` and ``Summary`` headers (``httpcore: A minimal low-level HTTP client.``).
- **Text**: UTF-8 (a byte-order mark is dropped). The title is the file name.

A document without a title of its own (a PDF whose metadata has none, a page without
``<title>`` or ``<h1>``) is titled by its file name.

Offsets of passages refer to the text these readers return (:attr:`Document.text`).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from covrag.errors import CovragError, MissingExtraError

TEXT = (".txt",)
MARKDOWN = (".md", ".markdown")
HTML = (".html", ".htm")
PDF = (".pdf",)
JSONL = (".jsonl",)
SUPPORTED = (*TEXT, *MARKDOWN, *HTML, *PDF, *JSONL)
#: Files read by name: Python package metadata (core metadata, an email-style header block).
METADATA = ("PKG-INFO", "METADATA")
#: ``[start, end)`` spans of a text.
Spans = tuple[tuple[int, int], ...]


class UnreadableError(CovragError):
    """A file that cannot be turned into text; the message is the reason, for the skip report."""


@dataclass(frozen=True)
class Document:
    """One file's extracted text.

    Attributes:
        source: The file, as an absolute path.
        title: A human title (HTML ``<title>`` or first ``<h1>``, a Markdown file's opening
            top-level heading, PDF metadata title, package metadata ``Name: Summary``, or the
            file name).
        text: The extracted text; passages' offsets index into it.
        sha256: Hash of the file's bytes (what an incremental update compares).
        pages: For a PDF, where each page with text starts in ``text`` (page numbers are
            1-based positions in the file); empty for other types.
        verbatim: ``[start, end)`` spans of ``text`` to keep as written, line breaks and
            indentation included: the page's preformatted blocks (HTML ``<pre>``, a Markdown
            code block), which unwrapping would otherwise join into one line, a line comment
            (``// ...``) then running over the code after it (:mod:`covrag.ingest.unwrap`).
    """

    source: str
    title: str
    text: str
    sha256: str
    pages: tuple[tuple[int, int], ...] = ()
    verbatim: Spans = ()

    def page_at(self, offset: int) -> int | None:
        """The PDF page a character of ``text`` lies on (None for other types)."""
        page = None
        for start, number in self.pages:
            if start > offset:
                break
            page = number
        return page


def file_hash(data: bytes) -> str:
    """The SHA-256 of a file's bytes, as hex."""
    return hashlib.sha256(data).hexdigest()


def read_document(path: Path, data: bytes | None = None) -> Document:
    """The text and title of one file (``data``: its bytes, when already read).

    Raises:
        UnreadableError: the file cannot be read or holds no text; the message says why.
        MissingExtraError: a parser of the ``docs`` extra is not installed.
    """
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UnreadableError(exc.strerror or type(exc).__name__) from None
    suffix = path.suffix.lower()
    pages: tuple[tuple[int, int], ...] = ()
    verbatim: Spans = ()
    if suffix in PDF:
        title, text, pages = _pdf(data)
    elif suffix in HTML:
        title, (text, verbatim) = _html(data)
    elif suffix in MARKDOWN:
        title, (text, verbatim) = _markdown(_utf8(data))
    elif suffix in TEXT:
        title, text = None, _utf8(data)
    elif path.name in METADATA:
        text = _utf8(data)
        title = _package_title(text)
    else:
        raise UnreadableError(f"unsupported file type {suffix or '(none)'}")
    if not text.strip():
        raise UnreadableError("no text in the file")
    title = " ".join((title or "").split()) or path.stem
    return Document(str(path.resolve()), title, text, file_hash(data), pages, verbatim)


def _utf8(data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise UnreadableError("binary data, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableError(
            f"not UTF-8 text (byte {exc.start}); save it as UTF-8 and index again"
        ) from None


def _package_title(text: str) -> str | None:
    """``Name: Summary`` from a core metadata header block (PKG-INFO, METADATA)."""
    import email.parser

    headers = email.parser.HeaderParser().parsestr(text, headersonly=True)
    name, summary = headers.get("Name"), headers.get("Summary")
    if not name:
        return None
    summary = " ".join(str(summary or "").split())
    return f"{name}: {summary}" if summary and summary != "UNKNOWN" else str(name)


def _pdf(data: bytes) -> tuple[str | None, str, tuple[tuple[int, int], ...]]:
    """The title, the text (pages joined by a blank line) and ``(offset, page number)`` of
    each page with text."""
    try:
        from pypdf import PdfReader
    except ImportError as exc:
        raise MissingExtraError("pypdf", "docs") from exc
    # pypdf logs every repair it makes ("EOF marker not found"); a file it cannot read is
    # reported once, as a skip with the reason, and one it can read needs no warning.
    quiet = logging.getLogger("pypdf")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableError("encrypted PDF (needs a password)")
        pages = [page.extract_text() or "" for page in reader.pages]
        title = reader.metadata.title if reader.metadata is not None else None
    except UnreadableError:
        raise
    except Exception as exc:
        # pypdf raises its own errors for damaged files, and plain ones (IndexError,
        # RecursionError, ...) for some malformed objects: a file it cannot parse is skipped
        # with the parser's words, never the end of the whole run.
        raise UnreadableError(f"not a readable PDF ({type(exc).__name__}: {exc})") from None
    finally:
        quiet.setLevel(level)
    parts: list[str] = []
    starts: list[tuple[int, int]] = []
    offset = 0
    for number, page in enumerate(pages, start=1):
        if page.strip():
            starts.append((offset, number))
            parts.append(page.strip())
            offset += len(parts[-1]) + 2
    text = "\n\n".join(parts)
    if not text:
        raise UnreadableError("PDF without a text layer (a scan? run OCR on it first)")
    return (title if isinstance(title, str) else None), text, tuple(starts)


#: Inline elements that take the white space of the block around them (inside ``<pre>``, its
#: line breaks); inscriptis gives an element it has no rule for white space "normal".
_INLINE = (
    "a", "abbr", "b", "cite", "code", "em", "i", "kbd", "mark", "q", "s", "samp", "small",
    "span", "strong", "sub", "sup", "tt", "u", "var",
)  # fmt: skip
#: What is never a document's text: scripts and styles, and the page's controls.
_NOT_TEXT = ("script", "style", "noscript", "template", "button", "select")
#: A heading's permalink: an in-page link whose whole text is one of these marks.
_PERMALINK_MARKS = frozenset({"#", "\u00b6", "\u00a7", "\U0001f517"})


@functools.cache
def _html_css() -> dict[str, Any]:
    """inscriptis' ``strict`` profile, with :data:`_INLINE` inheriting white space."""
    from inscriptis.css_profiles import CSS_PROFILES
    from inscriptis.html_properties import Display
    from inscriptis.model.html_element import HtmlElement

    css = dict(CSS_PROFILES["strict"])
    for tag in _INLINE:
        if tag not in css:
            css[tag] = HtmlElement(tag, display=Display.inline, whitespace=None)
    return css


def _html_text(tree: Any) -> tuple[str, Spans]:
    """The text of ``tree``, and the spans of that text its ``<pre>`` blocks wrote (inscriptis'
    annotations), less the line breaks at their ends."""
    try:
        from inscriptis import Inscriptis
        from inscriptis.model.config import ParserConfig
    except ImportError as exc:
        raise MissingExtraError("inscriptis", "docs") from exc
    reader = Inscriptis(tree, ParserConfig(css=_html_css(), annotation_rules={"pre": ["pre"]}))
    raw: str = reader.get_text()
    text = raw.strip("\n")
    lead = len(raw) - len(raw.lstrip("\n"))
    spans = set()
    for note in reader.get_annotations():
        block = raw[note.start : note.end]
        start = note.start + len(block) - len(block.lstrip("\n")) - lead
        end = note.end - (len(block) - len(block.rstrip("\n"))) - lead
        if block.strip():
            spans.add((max(start, 0), min(end, len(text))))
    return text, tuple(sorted(spans))


def _parse_html(data: bytes | str) -> Any:
    try:
        import lxml.html
    except ImportError as exc:
        raise MissingExtraError("lxml", "docs") from exc
    try:
        return lxml.html.document_fromstring(data)
    except Exception as exc:  # lxml's ParserError, XMLSyntaxError, ValueError on odd bytes
        raise UnreadableError(f"not readable HTML ({type(exc).__name__}: {exc})") from None


def _html(data: bytes) -> tuple[str | None, tuple[str, Spans]]:
    tree = _parse_html(data)
    for element in list(tree.iter(*_NOT_TEXT)):
        element.drop_tree()
    heading = tree.find(".//title")
    if heading is None or not heading.text_content().strip():
        heading = tree.find(".//h1")
    title = heading.text_content() if heading is not None else None
    for pre in tree.iter("pre"):  # two examples in one block (CommonJS, then ES module)
        for code in pre.findall("code")[:-1]:
            after = code.getnext()
            if after is not None and after.tag == "code":
                code.tail = (code.tail or "") + "\n"
    for link in list(tree.iter("a")):
        if (link.get("href") or "").startswith("#") and link.text_content().strip() in (
            _PERMALINK_MARKS
        ):
            link.drop_tree()
    return title, _main_text(tree)


def _main_text(tree: Any) -> tuple[str, Spans]:
    """The text of the page's main content: its ``<main>`` (or ``role="main"``) element when
    that holds text, else the page without its navigation, else the whole page."""
    for main in tree.xpath("//main|//*[@role='main']"):
        read = _html_text(main)
        if read[0].strip():
            return read
    if not tree.xpath("//nav|//*[@role='navigation']"):
        return _html_text(tree)
    trimmed = copy.deepcopy(tree)
    for element in trimmed.xpath("//nav|//*[@role='navigation']"):
        if element.getparent() is not None:
            element.drop_tree()
    read = _html_text(trimmed)
    return read if read[0].strip() else _html_text(tree)


#: MyST (Sphinx) directives written as a fence (```` ```{note} ````) that hold prose, not code:
#: their text is hard-wrapped like the paragraphs around it and is read like them.
_PROSE_DIRECTIVES = frozenset(
    "admonition attention caution danger deprecated dropdown error hint important note seealso "
    "sidebar tab tab-item tab-set tip topic versionadded versionchanged warning".split()
)


@functools.cache
def _markdown_parser() -> Any:
    """One CommonMark parser for every file (making one costs more than parsing a short file;
    it keeps no state between documents)."""
    from markdown_it import MarkdownIt  # a dependency of rich, pinned in the docs extra

    return MarkdownIt("commonmark")


def _markdown(source: str) -> tuple[str | None, tuple[str, Spans]]:
    md = _markdown_parser()
    tokens = md.parse(source)
    # The title is the first heading, and only when it is a top-level one.
    first = next((i for i, t in enumerate(tokens[:-1]) if t.type == "heading_open"), None)
    title = None
    if first is not None and tokens[first].tag == "h1" and tokens[first + 1].type == "inline":
        # The heading's words without its markup (emphasis marks, link targets).
        parts = tokens[first + 1].children or []
        title = "".join(t.content for t in parts if t.type in ("text", "code_inline"))
    if not source.strip():
        return title, ("", ())
    tree = _parse_html(md.renderer.render(tokens, md.options, {}))
    for code in tree.xpath("//pre/code[starts-with(@class, 'language-{')]"):
        directive = code.get("class", "")[len("language-{") :].partition("}")[0]
        if directive in _PROSE_DIRECTIVES:  # MyST's note or version change: prose, not code
            code.getparent().tag = "div"
    return title, _html_text(tree)
