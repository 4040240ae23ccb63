-- The event log's drop rule keeps a range while a kept notification has events in it
-- (SPEC §7: the proof is served whole, from sequence 1, as long as the notification is
-- kept). A notification's events all lie at or above its first event's range, and its first
-- event carries its aangenomen_op; so a kept notification with events in a range was
-- accepted at or before the range's youngest event. The drop rule reads the kept
-- notifications from the oldest up along this index, as far as that youngest event.

CREATE INDEX notificatie_aangenomen_op ON nmc.notificatie (aangenomen_op);
COMMENT ON INDEX nmc.notificatie_aangenomen_op IS
'The kept notifications from the oldest up, for the event log''s drop rule '
'(nmc.drop_event_partities): those accepted at or before a range''s youngest event.';

COMMENT ON TABLE nmc.event IS
'The event log: one row per status transition of a notification, written by '
'nmc.transition_notificatie in the same transaction. Append only (UPDATE and DELETE are '
'refused). Holds no contact data, identifying number or DV reference: pseudonymous data '
'the DV can trace back. The source of the feed, the webhook, reporting and the delivery '
'proof. Partitioned on xid ranges (plus a default partition); a partition is dropped when '
'its youngest event is older than the delivery-proof retention (1 year, config), no '
'notification still kept has events in it (its proof is the chain from sequence 1) and no '
'live cursor points into it.';
