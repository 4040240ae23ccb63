"""The operator console (`nmc console`): server-rendered pages for the platform team, on a
port of their own, never on the DV API's. See docs/console.md."""
