"""Datasets: the coverage JSONL format, bundled datasets and TREC runs."""

from covrag.data.bundled import BUNDLED, load_dataset, resolve_dataset
from covrag.data.jsonl import iter_topics, read_topics, write_topics
from covrag.data.trec import Run, read_run, write_run

__all__ = [
    "BUNDLED",
    "Run",
    "iter_topics",
    "load_dataset",
    "read_run",
    "read_topics",
    "resolve_dataset",
    "write_run",
    "write_topics",
]
