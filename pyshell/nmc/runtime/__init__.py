"""How the NMC's processes run their work: the event loop (aio, uvloop when installed) and
group commit, one database call for whatever arrived meanwhile (group_commit)."""
