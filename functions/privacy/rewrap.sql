-- KEK rotation in batches of bounded work (SPEC §8): a pass over the notifications in id
-- order, a batch at a time after a cursor, so each statement of `nmc admin kek rotate`
-- reads at most one batch of rows, however many were rewrapped before it.

CREATE OR REPLACE FUNCTION nmc.list_rewrap_v2(
    p_naar_kek text, p_na uuid, p_batch integer DEFAULT 500
)
RETURNS TABLE (notificatie_id uuid, kek_id text, sleutel_gewrapt bytea)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        s.id,
        s.kek_id,
        CASE WHEN s.kek_id <> p_naar_kek THEN s.sleutel_gewrapt END
    FROM (
        SELECT n.id, n.kek_id, n.sleutel_gewrapt
        FROM nmc.notificatie AS n
        -- The nil uuid sorts first: a NULL cursor starts the pass (and keeps the range
        -- condition usable by the primary key's index).
        WHERE n.id > coalesce(p_na, '00000000-0000-0000-0000-000000000000'::uuid)
        ORDER BY n.id
        LIMIT least(greatest(p_batch, 1), 5000)
    ) AS s
    ORDER BY s.id
$$;
COMMENT ON FUNCTION nmc.list_rewrap_v2(text, uuid, integer) IS
'The next p_batch notifications (at most 5,000) after id p_na (NULL: from the start), in id '
'order, for KEK rotation: each with its KEK and, only when it still needs a rewrap to '
'p_naar_kek (a live key under another KEK), its wrapped data key; NULL otherwise. The last '
'id is the next cursor; an empty result ends the pass. Every call reads at most one batch '
'of rows (the first form, since dropped, skipped the rows already rewrapped from the start '
'of the table on every call). Runs with the '
'caller''s rights: only the admin (a member of nmc_owner) calls it.';
