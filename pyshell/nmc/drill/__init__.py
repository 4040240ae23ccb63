"""`nmc drill`: real PostgreSQL replication on this machine (nmc.drill.clusters), a failover
drill and a restore drill against a whole local NMC (nmc.drill.failover, nmc.drill.restore)."""
