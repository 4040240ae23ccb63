"""NMC, the Notificatie Management Component: the thin Python shell around the database."""
