"""`nmc demo`: the NMC end to end on this machine (see nmc_dev.demo.run)."""
