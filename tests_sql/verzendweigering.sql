-- NotifyNL's send-time refusals by whose fault they are (notifynl-contract.md, Errors): the
-- recipient's address, a request NotifyNL cannot render, and our own configuration.
BEGIN;
SELECT plan(28);
\ir fixtures/setup.sql

-- Accepts a notification (decentraal, or centraal with p_centraal) and claims its send.
CREATE FUNCTION pg_temp.claim(p_ref text, p_centraal boolean DEFAULT false) RETURNS TABLE (
    taak bigint, epoch integer, poging uuid, id uuid
)
LANGUAGE plpgsql AS $$
DECLARE v_id uuid;
BEGIN
    IF p_centraal THEN
        SELECT r.notificatie_id INTO v_id
        FROM nmc.intake_notificatie_v3(
            gen_random_uuid(), 1001, 'aanslag', 'centraal', pg_temp.b32(p_ref), 1::smallint,
            pg_temp.b32('payload'), 0::smallint, '\x01'::bytea, '\x02'::bytea, '\x03'::bytea,
            'kek-1', NULL, NULL, '0123456789abcdef0123456789abcdef', NULL, NULL, NULL, NULL,
            pg_temp.b32('payload')
        ) AS r;
    ELSE
        v_id := pg_temp.nieuwe_notificatie(p_dvref => p_ref);
    END IF;
    RETURN QUERY SELECT c.taak_id, c.claim_epoch, c.poging_id, c.notificatie_id
    FROM nmc.claim_verzenden('w', 20) AS c WHERE c.notificatie_id = v_id;
END $$;

-- 1. email_address: the recipient's. Under centraal the address is reported invalid.
SELECT * FROM pg_temp.claim('adres-centraal', true) \gset ac_
SELECT is(
    nmc.finish_verzenden(
        :ac_taak, :ac_epoch, 'ongeldig-adres', null, 'f0f0f0f0-0000-4000-8000-0000000000c1'
    )::text,
    'niet-bezorgbaar',
    'centraal: an invalid address ends the notification'
);
SELECT results_eq(
    format(
        $$SELECT t.soort::text, t.staat::text, t.poging_id = %L, n.reden::text
             FROM nmc.taak AS t JOIN nmc.notificatie AS n ON n.id = t.notificatie_id
             WHERE t.notificatie_id = %L AND t.soort = 'ongeldig-melden'$$,
        :'ac_poging', :'ac_id'
    ),
    $$VALUES ('ongeldig-melden', 'open', true, 'onbereikbaar')$$,
    'centraal: an ongeldig-melden task for the attempt is planned, as after a permanent-failure'
);
SELECT results_eq(
    format($$SELECT c.contactgegeven_id::text FROM nmc.claim_ongeldig_melden('w', 20) AS c
             WHERE c.notificatie_id = %L$$, :'ac_id'),
    $$VALUES ('f0f0f0f0-0000-4000-8000-0000000000c1')$$,
    'the report names the contactgegeven the refused send used'
);
SELECT * FROM pg_temp.claim('adres-decentraal') \gset ad_
SELECT nmc.finish_verzenden(:ad_taak, :ad_epoch, 'ongeldig-adres');
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.taak
        WHERE notificatie_id = :'ad_id' AND soort = 'ongeldig-melden'
    ),
    0,
    'decentraal: nothing to report to the Profielservice'
);

-- 2. Cannot be rendered (the template changed after the intake): technisch-mislukt at once.
SELECT * FROM pg_temp.claim('weergave') \gset we_
SELECT is(
    nmc.finish_verzenden(:we_taak, :we_epoch, 'onverwerkbaar')::text,
    'technisch-mislukt',
    'a request NotifyNL cannot render ends the notification technisch-mislukt'
);
SELECT results_eq(
    format($$SELECT n.reden::text, p.status::text, p.afgerond_op = nmc.now(), t.staat::text,
             t.pogingen FROM nmc.notificatie AS n
             JOIN nmc.poging AS p ON p.notificatie_id = n.id
             JOIN nmc.taak AS t ON t.notificatie_id = n.id AND t.soort = 'verzenden'
             WHERE n.id = %L$$, :'we_id'),
    $$VALUES ('technisch', 'technisch-mislukt', true, 'done', 0)$$,
    'reason technisch, attempt technisch-mislukt, the task done without a retry'
);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.taak
        WHERE notificatie_id = :'we_id' AND soort IN ('reconciliëren', 'ongeldig-melden')
    ),
    0,
    'no reconciliation and no invalid report for it'
);
SELECT * FROM pg_temp.claim('weergave-2') \gset we2_
SELECT nmc.finish_verzenden_batch(
    ARRAY[:we2_taak], ARRAY[:we2_epoch], ARRAY['onverwerkbaar'], null, null
);
SELECT results_eq(
    $$SELECT dv_id, berichttype, dag = (nmc.now() AT TIME ZONE 'Europe/Amsterdam')::date, aantal
      FROM nmc.onverwerkbaar$$,
    $$VALUES (1001, 'aanslag', true, 2::bigint)$$,
    'counted per DV, berichttype and day'
);

-- 3. Our configuration: deferred (no attempt counted, nothing final) and recorded.
SELECT * FROM pg_temp.claim('sleutel') \gset sl_
SELECT is(
    nmc.defer_verzenden(:sl_taak, :sl_epoch, 'sleutel'), 'uitgesteld',
    'a refusal of our configuration defers the send'
);
SELECT results_eq(
    format($$SELECT t.staat::text, t.pogingen, t.uitstellen, t.due > nmc.now(),
             t.laatste_fout, n.status::text, p.status::text
             FROM nmc.taak AS t JOIN nmc.notificatie AS n ON n.id = t.notificatie_id
             JOIN nmc.poging AS p ON p.notificatie_id = n.id
             WHERE t.id = %s$$, :sl_taak),
    $$VALUES ('open', 0, 1, true, 'notifynl-geweigerd-sleutel', 'in-verzending', 'gepland')$$,
    'the task waits with backoff, no attempt counted, the notification not final'
);
SELECT results_eq(
    $$SELECT dv_id, berichttype, soort, sinds = nmc.now(), laatst = nmc.now(), aantal
      FROM nmc.verzendweigering$$,
    $$VALUES (1001, 'aanslag', 'sleutel', true, true, 1::bigint)$$,
    'the berichttype''s refused state is recorded: kind, since, count'
);
SELECT nmc.advance_clock('1 minute');
SELECT * FROM pg_temp.claim('template') \gset tp_
SELECT is(
    nmc.defer_verzenden(:tp_taak, :tp_epoch, 'template'), 'uitgesteld',
    'a second refusal of the same berichttype'
);
SELECT results_eq(
    $$SELECT soort, sinds = nmc.now() - interval '1 minute', laatst = nmc.now(), aantal
      FROM nmc.verzendweigering$$,
    $$VALUES ('template', true, true, 2::bigint)$$,
    'the latest kind, the first since, the count raised'
);
SELECT throws_ok(
    format($$SELECT nmc.defer_verzenden(%s, %s, 'sleutel')$$, :tp_taak, :tp_epoch),
    'NM011', null,
    'a deferred task can not be refused again (NM011)'
);
SELECT * FROM pg_temp.claim('raar') \gset ra_
SELECT throws_ok(
    format($$SELECT nmc.defer_verzenden(%s, %s, 'weet-niet')$$, :ra_taak, :ra_epoch),
    '22023', null,
    'an unknown kind of refusal is refused (22023)'
);
SELECT is(
    (SELECT staat::text FROM nmc.taak WHERE id = :ra_taak), 'claimed',
    'and changes nothing'
);
-- Another berichttype is not refused by it.
SELECT is(
    (SELECT count(*)::integer FROM nmc.verzendweigering WHERE berichttype <> 'aanslag'), 0,
    'only the refused berichttype is recorded'
);

-- Once the configuration is fixed the deferred notifications go out; the first accepted
-- send of the berichttype clears its state.
SELECT nmc.advance_clock('20 minutes');
SELECT c.taak_id AS sl_taak2, c.claim_epoch AS sl_epoch2, c.herclaim AS sl_herclaim
FROM nmc.claim_verzenden('w', 20) AS c WHERE c.notificatie_id = :'sl_id' \gset
SELECT ok(:'sl_herclaim'::boolean, 'the deferred send is claimed again, the same attempt');
SELECT is(
    nmc.finish_verzenden(
        :sl_taak2, :sl_epoch2, 'verzonden', 'e0e0e0e0-0000-4000-8000-0000000000d1'
    )::text,
    'verzonden',
    'it goes out'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.verzendweigering), 0,
    'a send of the berichttype NotifyNL accepted clears its refused state'
);
SELECT is(
    (SELECT pogingen FROM nmc.taak WHERE id = :sl_taak2), 0,
    'no attempt was counted for the refusal'
);

-- A refusal that would wait past geldig_tot ends the notification verlopen, as any deferral.
SELECT * FROM pg_temp.claim('verloopt') \gset vl_
UPDATE nmc.notificatie SET geldig_tot = nmc.now() + interval '2 seconds' WHERE id = :'vl_id';
SELECT is(
    nmc.defer_verzenden(:vl_taak, :vl_epoch, 'dienst'), 'verlopen',
    'a refused send whose next try falls after geldig_tot ends verlopen'
);
SELECT results_eq(
    format('SELECT status::text, reden::text FROM nmc.notificatie WHERE id = %L', :'vl_id'),
    $$VALUES ('verlopen', 'verlopen')$$,
    'verlopen with reason verlopen'
);
SELECT results_eq(
    $$SELECT soort, aantal FROM nmc.verzendweigering$$,
    $$VALUES ('dienst', 1::bigint)$$,
    'the refusal is recorded all the same'
);

-- The metrics: the refused berichttype and the count of unrenderable requests.
SELECT results_eq(
    $$SELECT naam, labels ->> 'dv', labels ->> 'berichttype', labels ->> 'soort', waarde
      FROM nmc.metrics() WHERE naam = 'nmc_verzendweigering'$$,
    $$VALUES ('nmc_verzendweigering', '1001', 'aanslag', 'dienst', 1::double precision)$$,
    'nmc_verzendweigering: refused sends per berichttype and kind'
);
SELECT results_eq(
    $$SELECT naam, labels ->> 'dv', labels ->> 'berichttype', waarde
      FROM nmc.metrics() WHERE naam = 'nmc_onverwerkbaar_totaal'$$,
    $$VALUES ('nmc_onverwerkbaar_totaal', '1001', 'aanslag', 2::double precision)$$,
    'nmc_onverwerkbaar_totaal: notifications NotifyNL could not render, per berichttype'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.metrics() WHERE naam = 'nmc_verzendweigering_seconden'),
    1,
    'nmc_verzendweigering_seconden: how long the berichttype has been refused'
);

-- Retention: the counts per day go after the delivery-proof retention.
SELECT nmc.advance_clock('366 days');
SELECT nmc.delete_expired(1000);
SELECT is_empty(
    $$SELECT 1 FROM nmc.onverwerkbaar$$,
    'the counts of unrenderable requests go after the delivery-proof retention'
);

SELECT * FROM finish();
ROLLBACK;
