# syntax=docker/dockerfile:1.7
# Tandem sql: text-to-SQL, schema catalog, the read-only gate, execution.
# Build from the repository root (the context must be the repo, see .dockerignore):
#   docker build -f infra/docker/sql.Dockerfile -t tandem/sql:dev .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: dependencies, generated code, the wheel ----
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
 && /opt/venv/bin/python -c "import services.sql, tandem.v1.gateway_service_pb2"

# ---- runtime: the venv, the probe, a non-root user ----
FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TANDEM_DATA_DIR=/var/lib/tandem \
    SQL_HOST=0.0.0.0 \
    SQL_PORT=50055
RUN groupadd --system --gid 10001 tandem \
 && useradd --system --uid 10001 --gid tandem --home-dir /var/lib/tandem \
      --shell /usr/sbin/nologin tandem \
 && mkdir -p /var/lib/tandem/cache \
 && mkdir -p /etc/tandem/tls \
 && chown -R tandem:tandem /var/lib/tandem /etc/tandem/tls
COPY --from=build /opt/venv /opt/venv
COPY infra/docker/grpc_health_probe.py /usr/local/bin/grpc-health-probe
USER 10001:10001
WORKDIR /var/lib/tandem
# Mutual TLS between services: the deployment mounts this service's certificate
# bundle (`tandem certs issue DIR --split`) here.
ENV TANDEM_TLS_DIR=/etc/tandem/tls
EXPOSE 50055
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "/usr/local/bin/grpc-health-probe", "--addr", "127.0.0.1:50055", "--tls-dir", "/etc/tandem/tls", "--identity", "sql"]
STOPSIGNAL SIGTERM
CMD ["python", "-m", "services.sql"]
