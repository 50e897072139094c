"""Retrieval: candidate pools from BM25, dense embeddings (plain or coverage-trained: CoveR),
their fusion, or one query per aspect.

Every retriever has one verb, ``search(query, k)``, returning passages best first with ``score``
set; ``search_many`` is its batched form. Indexes save to and load from a folder.
"""

from covrag.retrieve.base import IndexRetriever, NotIndexedError, Ranking, Retriever
from covrag.retrieve.bm25 import BM25Retriever
from covrag.retrieve.corpus import corpus_from_topics, load_corpus, read_corpus
from covrag.retrieve.cover import CoverRetriever, cover_query
from covrag.retrieve.dense import DenseRetriever
from covrag.retrieve.fusion import HybridRetriever, reciprocal_rank_fusion
from covrag.retrieve.kinds import INDEX_KINDS, load_index, make_retriever
from covrag.retrieve.multi_query import MultiQueryRetriever

__all__ = [
    "INDEX_KINDS",
    "BM25Retriever",
    "CoverRetriever",
    "DenseRetriever",
    "HybridRetriever",
    "IndexRetriever",
    "MultiQueryRetriever",
    "NotIndexedError",
    "Ranking",
    "Retriever",
    "corpus_from_topics",
    "cover_query",
    "load_corpus",
    "load_index",
    "make_retriever",
    "read_corpus",
    "reciprocal_rank_fusion",
]
