-- Cancel: only from aangenomen, through the single writer, closing the send task.
BEGIN;
SELECT plan(16);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS id \gset
SELECT results_eq(
    format('SELECT status::text, versie FROM nmc.cancel_notificatie(1001, %L)', :'id'),
    $$VALUES ('geannuleerd', 2)$$,
    'an aangenomen notification is cancelled: geannuleerd at version 2'
);
SELECT results_eq(
    format('SELECT status::text, reden::text, terminaal_op = nmc.now()
            FROM nmc.notificatie WHERE id = %L', :'id'),
    $$VALUES ('geannuleerd', 'geannuleerd', true)$$,
    'the row is terminal with reason geannuleerd'
);
SELECT results_eq(
    format('SELECT sequence, van::text, naar::text, reden::text FROM nmc.event
            WHERE notificatie_id = %L AND sequence = 2', :'id'),
    $$VALUES (2, 'aangenomen', 'geannuleerd', 'geannuleerd')$$,
    'the cancel is an event like any transition'
);
SELECT results_eq(
    format(
        'SELECT staat::text FROM nmc.taak WHERE notificatie_id = %L AND soort = ''verzenden''',
        :'id'
    ),
    $$VALUES ('done')$$,
    'the open send task is closed'
);
SELECT is(
    pg_temp.fout(format('SELECT nmc.cancel_notificatie(1001, %L)', :'id')),
    'NM006:geannuleerd',
    'cancelling twice is refused (NM006) with the current status'
);

-- Every other status refuses, with its status in DETAIL.
CREATE TEMP TABLE ander_status AS
SELECT
    s::nmc.notificatie_status AS status,
    pg_temp.nieuwe_notificatie() AS id
FROM unnest(ARRAY[
    'in-verzending', 'verzonden', 'bezorgd', 'definitief-bezorgd',
    'niet-bezorgbaar', 'technisch-mislukt', 'bezorgstatus-onbekend', 'verlopen'
]) AS s;
SELECT pg_temp.naar_status(id, status) FROM ander_status;
SELECT
    is(
        pg_temp.fout(format('SELECT nmc.cancel_notificatie(1001, %L)', a.id)),
        'NM006:' || a.status,
        'cancel refused in status ' || a.status
    )
FROM ander_status AS a;

SELECT pg_temp.nieuwe_notificatie() AS ander \gset
SELECT is(
    pg_temp.fout(format('SELECT nmc.cancel_notificatie(1002, %L)', :'ander')),
    'NM005:',
    'another DV''s notification does not exist for the caller (NM005)'
);
SELECT is(
    (SELECT status::text FROM nmc.notificatie WHERE id = :'ander'),
    'aangenomen',
    'and stays as it was'
);
SELECT is(
    pg_temp.fout('SELECT nmc.cancel_notificatie(1001, gen_random_uuid())'),
    'NM005:',
    'an unknown id is refused (NM005)'
);

SELECT * FROM finish();
ROLLBACK;
