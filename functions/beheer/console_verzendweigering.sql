-- The console's view of NotifyNL's refusals of our configuration (nmc.verzendweigering):
-- which berichttypen cannot send, why, since when, and how many sends wait for the fix.

CREATE OR REPLACE FUNCTION nmc.console_verzendweigeringen()
RETURNS TABLE (
    dv_id integer, naam text, berichttype text, soort text, sinds timestamptz,
    laatst timestamptz, aantal bigint, wachtend bigint
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
    SELECT w.dv_id, d.naam, w.berichttype, w.soort, w.sinds, w.laatst, w.aantal,
        (
            SELECT pg_catalog.count(*)
            FROM nmc.taak AS t
            INNER JOIN nmc.notificatie AS n ON n.id = t.notificatie_id
            WHERE t.soort = 'verzenden' AND t.staat IN ('open', 'claimed')
                AND t.dv_id = w.dv_id AND n.berichttype = w.berichttype
                AND t.laatste_fout LIKE 'notifynl-geweigerd-%'
        )
    FROM nmc.verzendweigering AS w
    INNER JOIN nmc.dienstverlener AS d ON d.dv_id = w.dv_id
    ORDER BY w.sinds, w.dv_id, w.berichttype
$$;
COMMENT ON FUNCTION nmc.console_verzendweigeringen() IS
'The berichttypen NotifyNL refuses for a reason of our own configuration, for the console '
'(oldest refusal first): the DV, the kind of the latest refusal, since when, the latest, how '
'many sends were refused, and how many send tasks wait deferred after such a refusal. The '
'next send of the berichttype NotifyNL accepts clears its row.';
