#!/usr/bin/env node
// A server built on the official TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0) for
// the strict client's interop tests (tests/client_interop.rs). It serves tools, a resource, a
// prompt and `subscriptions/listen`, all with fixed, recognisable values the tests assert.
//
//   node ts_server.mjs               # stdio (serveStdio)
//   node ts_server.mjs --http PORT   # Streamable HTTP on http://127.0.0.1:PORT/mcp (0: any port)
//   node ts_server.mjs --http PORT --sse   # same, every response as an SSE stream
//
// Over HTTP the first stdout line is {"listening":"http://127.0.0.1:PORT/mcp"}.
//
// Tools:
//   echo           {text}  -> text content "<text>"
//   confirm_echo   {text}  -> round 1: input_required, inputRequests.confirm = form elicitation
//                             {confirm: boolean}, requestState "confirm_echo/round-1";
//                             round 2: "confirmed: <text>" (confirm true) or "declined"
//   touch_tools    {}      -> announces notifications/tools/list_changed, then "touched tools"
//   sleep          {ms}    -> waits ms (or until cancelled), then "slept <ms>"
//   count          {n}     -> n notifications/progress (i of n, "step i") when the request has a
//                             progressToken, then "counted <n>"
//   fail           {}      -> throws Error("boom"): the SDK answers an isError result
//   touch          {}      -> announces notifications/resources/updated for the resource
//                             (to every listen stream subscribed to it), then "touched"
// Resource: strict://interop/greeting (text/plain) "hello from the ts server"
// Prompt:   greet {name} -> one user message "Hello, <name>!"
import {
    McpServer,
    acceptedContent,
    createMcpHandler,
    inputRequired,
    inputResponse
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';
import { serveHttp } from './serve_http.mjs';

const SERVER_INFO = { name: 'strict-mcp-interop-ts', version: '0.1.0' };
const RESOURCE_URI = 'strict://interop/greeting';
const RESOURCE_TEXT = 'hello from the ts server';
// A fixed state so the tests can check that the client echoes it byte for byte.
// (A real server integrity-protects requestState; this is a test fixture.)
const CONFIRM_STATE = 'confirm_echo/round-1';

// How a tool announces a resource change: over HTTP through the handler's bus (listen
// streams are served by the entry, not by the per-request instance); over stdio through
// the connection's pinned instance, whose notifications the entry routes to the streams.
let announceUpdated = async () => {};
let announceToolsChanged = async () => {};

function buildServer() {
    const server = new McpServer(SERVER_INFO, {
        capabilities: {
            tools: { listChanged: true },
            resources: { subscribe: true, listChanged: true },
            prompts: {}
        }
    });

    server.registerTool(
        'echo',
        { description: 'Echo the given text back.', inputSchema: z.object({ text: z.string() }) },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
    );

    const confirmSchema = z.object({ confirm: z.boolean() });
    server.registerTool(
        'confirm_echo',
        {
            description: 'Ask for confirmation (one input round), then echo the text.',
            inputSchema: z.object({ text: z.string() })
        },
        async ({ text }, ctx) => {
            const state = ctx.mcpReq.requestState?.();
            const view = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
            if (view.kind === 'missing') {
                return inputRequired({
                    inputRequests: {
                        confirm: inputRequired.elicit({ message: `Echo "${text}"?`, requestedSchema: confirmSchema })
                    },
                    requestState: CONFIRM_STATE
                });
            }
            const accepted = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmSchema);
            const note = state === CONFIRM_STATE ? '' : ` (unexpected requestState ${JSON.stringify(state)})`;
            return { content: [{ type: 'text', text: accepted?.confirm === true ? `confirmed: ${text}${note}` : `declined${note}` }] };
        }
    );

    server.registerTool(
        'touch',
        { description: 'Announce an update of the greeting resource.', inputSchema: z.object({}) },
        async () => {
            await announceUpdated(server);
            return { content: [{ type: 'text', text: 'touched' }] };
        }
    );

    server.registerTool(
        'touch_tools',
        { description: 'Announce a change of the tool list.', inputSchema: z.object({}) },
        async () => {
            await announceToolsChanged(server);
            return { content: [{ type: 'text', text: 'touched tools' }] };
        }
    );

    server.registerTool(
        'sleep',
        {
            description: 'Wait ms milliseconds (or until the request is cancelled), then answer.',
            inputSchema: z.object({ ms: z.number().int().min(0).max(60000) })
        },
        async ({ ms }, ctx) => {
            await new Promise(resolve => {
                const timer = setTimeout(resolve, ms);
                ctx.mcpReq.signal.addEventListener('abort', () => {
                    clearTimeout(timer);
                    resolve();
                });
            });
            return { content: [{ type: 'text', text: `slept ${ms}` }] };
        }
    );

    server.registerTool(
        'count',
        {
            description: 'Report progress n times (when the request asked for it), then answer.',
            inputSchema: z.object({ n: z.number().int().min(1).max(10) })
        },
        async ({ n }, ctx) => {
            const progressToken = ctx.mcpReq._meta?.progressToken;
            for (let i = 1; i <= n && progressToken !== undefined; i++) {
                await ctx.mcpReq.notify({
                    method: 'notifications/progress',
                    params: { progressToken, progress: i, total: n, message: `step ${i}` }
                });
            }
            return { content: [{ type: 'text', text: `counted ${n}` }] };
        }
    );

    server.registerTool(
        'fail',
        { description: 'Always fails: its error is the tool result.', inputSchema: z.object({}) },
        async () => {
            throw new Error('boom');
        }
    );

    server.registerResource(
        'greeting',
        RESOURCE_URI,
        { title: 'Greeting', description: 'A fixed greeting.', mimeType: 'text/plain' },
        async uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: RESOURCE_TEXT }] })
    );

    server.registerPrompt(
        'greet',
        { description: 'Greet someone by name.', argsSchema: z.object({ name: z.string() }) },
        ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }] })
    );
    return server;
}

function parseArgs(argv) {
    const out = { http: undefined, sse: false };
    for (let i = 0; i < argv.length; i++) {
        if (argv[i] === '--http') out.http = Number(argv[++i]);
        else if (argv[i] === '--sse') out.sse = true;
        else {
            process.stderr.write(`ts_server: unknown argument ${argv[i]}\nusage: ts_server.mjs [--http PORT [--sse]]\n`);
            process.exit(2);
        }
    }
    return out;
}

function serve(port, sse) {
    const handler = createMcpHandler(buildServer, {
        responseMode: sse ? 'sse' : 'auto',
        onerror: err => process.stderr.write(`ts_server: ${err?.message ?? err}\n`)
    });
    announceUpdated = async () => handler.notify.resourceUpdated(RESOURCE_URI);
    announceToolsChanged = async () => handler.notify.toolsChanged();
    // A listen stream ends when its client goes away: the request is aborted then.
    serveHttp({ name: 'ts_server', port, handler, abortOnClose: true });
}

const args = parseArgs(process.argv.slice(2));
if (args.http !== undefined) serve(args.http, args.sse);
else {
    announceUpdated = async server => server.server.sendResourceUpdated({ uri: RESOURCE_URI });
    announceToolsChanged = async server => server.sendToolListChanged();
    serveStdio(buildServer, { onerror: err => process.stderr.write(`ts_server: ${err?.message ?? err}\n`) });
}
