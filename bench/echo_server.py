"""A bare aiohttp WebSocket echo handler: the transport's own limit (load benchmark baseline).

Answers every binary frame with one binary frame of ``--reply-size`` bytes (the
request's bytes, padded), so the harness can send act-sized requests and get
ack-sized replies, exactly like the race server's traffic, with no work in between.

    python3 bench/echo_server.py --port 8765 --reply-size 700
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

# Run as a script: the repository's root on the path, for bench.devtools.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp import WSMsgType, web

from bench.devtools import raise_nofile_limit


def make_app(reply_size: int) -> web.Application:
    async def echo(request: web.Request) -> web.WebSocketResponse:
        # Same frame limit as the race server; no compression (the server offers none).
        ws = web.WebSocketResponse(max_msg_size=4096, compress=False)
        await ws.prepare(request)
        async for msg in ws:
            if msg.type == WSMsgType.BINARY:
                data = msg.data
                if len(data) < reply_size:
                    data = data + bytes(reply_size - len(data))
                await ws.send_bytes(data)
        return ws

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/ws", echo)
    app.router.add_get("/healthz", healthz)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--reply-size", type=int, default=700)
    parser.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="event loop (default uvloop, as the race server's default)",
    )
    args = parser.parse_args()
    raise_nofile_limit()
    print(f"listening on http://{args.host}:{args.port}", flush=True)
    loop = None
    if args.loop == "uvloop":
        import uvloop

        loop = uvloop.new_event_loop()
        asyncio.set_event_loop(loop)
    web.run_app(make_app(args.reply_size), host=args.host, port=args.port, print=None, loop=loop)


if __name__ == "__main__":
    main()
