# One image for every NMC process: `nmc migrate`, `nmc api`, `nmc worker`, the simulators.
FROM python:3.11-slim-bookworm AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-client-15 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/nmc
COPY pyproject.toml README.md ./
COPY pyshell ./pyshell
COPY sql ./sql
COPY schema ./schema
COPY functions ./functions
COPY triggers ./triggers
RUN pip install --no-cache-dir -e . && useradd --system --uid 10001 nmc
ENV NMC_ROOT=/opt/nmc
USER nmc
ENTRYPOINT ["nmc"]

# The pgTAP suite (`docker compose --profile test run --rm pgtap`, i.e. `nmc dev pgtap`):
# pg_prove and tests_sql on top of the runtime image; production needs neither.
FROM runtime AS pgtap
USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends libtap-parser-sourcehandler-pgtap-perl \
    && rm -rf /var/lib/apt/lists/*
COPY tests_sql ./tests_sql
USER nmc

# `docker build .` without --target builds the last stage: the runtime image.
FROM runtime
