-- How many events a closed range held, counted once when it closed (in the same scan that
-- reads its youngest event). The partities job weighs the events dropped with a range
-- against the log's size to judge when the partitioned parent's statistics are due
-- (nmc.eventlog_analyse_nodig), as autovacuum judges a table by its changed rows.

ALTER TABLE nmc.event_partitie ADD COLUMN aantal bigint CHECK (aantal >= 0);
COMMENT ON COLUMN nmc.event_partitie.aantal IS
'Events in the range, counted when it closed (with jongste_tijdstip); NULL while it is open, '
'and for a range dropped before the column existed.';

-- The ranges already closed and still there are counted now.
DO $$
DECLARE
    v_naam text;
    v_aantal bigint;
BEGIN
    FOR v_naam IN
        SELECT p.naam FROM nmc.event_partitie AS p
        WHERE p.gesloten_op IS NOT NULL AND p.verwijderd_op IS NULL
    LOOP
        EXECUTE pg_catalog.format('SELECT count(*) FROM nmc.%I', v_naam) INTO v_aantal;
        UPDATE nmc.event_partitie AS p SET aantal = v_aantal WHERE p.naam = v_naam;
    END LOOP;
END
$$;
