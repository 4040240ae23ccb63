-- NotifyNL's real limits per service: a pace that neither its rolling 60-second window nor
-- upstream's token bucket refuses, and its daily send limit (UTC day). The per-service
-- settings live on nmc.notify_service; the state of the pace and of the day in one row per
-- service and kind, nmc.verzendtempo.

ALTER TABLE nmc.notify_service
ALTER COLUMN budget_per_minuut SET DEFAULT 3000;

ALTER TABLE nmc.notify_service
ADD COLUMN burst integer CHECK (burst BETWEEN 1 AND 1000),
ADD COLUMN dag_limiet integer NOT NULL DEFAULT 250000 CHECK (dag_limiet > 0);

COMMENT ON COLUMN nmc.notify_service.budget_per_minuut IS
'NotifyNL''s rate limit of the service (requests per 60 seconds, NotifyNL''s default '
'3000). Sends get it less the reconciliation share, paced evenly (nmc.take_budget).';
COMMENT ON COLUMN nmc.notify_service.burst IS
'The most sends taken at once after a quiet spell (NULL: one second of the send rate). '
'At most 1000, the size of upstream NotifyNL''s token bucket.';
COMMENT ON COLUMN nmc.notify_service.dag_limiet IS
'NotifyNL''s daily e-mail limit of the service (default 250000 for a live service), '
'counted per UTC day as NotifyNL counts it.';

CREATE TABLE nmc.verzendtempo (
    notify_service text NOT NULL CHECK (pg_catalog.length(notify_service) BETWEEN 1 AND 100),
    soort text NOT NULL CHECK (soort IN ('verzenden', 'navraag')),
    tat timestamptz NOT NULL,
    laatst_toegekend integer NOT NULL DEFAULT 0 CHECK (laatst_toegekend >= 0),
    vertraagd_tot timestamptz,
    dag date NOT NULL,
    dag_gebruikt integer NOT NULL DEFAULT 0 CHECK (dag_gebruikt >= 0),
    dag_op boolean NOT NULL DEFAULT false,
    tempo_weigeringen bigint NOT NULL DEFAULT 0 CHECK (tempo_weigeringen >= 0),
    dag_weigeringen bigint NOT NULL DEFAULT 0 CHECK (dag_weigeringen >= 0),
    PRIMARY KEY (notify_service, soort)
);
COMMENT ON TABLE nmc.verzendtempo IS
'The pace and the day of one NotifyNL service per kind (verzenden, navraag): one row, '
'taken with one upsert under its row lock (nmc.take_budget), so the rows stay two per '
'service however long the NMC runs (kept while the service is named). No refiller: the pace '
'is a virtual schedule (GCRA).';
COMMENT ON COLUMN nmc.verzendtempo.tat IS
'The theoretical arrival time of the next token (GCRA): tokens are granted while it is '
'at most the burst tolerance ahead of the clock; each grant moves it on by one interval.';
COMMENT ON COLUMN nmc.verzendtempo.laatst_toegekend IS
'Tokens granted by the latest take, so the upsert returns its grant in one statement.';
COMMENT ON COLUMN nmc.verzendtempo.vertraagd_tot IS
'Until when the pace is halved after NotifyNL answered a RateLimitError.';
COMMENT ON COLUMN nmc.verzendtempo.dag IS
'The UTC day dag_gebruikt and dag_op count for; a take on a later day starts it anew.';
COMMENT ON COLUMN nmc.verzendtempo.dag_gebruikt IS 'Sends granted on that UTC day.';
COMMENT ON COLUMN nmc.verzendtempo.dag_op IS
'NotifyNL answered TooManyRequestsError on that day: nothing more is granted until 00:00 UTC.';
COMMENT ON COLUMN nmc.verzendtempo.tempo_weigeringen IS
'RateLimitErrors NotifyNL answered for this service and kind (a counter).';
COMMENT ON COLUMN nmc.verzendtempo.dag_weigeringen IS
'TooManyRequestsErrors NotifyNL answered for this service (a counter).';

CREATE TYPE nmc.verzenddag_stand AS (
    notify_service text,
    per_minuut integer,
    burst integer,
    dag date,
    gebruikt integer,
    dag_limiet integer,
    dag_op boolean,
    tempo_weigeringen bigint,
    dag_weigeringen bigint
);
COMMENT ON TYPE nmc.verzenddag_stand IS
'A NotifyNL service''s send pace and UTC day as the console and the metrics show them '
'(nmc.verzenddag).';
