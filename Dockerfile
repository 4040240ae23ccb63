# The production image holds the product alone (the distribution nmc, pyshell/nmc): `nmc
# migrate`, `nmc api`, `nmc worker`, `nmc console`, `nmc admin`. The development tools
# (nmc-dev: the simulators, the pgTAP runner, the demo) and the DV client are not in it; the
# stages below add them for docker-compose.yml's simulators and its test profile.
FROM python:3.11-slim-bookworm AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-client-15 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/nmc
COPY pyproject.toml README.md LICENSE ./
COPY pyshell/nmc ./pyshell/nmc
COPY sql ./sql
COPY schema ./schema
COPY functions ./functions
COPY triggers ./triggers
# Installed, not editable: the package lives in site-packages, its source is not kept; the
# SQL is read from NMC_ROOT.
RUN pip install --no-cache-dir . && rm -rf build pyshell && useradd --system --uid 10001 nmc
ENV NMC_ROOT=/opt/nmc
USER nmc
ENTRYPOINT ["nmc"]

# The development tools on top of the product (`nmc sim …`, `nmc dev pgtap`): the simulators
# of docker-compose.yml run in this image. Never deployed.
FROM runtime AS dev-tools
USER root
COPY pyshell/client ./pyshell/client
COPY pyshell/dev ./pyshell/dev
RUN pip install --no-cache-dir ./pyshell/client ./pyshell/dev && rm -rf pyshell
USER nmc

# The pgTAP suite (`docker compose --profile test run --rm pgtap`, i.e. `nmc dev pgtap`):
# pg_prove and tests_sql on top of the development tools; production needs neither.
FROM dev-tools AS pgtap
USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends libtap-parser-sourcehandler-pgtap-perl \
    && rm -rf /var/lib/apt/lists/*
COPY tests_sql ./tests_sql
USER nmc

# `docker build .` without --target builds the last stage: the runtime image.
FROM runtime
