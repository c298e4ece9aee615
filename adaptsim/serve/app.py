"""The web server of `adaptsim serve`: a Starlette app around one `ServeSession` (adaptsim/serve/state.py).

Safe by default, because the page changes records and a model: every request must name a Host this server answers to
(parsed strictly: DNS rebinding) and carry the session's random token (compared in constant time: `?token=` in the
printed address for the page and its reads, the page's `X-Adaptsim-Token` header for everything, and the header alone
for a request that changes something); a request that changes something must also come from the page itself (JSON,
which a cross-site form cannot send without the browser asking first; its Origin and Sec-Fetch-Site, where the browser
sends them, this server's) and send at most `serve.max_request_bytes` (read in chunks, refused as soon as it is over);
texts are at most `serve.max_chars`. The browser sends texts and counts only: the session directory is fixed when the
server starts, no path is read from a request. Every refusal is one JSON line, `{"error": <the technical line>,
"code": <what the page tells the translator: adaptsim/serve/state.py CODES>}`, with a 4xx/5xx status and the same
security headers as every answer, changes nothing, and is logged at WARNING (the method, the path without its query,
which may hold the token, the status, the code and the line). The model's work runs in a worker thread (the session's
lock orders it), so the server keeps answering while a segment is translated.

Once the translator has ended the session (Finish now, or the last segment validated), the server answers for
`END_GRACE_S` more — the page reads the final state, a reload shows it — and then stops by itself (`on_end`: the
command sets uvicorn's `should_exit`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
from collections.abc import Callable
from importlib.resources import files
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from adaptsim.errors import UserError
from adaptsim.serve.state import Refused, ServeSession

log = logging.getLogger("adaptsim")

TOKEN_HEADER = "x-adaptsim-token"
HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
           "X-Frame-Options": "DENY"}
END_GRACE_S = 2.0  # how long the server answers after the translator ended the session, before it stops
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # kept out of the log's line (a path may decode to a newline)


def logged(scope, message: str, status: int, code: str) -> None:
    """A refusal's line in the server's log (the path without its query string, which may hold the token)."""
    def line(text: str) -> str:
        return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)

    log.warning("serve: refused %s %s: %d %s: %s", scope.get("method"), line(scope.get("path", "")[:100]), status,
                code, line(message))


def error(scope, message: str, status: int, code: str) -> JSONResponse:
    """A refusal: its answer (the page's), and its line in the server's log."""
    logged(scope, message, status, code)
    return JSONResponse({"error": message, "code": code}, status_code=status, headers=HEADERS)


HOST = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:[0-9]{1,5})?")  # a name or [IPv6 address], then a port
SAFE_METHODS = ("GET", "HEAD")  # what reads; every other method changes something


class HostRequired:
    """ASGI middleware: a request whose Host header is not one of `hosts` (its port aside; an IPv6 address in brackets,
    `[::1]`; anything else around them refused) gets 400 and goes no further (DNS rebinding); `["*"]`: any.
    `refuse`: the refusal's answer (the page's `error`; serve's API, ModernMT's envelope)."""

    def __init__(self, app, hosts: list[str], refuse=error):
        self.app, self.hosts, self.refuse = app, set(hosts), refuse

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and "*" not in self.hosts:
            given = Headers(scope=scope).get("host", "").lower()
            name = match.group(1) if (match := HOST.fullmatch(given)) else None
            if name not in self.hosts:
                await self.refuse(scope, f"Host {given[:100]!r}: this server answers to "
                                  f"{', '.join(sorted(self.hosts))} only (against DNS rebinding)", 400,
                                  "host")(scope, receive, send)
                return
        await self.app(scope, receive, send)


class TokenRequired:
    """ASGI middleware: a request without the session's token gets 403 and goes no further. The token is read from
    the header, or for a read from the address too (the printed address opens the page); a request that changes
    something must carry it in the header, which no link or form can set. `header`: the header it is read from;
    `query`: whether a read may carry it in the address (serve's API: no, the MMT-ApiKey header alone); `refuse`:
    the refusal's answer."""

    def __init__(self, app, token: str, header: str = TOKEN_HEADER, query: bool = True, refuse=error,
                 where: str = "the address the server printed"):
        self.app, self.token, self.header, self.shown, self.query = app, token.encode(), header.lower(), header, query
        self.refuse, self.where = refuse, where

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(self.header.encode())
            if given is None and self.query and scope["method"] in SAFE_METHODS:
                given = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token") or [""])[0].encode()
            if not hmac.compare_digest(given or b"", self.token):
                where = "" if self.query and scope["method"] in SAFE_METHODS else f" in the {self.shown} header"
                await self.refuse(scope, f"a valid session token is required{where} ({self.where})", 403,
                                  "token")(scope, receive, send)
                return
        await self.app(scope, receive, send)


class SameOriginRequired:
    """ASGI middleware: a request that changes something must come from the page: a JSON body (415 otherwise), and,
    where the browser says where the request comes from, this server (its Origin `http://<Host>`, or `https://<Host>`
    behind a proxy that adds TLS; Sec-Fetch-Site `same-origin`; 403 otherwise)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            headers = Headers(scope=scope)
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            origin, site = headers.get("origin"), headers.get("sec-fetch-site")
            refusal = None
            if kind != "application/json":
                refusal = (f"Content-Type {kind[:100]!r}: this server takes application/json only", 415)
            elif site is not None and site.lower() not in ("same-origin", "none"):
                refusal = (f"Sec-Fetch-Site {site[:100]!r}: requests from this server's page only", 403)
            elif origin is not None and origin.lower() not in (f"{scheme}://{headers.get('host', '').lower()}"
                                                                for scheme in ("http", "https")):  # (behind TLS)
                refusal = (f"Origin {origin[:100]!r}: requests from this server's page only", 403)
            if refusal:
                await error(scope, *refusal, "origin")(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def body_json(request: Request, limit: int, empty: bool = False) -> dict:
    """The request's JSON object, read at most `limit` bytes far; `empty`: no body at all is {} (serve's API: a
    read its clients send without one)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise Refused(f"the request is larger than serve.max_request_bytes={limit}", 413, "too_large")
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise Refused(f"the request is larger than serve.max_request_bytes={limit}", 413, "too_large")
    if empty and not data:
        return {}
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # (RecursionError: arrays nested thousands deep)
        raise Refused("the request is not JSON") from None
    if not isinstance(body, dict):
        raise Refused("the request is not a JSON object")
    return body


def create_app(session: ServeSession, token: str, hosts: list[str], max_request_bytes: int,
               on_end: Callable[[], None] | None = None) -> Starlette:
    """The app of `session`; `on_end`: called `END_GRACE_S` after the translator ended the session (module
    docstring)."""
    page = files("adaptsim.serve").joinpath("page.html").read_text(encoding="utf-8")
    ending = []  # (once)

    async def answer(request: Request, work, *args) -> JSONResponse:
        try:
            return JSONResponse(await run_in_threadpool(work, *args), headers=HEADERS)
        except Refused as e:
            return error(request.scope, str(e), e.status, e.code)
        except UserError as e:
            return error(request.scope, str(e), 400, "bad_request")

    def end_soon() -> None:
        if on_end is not None and not ending and (how := session.ended):
            ending.append(how)
            log.info("serve: the session is %s; the server stops in %g s", how, END_GRACE_S)
            asyncio.get_running_loop().call_later(END_GRACE_S, on_end)

    async def index(request: Request):
        return HTMLResponse(page, headers={**HEADERS, "Content-Security-Policy": "default-src 'self'; script-src "
                                           "'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
                                           "frame-ancestors 'none'"})

    async def state(request: Request):
        return await answer(request, session.state)

    def posted(work, *keys):
        """The endpoint of a POST that calls `work` with the JSON body's `keys`."""
        async def endpoint(request: Request):
            try:
                body = await body_json(request, max_request_bytes)
            except Refused as e:
                return error(request.scope, str(e), e.status, e.code)
            response = await answer(request, work, *(body.get(k) for k in keys))
            end_soon()
            return response
        return endpoint

    async def refused(request: Request, exc: HTTPException) -> JSONResponse:  # 404, 405: one line, the same headers
        response = error(request.scope, f"{request.method} {request.url.path[:100]}: {exc.detail}", exc.status_code,
                         "not_found" if exc.status_code in (404, 405) else "bad_request")
        response.headers.update(exc.headers or {})
        return response

    routes = [Route("/", index), Route("/api/state", state),
              Route("/api/complete", posted(session.complete, "position", "prefix"), methods=["POST"]),
              Route("/api/validate", posted(session.validate, "position", "text", "effort"), methods=["POST"]),
              Route("/api/reopen", posted(session.reopen, "position"), methods=["POST"]),
              Route("/api/finish", posted(session.finish, "position"), methods=["POST"])]
    return Starlette(routes=routes, exception_handlers={HTTPException: refused},
                     middleware=[Middleware(HostRequired, hosts=hosts), Middleware(TokenRequired, token=token),
                                 Middleware(SameOriginRequired)])
