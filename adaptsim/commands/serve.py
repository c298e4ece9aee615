"""`adaptsim serve`: a translator post-edits in a web page while the method adapts (adaptsim/serve/, docs/serve.md).

    python -m adaptsim serve method=lasso model=demo dataset=demo [serve.port=8043]
    python -m adaptsim serve serve.methods=[full,lasso]                    # a blind study: methods by document
    python -m adaptsim serve resume=true serve.dir=outputs/serve/…         # go on where the translator stopped

The configuration is `run`'s plus `serve.*` (configs/serve.yaml). The address printed holds the session's random
token; the server runs until Ctrl-C or SIGTERM (a run not finished is then `interrupted`, and resume=true goes on with
it).
"""

from __future__ import annotations

import logging
import secrets
import signal
import socket
import sys

from adaptsim.errors import UserError, raise_terminated

log = logging.getLogger("adaptsim")
USAGE = "usage: adaptsim serve [key=value …]   (run's settings and serve.*: configs/serve.yaml)"


def configs(argv: list[str]) -> dict:
    """One composed config per method of the session, all naming the same session directory (resolved once)."""
    from adaptsim.launch.hydra_app import compose
    from adaptsim.serve.study import methods_of

    try:
        cfg = compose("serve", argv)
        directory = str(cfg.serve.dir)
        methods = methods_of(cfg)
        pinned = [f"serve.dir='{directory}'"] if "'" not in directory else [f'serve.dir="{directory}"']
        if cfg.serve.methods is None:
            return {methods[0]: compose("serve", [*argv, *pinned])}
        rest = [a for a in argv if not a.startswith("method=")]  # the study's methods replace `method`
        return {m: compose("serve", [*rest, *pinned, f"method={m}"]) for m in methods}
    except UserError:
        raise
    except Exception as e:  # Hydra's composition errors: a bad override, an unknown option (a study's method too)
        raise UserError(" ".join(str(e).split()).split(" Config search path")[0][:400]) from None


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


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE + "\n\n" + (__doc__ or ""))
        return 0
    if any(a.startswith("-") for a in argv):
        print(USAGE, file=sys.stderr)
        raise UserError(f"{next(a for a in argv if a.startswith('-'))}: serve takes key=value settings only")
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s", datefmt="%H:%M:%S")
    import uvicorn

    from adaptsim.loop.settings import validate
    from adaptsim.serve.app import create_app
    from adaptsim.serve.state import ServeSession

    cfgs = configs(argv)
    first = next(iter(cfgs.values()))
    validate(first, "serve")  # before binding the port
    sock = bind(first.serve.host, first.serve.port)
    # SIGTERM unwinds as SIGINT does (errors.Terminated), from loading the model on: the session is closed as
    # `interrupted` rather than left `running` by the default action (uvicorn, which stops on either, raises it again
    # once it has shut down). SIGINT gets a handler that is not Python's own, so that asyncio.run leaves it in place
    # and the signal raised again always ends the command as interrupted (exit 130, not 0 when the loop had ended).
    signal.signal(signal.SIGTERM, raise_terminated)
    signal.signal(signal.SIGINT, _interrupted)
    session = ServeSession(cfgs, argv)
    try:
        host, port = sock.getsockname()[:2]
        token = secrets.token_urlsafe(24)
        shown = f"[{host}]" if ":" in host else host
        app = create_app(session, token, allowed_hosts(host), int(first.serve.max_request_bytes))
        print(f"adaptsim serve: open http://{shown}:{port}/?token={token}", flush=True)
        print(f"adaptsim serve: the session's records go to {session.dir}", flush=True)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        server.run(sockets=[sock])
    finally:
        session.close()
        sock.close()
    return 0
