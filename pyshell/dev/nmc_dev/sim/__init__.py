"""Simulators of the services the NMC calls (NotifyNL, Profielservice, LDV).

Real HTTP servers (Starlette + uvicorn) for the tests, the benchmarks and the demo; no
production code path imports this package.
"""
