-- Lifecycle settings: one typed row, read by the SQL rules (config, not code).

CREATE TABLE nmc.instellingen (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    lease_duur interval NOT NULL DEFAULT '2 minutes' CHECK (lease_duur > '0 seconds'),
    max_pogingen integer NOT NULL DEFAULT 5 CHECK (max_pogingen >= 1),
    uitstel_basis interval NOT NULL DEFAULT '5 seconds' CHECK (uitstel_basis > '0 seconds'),
    uitstel_max interval NOT NULL DEFAULT '10 minutes' CHECK (uitstel_max > '0 seconds'),
    vaststellingstermijn interval NOT NULL DEFAULT '7 days',
    callback_venster interval NOT NULL DEFAULT '30 minutes',
    notifynl_bewaartermijn interval NOT NULL DEFAULT '7 days',
    wistermijn interval NOT NULL DEFAULT '7 days',
    bewijs_bewaartermijn interval NOT NULL DEFAULT '1 year',
    controle_interval interval NOT NULL DEFAULT '5 minutes'
);
INSERT INTO nmc.instellingen DEFAULT VALUES;
COMMENT ON TABLE nmc.instellingen IS
'One row of lifecycle settings: lease length, attempts before a task is exhausted, '
'deferral backoff, settlement term (MEBV, 7 days) plus NotifyNL''s callback window, '
'NotifyNL''s retention (reconciliation horizon), erase term, delivery-proof retention, '
'watchdog interval. Kept forever; changed by an operator.';
