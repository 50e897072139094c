"""One schema per record for every file and wire format covrag reads or writes.

Each module holds the pydantic models of one format and converts them to and from the frozen
records of :mod:`covrag.types` (the records import nothing of this package):

- :mod:`~covrag.schema.dataset`: a line of coverage JSONL (a topic with its pool and labels);
- :mod:`~covrag.schema.runfile`: the run file of ``covrag select --run-json`` (the server's
  trace and coverage matrix reuse its models);
- :mod:`~covrag.schema.answer`: a run file's answer (sentences with their support checks, and
  the sentences the check dropped);
- :mod:`~covrag.schema.ask`: the run file of ``covrag ask`` (a run file with the plan, searches,
  drafts and costs);
- :mod:`~covrag.schema.generation`: the drafts, critiques and LLM and stage costs of generating
  an answer (the ``generation`` and ``costs`` blocks of an ask run file);
- :mod:`~covrag.schema.bench`: the ``summary.json`` of ``covrag bench``;
- :mod:`~covrag.schema.index`: the ``manifest.json`` of a saved index;
- :mod:`~covrag.schema.documents`: the ``documents.json`` of an index of a user's files;
- :mod:`~covrag.schema.cards`: the model cards written beside trained models;
- :mod:`~covrag.schema.plan`: what ``covrag plan --json`` prints;
- :mod:`~covrag.schema.http`, :mod:`~covrag.schema.http_answer`, :mod:`~covrag.schema.http_plan`:
  the server's requests and replies (``/v1/select``, ``/v1/answer``, ``/v1/plan``, errors);
- :mod:`~covrag.schema.llm`: the structured replies asked of an LLM;
- :mod:`~covrag.schema.writer`: how an answer is written (``WriterPolicy``), which ``covrag ask``
  and ``/v1/answer`` share.

Records are built validated when written (a record that would not read back is never written)
and checked when read: a bad value raises :class:`~covrag.errors.DataError` naming file, line
and field (:func:`read_model`).
"""

from __future__ import annotations

from covrag.schema._base import RecordError, field_path, read_model

__all__ = ["RecordError", "field_path", "read_model"]
