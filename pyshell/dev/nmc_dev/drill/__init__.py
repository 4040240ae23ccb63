"""`nmc drill`: real PostgreSQL replication on this machine (nmc_dev.drill.clusters), a
failover drill and a restore drill against a whole local NMC (nmc_dev.drill.failover,
nmc_dev.drill.restore)."""
