#!/usr/bin/env python3
"""Interop client driver: the official Python SDK v2 (``mcp`` 2.3.0) talking to an MCP server.

Usage (run with the interop venv's python, .interop/venv/bin/python):

    py_client.py [options] --url http://127.0.0.1:PORT/mcp
    py_client.py [options] -- COMMAND [ARGS...]            (stdio: spawns COMMAND)
    MCP_SERVER_URL=... py_client.py [options]
    MCP_SERVER_CMD='["cmd","arg"]' py_client.py [options]  (JSON array)

Options (same meaning as ts_client.mjs):
    --era modern|auto|legacy   modern (default): pin 2026-07-28, no connect-time probe
                               (the SDK's mode="2026-07-28"); auto: probe server/discover
                               and fall back to initialize; legacy: initialize handshake
    --pin VERSION              modern revision (default 2026-07-28)
    --steps a,b,c              subset/order of discover,list,call,mrtr,elicit,subscribe
                               (elicit: the mrtr round reported as "elicitation", the
                               name of a legacy session's server-sent elicitation/create;
                               subscribe: resources/subscribe to --subscribe-uri, calls of
                               --touch-tool until notifications/resources/updated for it
                               arrives, resources/unsubscribe; 2025 sessions only)
    --tool NAME / --args JSON / --expect-text STR
    --mrtr-tool NAME / --mrtr-args JSON / --mrtr-expect-text STR
    --elicit-content JSON      content answered with action "accept" (default {"confirm":true})
    --subscribe-uri URI        resource of the subscribe step (default test://static-text)
    --touch-tool NAME          tool announcing its update (default test_touch_resource)
    --timeout SECONDS          per-request read timeout (default 15)

Output: one JSON object per line on stdout with "driver":"py", "step", "ok".
Exit 0 only if every step succeeded; 1 on any failure; 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

DRIVER = "py"
SDK = "mcp@2.3.0"
STEPS = ("discover", "list", "call", "mrtr", "elicit", "subscribe")

# The subscribe step: on HTTP the update travels on the session's standalone GET stream,
# which the SDK opens on its own after `notifications/initialized`; an update announced
# before that stream is attached is dropped (the 2025-11-25 transport allows it). So the
# touch is repeated until the notification arrives: at most TOUCH_ATTEMPTS touches, each
# awaited for TOUCH_WAIT_SECONDS (generous: a slow machine only needs more of them).
TOUCH_ATTEMPTS = 10
TOUCH_WAIT_SECONDS = 3.0


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"driver": DRIVER, **obj}, default=str, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def dump(model: Any) -> Any:
    if model is None:
        return None
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return model


def json_arg(label: str):
    def parse(text: str) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise argparse.ArgumentTypeError(f"{label} is not valid JSON: {e}") from e

    return parse


def parse_args(argv: list[str]) -> argparse.Namespace:
    command: list[str] | None = None
    if "--" in argv:
        i = argv.index("--")
        command, argv = argv[i + 1 :], argv[:i]
    p = argparse.ArgumentParser(prog="py_client.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=os.environ.get("MCP_SERVER_URL") or None)
    p.add_argument("--era", choices=("modern", "auto", "legacy"), default="modern")
    p.add_argument("--pin", default="2026-07-28")
    p.add_argument("--steps", default=",".join(STEPS))
    p.add_argument("--tool", default="echo")
    p.add_argument("--args", type=json_arg("--args"), default={"text": "hello"})
    p.add_argument("--expect-text")
    p.add_argument("--mrtr-tool", default="confirm_echo")
    p.add_argument("--mrtr-args", type=json_arg("--mrtr-args"), default={"text": "hi"})
    p.add_argument("--mrtr-expect-text")
    p.add_argument("--elicit-content", type=json_arg("--elicit-content"), default={"confirm": True})
    p.add_argument("--subscribe-uri", default="test://static-text")
    p.add_argument("--touch-tool", default="test_touch_resource")
    p.add_argument("--timeout", type=float, default=15.0)
    ns = p.parse_args(argv)
    if command is None and os.environ.get("MCP_SERVER_CMD"):
        command = json.loads(os.environ["MCP_SERVER_CMD"])
    ns.command = command
    ns.steps = [s for s in ns.steps.split(",") if s]
    bad = [s for s in ns.steps if s not in STEPS]
    if bad:
        p.error(f"bad step(s): {bad}")
    if not ns.url and not ns.command:
        p.error("need --url URL or -- COMMAND [ARGS...]")
    return ns


def error_json(err: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {"name": type(err).__name__, "message": str(err)}
    error = getattr(err, "error", None)  # mcp.shared.exceptions.MCPError carries ErrorData
    if error is not None and hasattr(error, "code"):
        out["code"] = error.code
        if getattr(error, "data", None) is not None:
            out["data"] = dump(error.data)
    # ExceptionGroup from anyio task groups: surface the leaves.
    leaves = getattr(err, "exceptions", None)
    if leaves:
        out["causes"] = [error_json(e) for e in leaves]
    return out


def texts(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if getattr(b, "type", None) == "text"]


class Run:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.failed = False
        self.elicitations: list[Any] = []
        # URIs of every notifications/resources/updated received, in order.
        self.updates: list[str] = []
        self.updated = anyio.Event()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updates.append(message.params.uri)
            self.updated.set()

    async def step(self, name: str, fn) -> bool:
        t0 = time.monotonic()
        try:
            extra = await fn()
            emit({"step": name, "ok": True, "ms": round((time.monotonic() - t0) * 1000), **(extra or {})})
            return True
        except Exception as err:  # noqa: BLE001 - every failure is reported as JSON
            self.failed = True
            traceback.print_exc(file=sys.stderr)
            emit({"step": name, "ok": False, "ms": round((time.monotonic() - t0) * 1000), "error": error_json(err)})
            return False

    async def on_elicit(self, _context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        # On 2026-07-28 this answers the embedded `elicitation/create` of an
        # input_required result; the SDK retries with inputResponses + requestState.
        self.elicitations.append(dump(params))
        return types.ElicitResult(action="accept", content=self.opts.elicit_content)

    async def main(self) -> int:
        o = self.opts
        server: Any
        if o.url:
            server = o.url
        else:
            # The SDK default passes only a few variables (HOME, PATH, ...); hand the
            # server the driver's whole environment so tests can set e.g. RUST_LOG.
            server = StdioServerParameters(command=o.command[0], args=list(o.command[1:]), env=dict(os.environ))
        mode = o.pin if o.era == "modern" else o.era
        client = Client(
            server,
            mode=mode,
            client_info=types.Implementation(name="strict-mcp-interop-py", version="0.1.0"),
            elicitation_callback=self.on_elicit,
            message_handler=self.on_message,
            read_timeout_seconds=o.timeout,
        )
        t0 = time.monotonic()
        connected = False
        try:
            async with client:
                connected = True
                emit(
                    {
                        "step": "connect",
                        "ok": True,
                        "ms": round((time.monotonic() - t0) * 1000),
                        "sdk": SDK,
                        "transport": "http" if o.url else "stdio",
                        "mode": mode,
                        "protocolVersion": client.protocol_version,
                        "serverInfo": dump(client.server_info),
                        "capabilities": dump(client.server_capabilities),
                    }
                )
                for s in o.steps:
                    await getattr(self, f"step_{s}")(client)
        except Exception as err:  # noqa: BLE001
            self.failed = True
            traceback.print_exc(file=sys.stderr)
            # After a successful connect, a transport crash surfaces here when the
            # SDK's task group unwinds (the step in flight is cancelled, not failed).
            emit({"step": "session" if connected else "connect", "ok": False, "ms": round((time.monotonic() - t0) * 1000), "error": error_json(err)})
        emit({"step": "done", "ok": not self.failed})
        return 1 if self.failed else 0

    async def step_discover(self, client: Client) -> None:
        async def run():
            if client.session.initialize_result is not None:
                return {"skipped": "legacy era: server/discover is not a 2025 method"}
            # Client.session.discover() returns the cached (for a pin: synthesized)
            # result, so send the request explicitly and adopt the real answer.
            raw = await client.session.send_discover(client.protocol_version)
            result = types.DiscoverResult.model_validate(raw)
            client.session.adopt(result)
            return {"result": dump(result)}

        await self.step("discover", run)

    async def step_list(self, client: Client) -> None:
        async def run():
            result = await client.list_tools(cache_mode="refresh")
            return {"tools": [t.name for t in result.tools], "result": dump(result)}

        await self.step("tools/list", run)

    async def step_call(self, client: Client) -> None:
        o = self.opts

        async def run():
            result = await client.call_tool(o.tool, o.args)
            if result.is_error:
                raise RuntimeError(f"tool returned isError: {dump(result)}")
            if o.expect_text is not None and o.expect_text not in texts(result):
                raise RuntimeError(f"expected text {o.expect_text!r}, got {texts(result)!r}")
            return {"tool": o.tool, "result": dump(result)}

        await self.step("tools/call", run)

    async def step_mrtr(self, client: Client, name: str = "mrtr") -> None:
        o = self.opts

        async def run():
            before = len(self.elicitations)
            result = await client.call_tool(o.mrtr_tool, o.mrtr_args)
            asked = self.elicitations[before:]
            if result.is_error:
                raise RuntimeError(f"tool returned isError: {dump(result)}")
            if not asked:
                raise RuntimeError("server never asked for input (no elicitation round)")
            if o.mrtr_expect_text is not None and o.mrtr_expect_text not in texts(result):
                raise RuntimeError(f"expected text {o.mrtr_expect_text!r}, got {texts(result)!r}")
            return {"tool": o.mrtr_tool, "elicitations": asked, "rounds": len(asked), "result": dump(result)}

        await self.step(name, run)

    async def step_elicit(self, client: Client) -> None:
        await self.step_mrtr(client, "elicitation")

    async def step_subscribe(self, client: Client) -> None:
        o = self.opts
        uri = o.subscribe_uri

        async def subscribe():
            return {"result": dump(await client.subscribe_resource(uri))}

        async def updated():
            for attempt in range(1, TOUCH_ATTEMPTS + 1):
                self.updated = anyio.Event()
                touch = await client.call_tool(o.touch_tool, {"uri": uri})
                if touch.is_error:
                    raise RuntimeError(f"touch failed: {dump(touch)}")
                with anyio.move_on_after(TOUCH_WAIT_SECONDS):
                    while uri not in self.updates:
                        await self.updated.wait()
                        self.updated = anyio.Event()
                if uri in self.updates:
                    return {"uri": self.updates[0], "touch": dump(touch), "attempts": attempt}
            raise RuntimeError(f"no notifications/resources/updated for {uri} after {TOUCH_ATTEMPTS} touches")

        async def unsubscribe():
            return {"result": dump(await client.unsubscribe_resource(uri))}

        if await self.step("resources/subscribe", subscribe):
            await self.step("resources/updated", updated)
            await self.step("resources/unsubscribe", unsubscribe)


def main() -> int:
    opts = parse_args(sys.argv[1:])
    return anyio.run(Run(opts).main)


if __name__ == "__main__":
    sys.exit(main())
