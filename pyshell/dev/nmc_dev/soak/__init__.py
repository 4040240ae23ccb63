"""`nmc soak`: the chaos soak (see nmc_dev.soak.run).

Modules: `workload` (the DVs and the notifications, with their personal values), `intake`
(the DVs' submitters over the real API), `consumer` (a feed reader per DV that runs
throughout), `chaos` (worker kills, the PostgreSQL restart, Profielservice outages, clock
moves), `evidence` (what the database, the simulators and the logs hold afterwards),
`checks` (the verdicts, pure functions over that evidence), `privacy` (the log scan),
`run` (the phases and the summary).
"""
