# One image for every NMC process: `nmc migrate`, `nmc api`, `nmc worker`, the simulators.
FROM python:3.11-slim-bookworm
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
