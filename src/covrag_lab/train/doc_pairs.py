"""Coverage training pairs from real documentation, without labels (issue 47).

The coverage cross-encoder learned "this passage answers this aspect" from debates only. These
pairs teach it the same on technical documents, from three kinds of text this machine has and
that none of the answer benchmark's corpora holds (:data:`EXCLUDED_PACKAGES`): man pages, the
standard library's pydoc text and the READMEs of installed Python distributions. Each document
is cut by covrag's own chunker, so the passages look like what ``covrag ask`` scores.

Two kinds of pair:

- **structure** (no model): an option or setting a man page defines at the start of a line and
  the passage defining it ("What does the -L option of rsync do?"), a function pydoc documents
  and its passage. The hard negatives are what the shipped model got wrong on manuals: the same
  option or function name defined by another tool or module, and a passage of the same document
  that does not mention it.
- **questions** (the embedded LLM, InPars / Promptagator style): for a sample of passages, the
  LLM writes the question a user of that tool would ask that the passage answers, in the user's
  words. A question is kept only when BM25 finds its passage again among the top
  :data:`ROUND_TRIP` (the round trip); its negatives are the best-ranked passages of other
  documents.

Every pair is one topic of the coverage JSONL (:mod:`covrag.schema.dataset`): the aspect, its
passage (``aspects``) and its negatives (``non_aspects``), so ``covrag-lab train coverage`` reads
the file like any labelled dataset. :func:`ask_questions` appends to its output a line per passage,
so a stopped build resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from covrag.types import Passage

logger = logging.getLogger(__name__)

#: Debian packages (and Python distributions) whose documents the answer benchmark holds, or
#: whose documents are close relatives of them: none of their files is read here.
EXCLUDED_PACKAGES = (
    "openssh-client", "openssh-server", "openssh-sftp-server", "curl", "libcurl4", "tar", "gzip",
    "git", "git-man", "grep", "findutils", "bzip2", "zstd", "zlib1g", "python3-pip", "pip",
)  # fmt: skip
#: Standard-library modules whose pydoc text is in the answer benchmark (and their packages).
EXCLUDED_MODULES = (
    "csv", "datetime", "functools", "json", "logging", "os", "pathlib", "shutil", "subprocess",
    "tempfile",
)  # fmt: skip
#: Modules whose pydoc text is read (documented, stable, and not in the benchmark).
MODULES = (
    "argparse", "collections", "itertools", "re", "sqlite3", "zipfile", "tarfile", "hashlib",
    "textwrap", "string", "statistics", "random", "heapq", "bisect", "contextlib", "dataclasses",
    "enum", "socket", "threading", "queue", "http.client", "urllib.request", "urllib.parse",
    "email.message", "base64", "struct", "copy", "pickle", "glob", "fnmatch", "io", "time",
    "calendar", "decimal", "fractions", "math", "uuid", "secrets", "hmac", "gzip", "zlib",
    "configparser", "shlex", "difflib", "operator", "abc", "signal", "select", "selectors",
    "mmap", "array", "weakref", "traceback", "warnings", "inspect", "unittest", "doctest",
    "timeit", "pprint", "locale", "getpass", "platform", "sysconfig", "venv", "zipapp",
    "ipaddress", "html.parser", "xml.etree.ElementTree", "smtplib", "imaplib", "ftplib",
    "sched", "concurrent.futures", "multiprocessing.pool", "asyncio.subprocess", "codecs",
    "unicodedata", "filecmp", "fileinput", "stat", "errno", "ctypes", "binascii", "quopri",
    "mimetypes", "webbrowser", "wsgiref.simple_server", "http.server", "http.cookies",
)  # fmt: skip
#: How far down BM25's ranking a generated question may find its passage and be kept.
ROUND_TRIP = 20
#: Hard negatives per pair.
NEGATIVES = 3

_OPTION_LINE = re.compile(r"(?m)^[ \t]*(--?[A-Za-z0-9][\w-]*)(?=[\s,=\[]|$)")
_SETTING_LINE = re.compile(r"(?m)^[ \t]*([A-Z][a-z]+(?:[A-Z][a-z0-9]+)+)(?=\s)")
_FUNCTION_LINE = re.compile(r"(?m)^[ |]*([a-z_][a-z0-9_]*)\((?!\))")


@dataclass(frozen=True)
class DocPair:
    """One training example: an aspect, the passage that answers it and hard negatives."""

    kind: str
    aspect: str
    positive: Passage
    negatives: tuple[Passage, ...]

    def topic_line(self, number: int) -> dict[str, object]:
        """The coverage-JSONL topic of this pair (one aspect, 1 + ``len(negatives)`` passages)."""
        passages = [
            {**_fields(self.positive), "aspects": ["a"]},
            *({**_fields(n), "non_aspects": ["a"]} for n in self.negatives),
        ]
        return {
            "query_id": f"{self.kind}-{number}",
            "query": self.aspect,
            "split": "train",
            "passages": passages,
            "aspects": [{"id": "a", "text": self.aspect}],
        }


def _fields(passage: Passage) -> dict[str, object]:
    return {"id": passage.id, "text": passage.text, "title": passage.metadata.get("title")}


def excluded_files() -> frozenset[str]:
    """Every file the excluded Debian packages install (empty without dpkg)."""
    files: set[str] = set()
    for package in EXCLUDED_PACKAGES:
        try:
            out = subprocess.run(
                ["dpkg", "-L", package], capture_output=True, text=True, check=False
            ).stdout
        except OSError:
            return frozenset()
        files.update(line.strip() for line in out.splitlines())
    return frozenset(files)


def man_pages(
    limit: int, sections: Sequence[str] = ("1", "5", "8"), per_family: int = 2
) -> list[Path]:
    """Up to ``limit`` English man pages of ``sections``, none of an excluded package, picked by
    a hash of their names (repeatable), at most ``per_family`` of one family (``gcloud_*``,
    ``git-*``: one program's hundreds of subcommand pages would crowd out every other)."""
    skip = excluded_files()
    found: list[Path] = []
    for section in sections:
        folder = Path(f"/usr/share/man/man{section}")
        if folder.is_dir():
            found.extend(
                p for p in folder.iterdir() if p.name.endswith(".gz") and str(p) not in skip
            )
    found.sort(key=lambda p: hashlib.sha256(p.name.encode()).hexdigest())
    chosen: list[Path] = []
    families: dict[str, int] = defaultdict(int)
    for page in found:
        family = re.split(r"[_.-]", page.name, maxsplit=1)[0]
        if families[family] < per_family:
            families[family] += 1
            chosen.append(page)
    return chosen[:limit]


def render_man(page: Path, out_dir: Path) -> Path | None:
    """``page`` as hard-wrapped plain text (``man -P cat | col -bx``, 80 columns), written to
    ``out_dir``; None when man cannot render it or it is under 2,000 characters."""
    env = {**os.environ, "LANG": "C.UTF-8", "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "0"}
    try:
        shown = subprocess.run(
            ["man", "-P", "cat", "-l", str(page)], capture_output=True, env=env, timeout=30
        )
        text = subprocess.run(
            ["col", "-bx"], input=shown.stdout, capture_output=True, timeout=30
        ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if len(text) < 2000:
        return None
    out = out_dir / "man" / (page.name.removesuffix(".gz") + ".txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def render_pydoc(module: str, out_dir: Path) -> Path | None:
    """The pydoc plain text of ``module`` in ``out_dir`` (None when it cannot be imported)."""
    import importlib
    import pydoc

    try:
        plain: Any = pydoc.plaintext  # type: ignore[attr-defined]
        text = pydoc.render_doc(importlib.import_module(module), renderer=plain)
    except Exception:  # noqa: BLE001 - a module that does not import is skipped
        return None
    out = out_dir / "pydoc" / f"{module}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def write_readmes(out_dir: Path, limit: int) -> list[Path]:
    """The long descriptions (READMEs, Markdown) of installed distributions, over 3,000
    characters, excluded ones left out; one file each."""
    from importlib import metadata

    written: list[Path] = []
    seen: set[str] = set()
    for dist in sorted(metadata.distributions(), key=lambda d: d.metadata["Name"] or ""):
        name = (dist.metadata["Name"] or "").lower()
        meta: Any = dist.metadata  # an email.message.Message underneath
        kind = meta.get("Description-Content-Type") or ""
        body = meta.get_payload() or meta.get("Description") or ""
        if name in seen or name in EXCLUDED_PACKAGES or name == "covrag" or "markdown" not in kind:
            continue
        if len(body) < 3000:
            continue
        seen.add(name)
        out = out_dir / "readme" / f"{name}.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(body, encoding="utf-8")
        written.append(out)
        if len(written) >= limit:
            break
    return written


def chunk_files(paths: Iterable[Path], root: Path) -> list[Passage]:
    """Every file's passages, cut as ``covrag index`` cuts them (ids ``kind/name#n``)."""
    from covrag.ingest import Chunker, read_document

    chunker = Chunker()
    passages: list[Passage] = []
    for path in paths:
        doc_id = str(path.relative_to(root))
        passages.extend(chunker.split(read_document(path), doc_id))
    return passages


def document_of(passage: Passage) -> str:
    return passage.id.rsplit("#", 1)[0]


def subject_of(passage: Passage) -> str:
    """The tool or module a passage documents: its file name without section or ending."""
    name = document_of(passage).split("/", 1)[-1]
    name = re.sub(r"\.(txt|md)$", "", name)
    return re.sub(r"\.\d\w*$", "", name)


def _defined(passages: Sequence[Passage], pattern: re.Pattern[str]) -> dict[str, list[Passage]]:
    """Name -> the passages that define it at the start of one of their lines (first
    definition per document)."""
    found: dict[str, list[Passage]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for passage in passages:
        for name in dict.fromkeys(pattern.findall(passage.text)):
            key = (name, document_of(passage))
            if key not in seen:
                seen.add(key)
                found[name].append(passage)
    return found


def _stable(items: Sequence[Passage], salt: str, n: int) -> list[Passage]:
    return sorted(items, key=lambda p: hashlib.sha256((salt + p.id).encode()).hexdigest())[:n]


def structure_pairs(passages: Sequence[Passage], per_name: int = 1) -> Iterator[DocPair]:
    """Option, setting and function pairs with their hard negatives (module docstring): a
    name defined by several documents gives a pair for each of up to ``per_name`` of them."""
    by_doc: dict[str, list[Passage]] = defaultdict(list)
    for p in passages:
        by_doc[document_of(p)].append(p)
    man = [p for p in passages if document_of(p).startswith("man/")]
    py = [p for p in passages if document_of(p).startswith("pydoc/")]
    for kind, pool, patterns in (
        ("option", man, (_OPTION_LINE, _SETTING_LINE)),
        ("function", py, (_FUNCTION_LINE,)),
    ):
        for pattern in patterns:
            for name, defining in sorted(_defined(pool, pattern).items()):
                if len(name) < 2 or name.startswith("_") or name in {"--", "-"}:
                    continue
                for positive in _stable(defining, name, per_name):
                    yield _structure_pair(kind, name, positive, defining, by_doc)


def _structure_pair(
    kind: str,
    name: str,
    positive: Passage,
    defining: Sequence[Passage],
    by_doc: dict[str, list[Passage]],
) -> DocPair:
    subject = subject_of(positive)
    if kind == "option":
        aspect = f"What does the {name} option of {subject} do?"
    else:
        aspect = f"What does {name}() in Python's {subject} module do?"
    others = [p for p in defining if document_of(p) != document_of(positive)]
    token = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
    same_doc = [p for p in by_doc[document_of(positive)] if not token.search(p.text)]
    negatives = _stable(others, name, 2) + _stable(same_doc, name, NEGATIVES)
    return DocPair(kind, aspect, positive, tuple(negatives[:NEGATIVES]))


QUESTION_PROMPT = (
    "Here is a passage from the documentation of {subject}.\n\n"
    "<passage>\n{text}\n</passage>\n\n"
    "Write one question that a user of {subject} would ask and that this passage answers. "
    "Write it in the user's own words, as someone who has a task to do and does not know the "
    "exact option or function name yet; name {subject} in it. Reply with the question only, "
    "on one line."
)


def ask_questions(
    passages: Sequence[Passage],
    chat: Callable[[str], str],
    out: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, str]:
    """passage id -> the LLM's question, appending each new one to ``out`` (JSONL) as it comes
    and reading back what an earlier run wrote, so a stopped build resumes."""
    done: dict[str, str] = {}
    if out.is_file():
        for line in out.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            done[record["id"]] = record["question"]
    with out.open("a", encoding="utf-8") as sink:
        for number, passage in enumerate(passages, start=1):
            if passage.id not in done:
                prompt = QUESTION_PROMPT.format(subject=subject_of(passage), text=passage.text)
                question = _one_line(chat(prompt))
                done[passage.id] = question
                sink.write(json.dumps({"id": passage.id, "question": question}) + "\n")
                sink.flush()
            if progress is not None:
                progress(number, len(passages))
    return done


def _one_line(reply: str) -> str:
    lines = [line.strip().strip('"').strip() for line in reply.strip().splitlines()]
    lines = [re.sub(r"^(question|q)\s*[:.]\s*", "", line, flags=re.I) for line in lines if line]
    return lines[0] if lines else ""


def question_pairs(
    questions: dict[str, str], passages: Sequence[Passage]
) -> tuple[list[DocPair], int]:
    """The round-trip-filtered question pairs, and how many questions the filter dropped."""
    from covrag.retrieve.bm25 import BM25Retriever

    index = BM25Retriever().index(passages)
    by_id = {p.id: p for p in passages}
    kept: list[DocPair] = []
    dropped = 0
    for pid, question in sorted(questions.items()):
        if pid not in by_id or not question.endswith("?") or len(question) < 12:
            dropped += 1
            continue
        ranked = [hit.id for hit in index.search(question, ROUND_TRIP + 10)]
        if pid not in ranked[:ROUND_TRIP]:
            dropped += 1
            continue
        doc = document_of(by_id[pid])
        negatives = [by_id[r] for r in ranked if document_of(by_id[r]) != doc][:NEGATIVES]
        kept.append(DocPair("question", question, by_id[pid], tuple(negatives)))
    return kept, dropped


def write_topics(pairs: Sequence[DocPair], out: Path) -> int:
    """Write ``pairs`` as coverage JSONL to ``out`` atomically; returns the lines written."""
    from covrag.files import atomic_write_text

    lines = [json.dumps(p.topic_line(i), ensure_ascii=False) for i, p in enumerate(pairs, 1)]
    atomic_write_text(out, "".join(line + "\n" for line in lines))
    return len(lines)
