"""Drop-in replacements for the MMR / diversity step of the RAG frameworks people already use.

- :class:`covrag.integrations.langchain.CoverageCompressor`: a LangChain document compressor
  (use it in a ``ContextualCompressionRetriever`` or call ``compress_documents``).
- :class:`covrag.integrations.llama_index.CoverageNodePostprocessor`: a LlamaIndex node
  postprocessor (``node_postprocessors=[...]`` of a query engine).
- :class:`covrag.integrations.haystack.CoverageRanker`: a Haystack 2.x/3.x component
  (``run(documents, query)`` -> ``{"documents": ...}``).

All three share :class:`CoverageChoice`: its fields are their options (:data:`OPTIONS`), with the
same names, defaults (:data:`DEFAULTS`) and help in each, so the same documents, query, aspects and
budget give the same selection in every framework. Each keeps the framework's own document objects
(copies with the same ids, content and metadata), never truncates one, and records under the
``covrag`` metadata key the rank, the aspects each document newly covers and what is still
uncovered.

The framework modules are imported only when used; without the framework installed they raise
:class:`~covrag.errors.MissingExtraError` naming the ``integrations`` extra.
"""

from covrag.integrations._engine import (
    DEFAULTS,
    METADATA_KEY,
    OPTIONS,
    Choice,
    CoverageChoice,
    Pick,
    resolve_aspects,
)

__all__ = [
    "DEFAULTS",
    "METADATA_KEY",
    "OPTIONS",
    "Choice",
    "CoverageChoice",
    "Pick",
    "resolve_aspects",
]
