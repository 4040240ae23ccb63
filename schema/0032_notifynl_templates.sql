-- The NotifyNL templates of the berichttypen, known to the NMC: per template (of
-- a Notify service) its placeholder names and version as NotifyNL last answered them, so
-- the intake can refuse a notification whose berichtgegevens lack a placeholder, and a
-- template that disappeared makes its berichttypen unavailable. Read by `nmc admin dv apply`
-- and kept current by the maintenance job `templates` (worker: the HTTP; SQL: what to read
-- and what it means). Names and version only: never a body or a subject.

CREATE TABLE nmc.notifynl_template (
    notify_service text NOT NULL CHECK (pg_catalog.length(notify_service) BETWEEN 1 AND 100),
    template_id uuid NOT NULL,
    staat text NOT NULL DEFAULT 'onbekend'
    CHECK (staat IN ('onbekend', 'beschikbaar', 'verdwenen')),
    versie integer CHECK (versie >= 1),
    -- The placeholder names as NotifyNL lists them, and the same names normalized as
    -- NotifyNL matches them (InsensitiveDict: case, spaces, hyphens and underscores
    -- ignored), in the same order: the intake compares with the second, names the first.
    placeholders text[] NOT NULL DEFAULT '{}',
    sleutels text[] NOT NULL DEFAULT '{}',
    gelezen_op timestamptz,
    verdwenen_op timestamptz,
    verversen_na timestamptz NOT NULL,
    laatste_fout text CHECK (pg_catalog.length(laatste_fout) <= 200),
    PRIMARY KEY (notify_service, template_id),
    CHECK (pg_catalog.cardinality(placeholders) = pg_catalog.cardinality(sleutels)),
    CHECK (pg_catalog.cardinality(placeholders) <= 1000)
);
COMMENT ON TABLE nmc.notifynl_template IS
'The NotifyNL template of each (Notify service, template id) a berichttype names: its '
'placeholder names (as NotifyNL lists them and normalized as it matches them), version '
'and state (onbekend: not read yet, not checked at intake; beschikbaar; verdwenen: '
'NotifyNL answered 404, its berichttypen are unavailable). Filled by `nmc admin dv apply` '
'(nmc.record_template) and the maintenance job templates. Kept forever (a few rows, one '
'per template a berichttype named). Never a body, subject or personalisation value.';
COMMENT ON COLUMN nmc.notifynl_template.verversen_na IS
'When the maintenance job templates reads it again (nmc.markeer_template_verouderd makes '
'it due at once).';
COMMENT ON COLUMN nmc.notifynl_template.laatste_fout IS
'The error class of the last read that failed (an outage, no key): the state is kept.';

CREATE INDEX notifynl_template_due ON nmc.notifynl_template (verversen_na);

-- The job: every 15 minutes by default (herhaal_na is the setting an operator changes).
ALTER TABLE nmc.onderhoudswerk DROP CONSTRAINT onderhoudswerk_werk_check;
ALTER TABLE nmc.onderhoudswerk ADD CONSTRAINT onderhoudswerk_werk_check
CHECK (werk IN ('partities', 'retentie', 'herwrappen', 'templates'));
INSERT INTO nmc.onderhoudswerk (werk, herhaal_na, batch) VALUES
('templates', '15 minutes', 100);

-- The template version NotifyNL rendered for an attempt (its 201's template.version).
ALTER TABLE nmc.poging ADD COLUMN template_versie integer CHECK (template_versie >= 1);
COMMENT ON COLUMN nmc.poging.template_versie IS
'The version of the NotifyNL template NotifyNL rendered for this attempt (the 201''s '
'template.version; NotifyNL always renders the latest): shown in the delivery proof. NULL '
'for attempts of an earlier release or without an answer.';
