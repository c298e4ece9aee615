"""`adaptsim serve`: a translator post-edits in a web page while the method adapts (adaptsim/serve/, docs/serve.md).

    python -m adaptsim serve method=lasso model=demo dataset=demo [serve.port=8043]
    python -m adaptsim serve serve.methods=[full,lasso]                    # a blind study: methods by document
    python -m adaptsim serve resume=true serve.dir=outputs/serve/…         # go on where the translator stopped
    python -m adaptsim serve serve.api=modernmt method=lasso model=demo    # ModernMT's API, for a CAT tool
    python -m adaptsim serve serve.api=modernmt resume=true serve.finish=true serve.dir=…   # its run finished

The configuration is `run`'s plus `serve.*` (configs/serve.yaml); a resume starts from the settings the session was
started with (study.json), the command line's on top. The address printed holds the session's random token, the same
after a resume. The server runs until the translator ends the session (Finish now, or the last segment validated: it
then stops by itself, exit 0) or until Ctrl-C or SIGTERM (a run not finished is then `interrupted`, and resume=true
goes on with it). With serve.api=modernmt the server answers ModernMT's API instead of the page (its API key the
session's token; adaptsim/serve/modernmt.py, client.py) until Ctrl-C or SIGTERM, and `serve.finish=true` finishes
the resumed session's run without serving.
"""

from __future__ import annotations

import logging
import re
import secrets
import signal
import socket
import sys
from pathlib import Path

from adaptsim.errors import UserError, raise_terminated
from adaptsim.records import write_bytes_atomic

log = logging.getLogger("adaptsim")
USAGE = "usage: adaptsim serve [key=value …]   (run's settings and serve.*: configs/serve.yaml)"
TOKEN_FILE = "token"  # <serve.dir>/token: the session's token, readable by its owner only
TOKEN = re.compile(r"[A-Za-z0-9_-]{16,}")  # what secrets.token_urlsafe gives


def compose(argv: list[str]):
    """serve's config composed from `argv`; Hydra's composition errors (a bad override, an unknown option, a study's
    method too) as one line."""
    from adaptsim.launch import hydra_app

    try:
        return hydra_app.compose("serve", argv)
    except UserError:
        raise
    except Exception as e:
        raise UserError(hydra_app.composition_error(e, "serve")) from None


def configs(argv: list[str]) -> dict:
    """One composed config per method of the session, all naming the same session directory (resolved once)."""
    from adaptsim.serve.study import methods_of

    cfg = compose(argv)
    directory = str(cfg.serve.dir)
    methods = methods_of(cfg)
    pinned = [f"serve.dir='{directory}'"] if "'" not in directory else [f'serve.dir="{directory}"']
    if cfg.serve.methods is None:
        return {methods[0]: compose([*argv, *pinned])}
    rest = [a for a in argv if not a.startswith("method=")]  # the study's methods replace `method`
    return {m: compose([*rest, *pinned, f"method={m}"]) for m in methods}


def session_argv(argv: list[str]) -> list[str]:
    """The overrides of the session: for a resume, those it was started with (study.json) with the command line's on
    top (a key given again replaces the recorded one), so that `resume=true serve.dir=DIR` alone goes on with a
    session, a study's model, dataset, methods and translator included; a setting given with another value than the
    recorded one is still refused, by the one resume rule (adaptsim/launch/resume.py `check`). Else `argv`."""
    from adaptsim.serve.study import recorded_overrides

    cfg = compose(argv)
    if not cfg.resume:
        return list(argv)
    given = {_key(a) for a in argv}
    return [o for o in recorded_overrides(Path(str(cfg.serve.dir))) if _key(o) not in given] + list(argv)


def _key(override: str) -> str:
    """The setting an override names (`+x=1`, `++x=1`, `~x` name x)."""
    return override.split("=", 1)[0].lstrip("+~")


def session_token(directory: Path, resume: bool) -> str:
    """The session's token: random (`secrets.token_urlsafe`) for a new session, the recorded one for a resume, kept
    in <serve.dir>/token (mode 0600: it opens the session), written atomically before the address is printed. So the
    address stays valid across a resume: a browser tab open when the server was killed or stopped works again once it
    is resumed on the same host and port, rather than being refused with its typed text."""
    path = Path(directory) / TOKEN_FILE
    token = ""
    if resume and path.is_file():
        try:
            token = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise UserError(f"{path}: cannot read the session's token ({getattr(e, 'strerror', None) or e})") from None
    if not TOKEN.fullmatch(token):  # a new session (or one recorded before its token was kept)
        token = secrets.token_urlsafe(24)
    write_bytes_atomic(path, token.encode("ascii"), mode=0o600)
    return token


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (port 0: a free one), or one line saying why not."""
    try:
        family, kind, proto = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][:3]
        # with its protocol named (IPPROTO_TCP): asyncio sets TCP_NODELAY only on connections whose socket says TCP,
        # and without it every answer on a kept-alive connection waits ~40 ms for the client's delayed ACK
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as e:
        raise UserError(f"serve.host={host} serve.port={port}: cannot listen there ({e.strerror or e}); "
                        "serve.port=0 picks a free port") from None
    sock.listen(128)
    return sock


def _interrupted(signum, frame):
    raise KeyboardInterrupt


def allowed_hosts(host: str) -> list[str]:
    """The Host names a server bound to `host` answers to: a loopback address's names (an IPv6 one as a browser sends
    it, in brackets), or any elsewhere, where the Host is the machine's name."""
    if host not in ("127.0.0.1", "::1", "localhost"):
        return ["*"]
    return ["127.0.0.1", "[::1]", "localhost"]


def finish(session) -> int:
    """serve.finish=true: the API session's run finished on what its client added (adaptsim/serve/client.py)."""
    try:
        session.finish_session()
    finally:
        session.close()
    print(f"adaptsim serve: the session is finished; its records are in {session.dir}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE + "\n\n" + (__doc__ or ""))
        return 0
    if any(a.startswith("-") for a in argv):
        print(USAGE, file=sys.stderr)
        raise UserError(f"{next(a for a in argv if a.startswith('-'))}: serve takes key=value settings only")
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s", datefmt="%H:%M:%S")
    try:
        import uvicorn

        from adaptsim.serve.app import create_app
    except ModuleNotFoundError as e:  # the web server is an extra: say which, not a traceback
        from adaptsim import install_line

        raise UserError(f"adaptsim serve needs {e.name}, not installed: {install_line('serve')}") from None

    from adaptsim.loop.settings import validate
    from adaptsim.serve.client import ClientSession
    from adaptsim.serve.state import ServeSession

    argv = session_argv(argv)
    cfgs = configs(argv)
    first = next(iter(cfgs.values()))
    validate(first, "serve")  # before binding the port
    api = first.serve.api is not None
    if first.serve.finish:  # (serve.api's session, resumed: validate says so)
        return finish(ClientSession(cfgs, argv))
    sock = bind(first.serve.host, first.serve.port)
    # SIGTERM unwinds as SIGINT does (errors.Terminated), from loading the model on: the session is closed as
    # `interrupted` rather than left `running` by the default action (uvicorn, which stops on either, raises it again
    # once it has shut down). SIGINT gets a handler that is not Python's own, so that asyncio.run leaves it in place
    # and the signal raised again always ends the command as interrupted (exit 130, not 0 when the loop had ended).
    # Once the translator has ended the session, its records are final and neither interrupts anything: the command
    # ends as the translator ended it (exit 0).
    opened: list[ServeSession] = []

    def stop(signum, frame):
        if not (opened and opened[0].ended):
            (raise_terminated if signum == signal.SIGTERM else _interrupted)(signum, frame)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        session = (ClientSession if api else ServeSession)(cfgs, argv)
    except BaseException:
        sock.close()
        raise
    opened.append(session)
    try:
        host, port = sock.getsockname()[:2]
        token = session_token(session.dir, session.resume)
        shown = f"[{host}]" if ":" in host else host
        servers: list[uvicorn.Server] = []
        if api:
            from adaptsim.serve.modernmt import create_api_app

            app = create_api_app(session, token, allowed_hosts(host), int(first.serve.max_request_bytes))
        else:
            app = create_app(session, token, allowed_hosts(host), int(first.serve.max_request_bytes),
                             on_end=lambda: setattr(servers[0], "should_exit", True))
        servers.append(uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)))
        if api:
            print(f"adaptsim serve: ModernMT's API at http://{shown}:{port} (the base URL), API key {token}",
                  flush=True)
        else:
            print(f"adaptsim serve: open http://{shown}:{port}/?token={token}", flush=True)
        print(f"adaptsim serve: the session's records go to {session.dir}", flush=True)
        servers[0].run(sockets=[sock])
        if how := session.ended:
            said = {"finished": "the translator finished the session",
                    "complete": "the session is complete (every segment validated)"}[how]
            print(f"adaptsim serve: {said}; its records are in {session.dir}", flush=True)
    finally:
        session.close()
        sock.close()
    return 0
