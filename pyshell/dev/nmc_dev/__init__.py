"""Development tools, not part of what runs in production: the embedded PostgreSQL cluster
(`nmc db`), the simulators of NotifyNL, the Profielservice and the LDV (`nmc sim`), the local
stack supervisor, the demo (`nmc demo`), the chaos soak and the year run (`nmc soak`), the
replication drills (`nmc drill`) and the pgTAP runner (`nmc dev pgtap`)."""
