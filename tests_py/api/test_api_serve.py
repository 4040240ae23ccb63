"""`nmc api`'s uvicorn server (nmc.api.serve.QuietServer): its housekeeping tick once a
second, each tick doing uvicorn's once-a-second work (the Date header), and a stop noticed
at the next tick."""

import asyncio

import uvicorn

from nmc.api import serve


def test_the_quiet_server_ticks_once_a_second_and_refreshes_the_date_each_tick(monkeypatch):
    slept: list[float] = []
    ticks: list[int] = []
    server = serve.QuietServer(uvicorn.Config(app=None))

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def on_tick(counter: int) -> bool:
        ticks.append(counter)
        if len(ticks) == 4:
            server.should_exit = True
        return await uvicorn.Server.on_tick(server, counter)

    monkeypatch.setattr(serve.asyncio, "sleep", sleep)
    monkeypatch.setattr(server, "on_tick", on_tick)
    server.server_state = uvicorn.server.ServerState()
    server.config.encoded_headers = []
    asyncio.run(server.main_loop())
    assert slept == [serve.TICK_SECONDS] * 3 and serve.TICK_SECONDS == 1.0
    assert ticks == [0, 10, 20, 30], "every tick is one of uvicorn's once-a-second ticks"
    assert server.server_state.default_headers[0][0] == b"date"
