"""What the NMC's processes tell their operators: the Prometheus text format of the API's and
the worker's /metrics (prometheus) and the structured JSON log lines of the API and the
console (logs)."""
