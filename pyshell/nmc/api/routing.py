"""Routes whose GET provides something: HEAD is refused on them, before any work.

Starlette answers HEAD on every GET route by running the GET handler and dropping the body.
For a route whose GET is a provision (the proof is signed, the history, the feed and the
snapshot are read, and each writes an LDV record, SPEC §8) that would do all the work, and
write the record, for nothing handed out. Such a route answers HEAD with a 405 and
`Allow: GET` before its handler runs. The route still matches HEAD, so the request does not
fall through to a later route with a path parameter (`/notificaties/{notificatieId}` would
take `wijzigingen` as an id).
"""

from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def provision_route(path: str, endpoint: Callable[[Request], Awaitable[Response]]) -> Route:
    """A GET route whose HEAD is a 405 (`Allow: GET`)."""

    async def get_only(request: Request) -> Response:
        if request.method != "GET":
            raise HTTPException(405, headers={"Allow": "GET"})
        return await endpoint(request)

    get_only.__name__ = getattr(endpoint, "__name__", "provision")
    get_only.__doc__ = endpoint.__doc__
    return Route(path, get_only, methods=["GET"])
