"""ModernMT's API on `adaptsim serve serve.api=modernmt`, for CAT tools and ModernMT's clients: its paths, parameters,
JSON envelope and errors as ModernMT's published API and its official clients send and read them (the `modernmt`
package on PyPI, 1.5.2, is tested against it: tests/test_serve_modernmt.py). What the answers mean is the session's
(adaptsim/serve/client.py).

Offered, each under its ModernMT path:
- `GET /translate` (`source`, `target`, `q`: a text or a list of texts; `hints`: memory ids, "1,2" or a list;
  `priority`, `project_id`: accepted, nothing to do with them; `multiline`; `format` text/plain) → a Translation
  `{"translation", "characters", "billedCharacters": 0}` (nothing is billed), or a list of them for a list;
- `GET /translate/languages` → [source, target]; `GET /languages` → {source: [target]} (what Weblate's ModernMT
  machinery reads, weblate/machinery/modernmt.py);
- `GET /memories`, `POST /memories` (`name`, `description`, `external_id`), `GET /memories/{id}` → Memory objects;
- `POST /memories/{id}/content` (`source`, `target`, `sentence`, `translation`, `tuid`) → an ImportJob `{"id",
  "memory", "size": 1, "progress": 1.0}`: the pair is the session's next step, done when the answer comes;
  `GET /import-jobs/{id}` → the same; ModernMT's open-source engine's `POST /memories/{id}/corpus` and
  `GET /memories/imports/{id}` are the same two.
Refused in one line, not faked: what adaptsim cannot honour — `context_vector` and `context`, `glossaries`,
`alt_translations`, `mask_profanities`, `session`, `timeout` (a translation is never cut short), another `format`,
text with a line break under `multiline` (ModernMT would translate each line; send multiline=false for one segment),
any parameter not listed above (400) — and the endpoints adaptsim does not offer (501: language detection, context
vectors, quality estimation, batch translation, glossaries, editing, deleting or replacing memories' content — a step
adapted on cannot be taken back from a client —, TMX imports, user accounts); any other path 404.

Every request must name a Host this server answers to (the page's rule) and carry the session's token as its API key
in `MMT-ApiKey` (compared in constant time; 401 otherwise; never in the address). A POST with
`X-HTTP-Method-Override: get|post|put|delete` is a request of that method (ModernMT's clients send every request so);
the real methods are accepted too (ModernMT's own engine and connectors such as Weblate's send GET with the
parameters in the query). Parameters come from the JSON body (at most `serve.max_request_bytes`; a body of any other
type 415) and the query string (a repeated `q`: a list). A request that changes something (post, put, delete) from a
browser must come from this server's own origin (Origin, Sec-Fetch-Site: 403), as the page's; texts are at most
`serve.max_chars`. Answers are `{"status": 200, "data": …}`; a refusal is `{"status": N, "error": {"type": T,
"message": one line}}` with the page's security headers, logged as the page's, and changes nothing.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from adaptsim.errors import UserError
from adaptsim.serve.app import HEADERS, HostRequired, TokenRequired, body_json, logged
from adaptsim.serve.client import ClientSession
from adaptsim.serve.state import Refused

log = logging.getLogger("adaptsim")
KEY_HEADER = "MMT-ApiKey"
# ModernMT's error type of each refusal's code (adaptsim/serve/state.py CODES, and the API's own); the status is the
# refusal's, but a missing or wrong key is 401 as ModernMT's
TYPES = {"token": "AuthenticationException", "host": "InvalidHostException", "origin": "ForbiddenException",
         "too_large": "PayloadTooLargeException", "bad_request": "ParameterParsingException",
         "language": "UnsupportedLanguageException", "unsupported": "UnsupportedOptionException",
         "not_offered": "NotImplementedException", "not_found": "ApiNotFoundException",
         "no_resource": "NotFoundException", "memory_ended": "ConflictException",
         "stopped": "ServiceUnavailableException", "finished": "ServiceUnavailableException",
         "internal": "InternalServerException"}
PLATFORM = {"mmt-platform": "platform", "mmt-platformversion": "platform_version"}  # human.jsonl's names of them
METHODS = ("get", "post", "put", "delete")
CHANGES = ("post", "put", "delete")
TRANSLATE_KEYS = {"source", "target", "q", "hints", "priority", "project_id", "multiline", "format"}
# what /translate refuses, and why: ModernMT's options that adaptsim cannot honour
REFUSED_OPTIONS = {
    "context_vector": "context vectors (adaptsim adapts one model along the session, not by a vector of memories)",
    "context": "a context text (adaptsim adapts one model along the session)",
    "context_limit": "a context text (adaptsim adapts one model along the session)",
    "glossaries": "glossaries", "ignore_glossary_case": "glossaries",
    "alt_translations": "alternative translations", "mask_profanities": "profanity masking",
    "session": "ModernMT's sessions (the session is the server's)", "timeout": "a timeout (a translation is never cut "
                                                                               "short)",
    "webhook": "batch translation", "metadata": "batch translation",
}
ADD_KEYS = {"source", "target", "sentence", "translation", "tuid"}
MEMORY_KEYS = {"name", "description", "external_id"}
NOT_OFFERED = [  # (methods, path, what): ModernMT's endpoints adaptsim does not offer
    (("get",), r"/translate/detect", "language detection"),
    (("get", "post"), r"/context-vector", "context vectors"),
    (("get",), r"/translate/qe", "quality estimation"),
    (("get", "post"), r"/translate/batch(/key)?", "batch translation"),
    (METHODS, r"/memories/\d+/glossary", "glossaries"),
    (("put", "delete"), r"/memories/\d+", "editing or deleting a memory (its pairs are steps of the session's run)"),
    (("put", "delete"), r"/memories/\d+/(content|corpus)", "replacing or deleting a memory's pairs (a step adapted on "
                                                           "cannot be taken back from a client)"),
    (METHODS, r"/users/me", "user accounts"),
]


def refusal(scope, message: str, status: int, code: str) -> JSONResponse:
    """A refusal in ModernMT's envelope, logged as the page's."""
    status = 401 if code == "token" else status
    logged(scope, message, status, code)
    return JSONResponse({"status": status, "error": {"type": TYPES.get(code, "ParameterParsingException"),
                                                     "message": message}}, status_code=status, headers=HEADERS)


def create_api_app(session: ClientSession, token: str, hosts: list[str], max_request_bytes: int) -> Starlette:
    """The app of a `ClientSession` (module docstring); each endpoint takes the parameters, its path's match and the
    headers, and returns the answer's `data`."""
    source_lang, target_lang = session.languages_offered()

    def languages(params: dict, match, headers: Headers):
        return [code for code in (source_lang, target_lang) if code is not None]

    def pairs(params: dict, match, headers: Headers):
        return {source_lang: [target_lang]} if source_lang and target_lang else {}

    def translate(params: dict, match, headers: Headers):
        _only(params, TRANSLATE_KEYS, REFUSED_OPTIONS, "/translate")
        session.check_languages(params.get("source"), params.get("target"))
        q = params.get("q")
        texts = q if isinstance(q, list) else [q]
        if q is None or not texts:
            raise Refused("q: the text to translate, or a list of them, is required")
        if params.get("format") not in (None, "text/plain"):
            raise Refused(f"format={str(params['format'])[:40]}: adaptsim translates plain text only (text/plain)",
                          400, "unsupported")
        if _flag(params, "multiline", True) and any(isinstance(t, str) and ("\n" in t or "\r" in t)
                                                               for t in texts):
            raise Refused("q: a text with a line break, which ModernMT translates line by line (multiline); adaptsim "
                          "translates a segment at a time: send each line, or multiline=false for one segment", 400,
                          "unsupported")
        sources = [session.text(t, "q", empty=True) for t in texts]
        done = session.translate(sources, _hints(params.get("hints")))
        out = [{"translation": text, "characters": len(given), "billedCharacters": 0}
               for given, text in zip(texts, done)]
        return out if isinstance(q, list) else out[0]

    def memories(params: dict, match, headers: Headers):
        return session.memory_list()

    def create(params: dict, match, headers: Headers):
        _only(params, MEMORY_KEYS, {}, "/memories")
        name = params.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > session.max_chars:
            raise Refused("name: the memory's name is required (a string of at most serve.max_chars)")
        description, external = params.get("description"), params.get("external_id")
        for key, value in (("description", description), ("external_id", external)):
            if value is not None and (not isinstance(value, str) or len(value) > session.max_chars):
                raise Refused(f"{key}: a string of at most serve.max_chars")
        return session.create_memory(name, description, external)

    def memory(params: dict, match, headers: Headers):
        return session.memory(int(match.group(1)))

    def add(params: dict, match, headers: Headers):
        _only(params, ADD_KEYS, {"session": REFUSED_OPTIONS["session"]}, "/memories/{id}/content")
        session.check_languages(params.get("source"), params.get("target"))
        tuid = params.get("tuid")
        if tuid is not None and (not isinstance(tuid, str) or len(tuid) > session.max_chars):
            raise Refused("tuid: a string of at most serve.max_chars")
        texts = {key: session.text(params.get(key), key) for key in ("sentence", "translation")}
        sent = {"source_lang": params["source"], "target_lang": params["target"],
                **({"tuid": tuid} if tuid is not None else {}),
                **{key: headers[header][:200] for header, key in PLATFORM.items() if header in headers},
                **{f"sent_{key}": params[key] for key in texts if texts[key] != params[key]}}
        return session.add(int(match.group(1)), texts["sentence"], texts["translation"], sent)

    def job(params: dict, match, headers: Headers):
        return session.import_job(match.group(1))

    routes = [("get", r"/translate", translate), ("get", r"/translate/languages", languages),
              ("get", r"/languages", pairs), ("get", r"/memories", memories), ("post", r"/memories", create),
              ("get", r"/memories/(\d{1,18})", memory), ("post", r"/memories/(\d{1,18})/(?:content|corpus)", add),
              ("get", r"/(?:import-jobs|memories/imports)/([0-9a-f-]{36})", job)]
    routes = [(method, re.compile(path), work) for method, path, work in routes]
    not_offered = [(methods, re.compile(path), what) for methods, path, what in NOT_OFFERED]

    async def dispatch(request: Request) -> JSONResponse:
        scope = request.scope
        method = request.method.lower()
        override = request.headers.get("x-http-method-override")
        if override is not None and method == "post":
            method = override.strip().lower()
        path = request.url.path.rstrip("/") or "/"
        try:
            if method not in METHODS:
                raise Refused(f"{method[:20].upper()} {path[:100]}: not a method of this API", 405, "not_found")
            found = [(m, match, work) for m, pattern, work in routes if (match := pattern.fullmatch(path))]
            work = next(((match, w) for m, match, w in found if m == method), None)
            if work is None:
                what = next((what for methods, pattern, what in not_offered
                             if method in methods and pattern.fullmatch(path)), None)
                if what is not None:
                    raise Refused(f"{method.upper()} {path[:100]}: adaptsim does not offer {what}", 501, "not_offered")
                if found:
                    raise Refused(f"{method.upper()} {path[:100]}: not with this method", 405, "not_found")
                raise Refused(f"{method.upper()} {path[:100]}: no such endpoint", 404, "not_found")
            params = await _params(request, method, max_request_bytes)
            match, endpoint = work
            data = await run_in_threadpool(endpoint, params, match, request.headers)
        except Refused as e:
            return refusal(scope, str(e), e.status, e.code)
        except UserError as e:
            return refusal(scope, str(e), 400, "bad_request")
        except Exception as e:  # (a bug: still ModernMT's envelope, which its clients read)
            log.exception("serve: %s %s failed", method.upper(), path[:100])
            return refusal(scope, f"{type(e).__name__}: {' '.join(str(e).split())[:300]}", 500, "internal")
        return JSONResponse({"status": 200, "data": data}, headers=HEADERS)

    async def not_found(request: Request, exc) -> JSONResponse:  # (what Starlette's router does not take)
        return refusal(request.scope, f"{request.method[:20]} {request.url.path[:100]}: not answered here",
                       exc.status_code, "not_found")

    return Starlette(routes=[Route("/{path:path}", dispatch, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])],
                     exception_handlers={404: not_found, 405: not_found},
                     middleware=[Middleware(HostRequired, hosts=hosts, refuse=refusal),
                                 Middleware(TokenRequired, token=token, header=KEY_HEADER, query=False,
                                            refuse=refusal, where="the session's token, <serve.dir>/token")])


async def _params(request: Request, method: str, limit: int) -> dict:
    """The request's parameters: its query string's (a repeated key: a list), and its JSON body's on top. A change
    from a browser must come from this server's origin, and a body must be JSON (module docstring)."""
    headers = request.headers
    if method in CHANGES:
        origin, site = headers.get("origin"), headers.get("sec-fetch-site")
        if site is not None and site.lower() not in ("same-origin", "none"):
            raise Refused(f"Sec-Fetch-Site {site[:100]!r}: changes from this server's origin only", 403, "origin")
        if origin is not None and origin.lower() not in (f"{scheme}://{headers.get('host', '').lower()}"
                                                         for scheme in ("http", "https")):
            raise Refused(f"Origin {origin[:100]!r}: changes from this server's origin only", 403, "origin")
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    declared = headers.get("content-length")
    if kind not in ("", "application/json") and declared != "0":
        raise Refused(f"Content-Type {kind[:100]!r}: this API takes application/json (a file upload is not "
                      "offered)", 415, "origin")
    params: dict = {}
    for key, value in parse_qsl(request.url.query, keep_blank_values=True):
        if key == "q" and key in params:
            params[key] = [*(params[key] if isinstance(params[key], list) else [params[key]]), value]
        else:
            params[key] = value
    return params | await body_json(request, limit, empty=True)


def _flag(params: dict, key: str, default: bool) -> bool:
    """A boolean parameter: JSON's true or false, or the query string's "true" or "false"."""
    value = params.get(key, default)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise Refused(f"{key}={str(value)[:20]}: true or false")
    return value


def _only(params: dict, allowed: set, refused: dict, where: str) -> None:
    """One line for the first parameter that is refused (why), or unknown."""
    for key, value in params.items():
        if key in refused and value not in (None, False, 0, "", [], "0", "false"):
            raise Refused(f"{key}: adaptsim does not offer {refused[key]}", 400, "unsupported")
        if key not in allowed and key not in refused:
            raise Refused(f"{key[:40]}: not a parameter of {where} that adaptsim offers", 400, "unsupported")


def _hints(hints) -> list[int]:
    """Memory ids: "1,2" (ModernMT's clients join a list so), a number, or a list of them."""
    if hints is None or hints == "":
        return []
    items = hints.split(",") if isinstance(hints, str) else hints if isinstance(hints, list) else [hints]
    out = []
    for item in items:
        text = str(item).strip()
        if isinstance(item, bool) or not text.isdigit() or len(text) > 18:
            raise Refused(f"hints: {str(hints)[:60]}: memory ids, e.g. \"1,2\"")
        out.append(int(text))
    return out
