-- Guards on notificatie: no status without an allowed pair, a version step of one and a
-- matching event written in the same transaction (SPEC §4).

-- The row guard only runs for a row that breaks one of its rules: the trigger's WHEN
-- clause (below) holds the same conditions and is evaluated without a function call, so
-- a transition of a batch of 1000 rows costs no PL/pgSQL call per row. The allowed pair
-- is judged per statement, by nmc.guard_notificatie_event.
CREATE OR REPLACE FUNCTION nmc.guard_notificatie_row()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.id <> OLD.id OR NEW.dv_id <> OLD.dv_id OR NEW.aangenomen_op <> OLD.aangenomen_op THEN
        RAISE EXCEPTION 'id, dv_id and aangenomen_op of a notificatie never change'
            USING ERRCODE = 'NM015';
    END IF;
    IF NEW.versie = OLD.versie THEN
        IF NEW.status IS DISTINCT FROM OLD.status OR NEW.reden IS DISTINCT FROM OLD.reden THEN
            RAISE EXCEPTION 'status change without a new version and event'
                USING ERRCODE = 'NM002';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.versie <> OLD.versie + 1 THEN
        RAISE EXCEPTION 'version must rise by exactly one (% to %)', OLD.versie, NEW.versie
            USING ERRCODE = 'NM003';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION nmc.guard_notificatie_row() IS
'BEFORE UPDATE row guard, called only for a row its trigger''s WHEN clause finds at fault: '
'identity columns never change (NM015); status and reason change only with a new version '
'(NM002); the version rises by exactly one (NM003). The allowed pair (NM001) and the event '
'(NM002) are judged per statement by nmc.guard_notificatie_event.';

CREATE OR REPLACE FUNCTION nmc.guard_notificatie_event()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_zonder_event boolean;
    v_fout_versie boolean;
    v_fout_status text;
    v_fout_paar text [];
BEGIN
    -- New rows are judged here as a set rather than in a row trigger: a per-row PL/pgSQL
    -- call costs more than the insert itself on a batch intake of 1000.
    IF TG_OP = 'INSERT' THEN
        SELECT
            pg_catalog.bool_or(n.versie <> 1),
            -- (a reason on a new row is already refused by notificatie_reden_past)
            pg_catalog.min(n.status::text) FILTER (
                WHERE NOT nmc.transition_allowed(NULL, n.status)
            )
        INTO v_fout_versie, v_fout_status
        FROM nieuw AS n;
        IF v_fout_versie THEN
            RAISE EXCEPTION 'a new notificatie starts at version 1' USING ERRCODE = 'NM003';
        END IF;
        IF v_fout_status IS NOT NULL THEN
            RAISE EXCEPTION 'a new notificatie starts as aangenomen, not %', v_fout_status
                USING ERRCODE = 'NM001';
        END IF;
    END IF;

    -- Every row whose version changed in this statement needs the event with that
    -- sequence, the same (van, naar, reden), written by this transaction. As a set
    -- difference (one hash over the statement's rows and this transaction's events),
    -- so a batch of 1000 costs one pass, not 1000 probes.
    IF TG_OP = 'INSERT' THEN
        SELECT EXISTS (
            SELECT n.id, n.versie, NULL::nmc.notificatie_status, n.status, n.reden
            FROM nieuw AS n
            EXCEPT
            SELECT e.notificatie_id, e.sequence, e.van, e.naar, e.reden
            FROM nmc.event AS e
            WHERE e.xid = pg_catalog.pg_current_xact_id()
        ) INTO v_zonder_event;
    ELSE
        -- Rows pair up by id: the row guard has refused an id that changed. The pair of the
        -- first offender (by id) is judged before the event, as a row guard did.
        SELECT
            (
                SELECT ARRAY[o.status::text, n.status::text]
                FROM nieuw AS n
                INNER JOIN oud AS o ON n.id = o.id
                WHERE n.versie <> o.versie AND NOT nmc.transition_allowed(o.status, n.status)
                ORDER BY n.id
                LIMIT 1
            ),
            EXISTS (
                SELECT n.id, n.versie, o.status, n.status, n.reden
                FROM nieuw AS n
                INNER JOIN oud AS o ON n.id = o.id
                WHERE n.versie <> o.versie
                EXCEPT
                SELECT e.notificatie_id, e.sequence, e.van, e.naar, e.reden
                FROM nmc.event AS e
                WHERE e.xid = pg_catalog.pg_current_xact_id()
            )
        INTO v_fout_paar, v_zonder_event;
        IF v_fout_paar IS NOT NULL THEN
            RAISE EXCEPTION 'transition from % to % is not allowed', v_fout_paar[1], v_fout_paar[2]
                USING ERRCODE = 'NM001', DETAIL = v_fout_paar[1];
        END IF;
    END IF;
    IF v_zonder_event THEN
        RAISE EXCEPTION 'version change without its event in the same transaction'
            USING ERRCODE = 'NM002';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION nmc.guard_notificatie_event() IS
'AFTER statement guard (transition tables): new rows start at version 1 (NM003) as '
'aangenomen (NM001); a changed version is an allowed (van, naar) pair (NM001, DETAIL = van, '
'the first offender by id); refuses (NM002) any new or changed version without an event '
'row of the same sequence and (van, naar, reden) written by the same transaction. One set '
'difference per statement, so batch intake and batch transitions stay cheap.';

DROP TRIGGER IF EXISTS notificatie_guard_row ON nmc.notificatie;
CREATE TRIGGER notificatie_guard_row
BEFORE UPDATE ON nmc.notificatie
FOR EACH ROW
WHEN (
    new.id <> old.id OR new.dv_id <> old.dv_id OR new.aangenomen_op <> old.aangenomen_op
    OR (
        new.versie = old.versie
        AND (new.status IS DISTINCT FROM old.status OR new.reden IS DISTINCT FROM old.reden)
    )
    OR (new.versie <> old.versie AND new.versie <> old.versie + 1)
)
EXECUTE FUNCTION nmc.guard_notificatie_row();

DROP TRIGGER IF EXISTS notificatie_guard_event_insert ON nmc.notificatie;
CREATE TRIGGER notificatie_guard_event_insert
AFTER INSERT ON nmc.notificatie
REFERENCING NEW TABLE AS nieuw
FOR EACH STATEMENT EXECUTE FUNCTION nmc.guard_notificatie_event();

DROP TRIGGER IF EXISTS notificatie_guard_event_update ON nmc.notificatie;
CREATE TRIGGER notificatie_guard_event_update
AFTER UPDATE ON nmc.notificatie
REFERENCING OLD TABLE AS oud NEW TABLE AS nieuw
FOR EACH STATEMENT EXECUTE FUNCTION nmc.guard_notificatie_event();
