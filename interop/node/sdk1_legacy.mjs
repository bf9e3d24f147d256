#!/usr/bin/env node
// Interop driver for the initialise era: the TypeScript SDK v1 client
// (@modelcontextprotocol/sdk, 1.32.2 as resolved in package-lock.json, the newest 1.x
// there) against a strict-mcp server built with the `legacy` feature. SDK v1 knows only the
// 2025 lifecycle: it always opens with `initialize`.
//
// Usage:
//   node sdk1_legacy.mjs --url http://127.0.0.1:PORT/mcp
//   node sdk1_legacy.mjs -- COMMAND [ARGS...]      (stdio: spawns COMMAND)
//
// Steps: connect (over HTTP with the Mcp-Session-Id the server issued), ping, tools/list,
// tools/call (test_simple_text), resources/read (test://static-text), prompts/get
// (test_simple_prompt), elicitation (test_elicitation: the server sends elicitation/create,
// the handler below accepts with ELICIT_CONTENT, the tool reports it), resources/subscribe
// (test://static-text), resources/updated (test_touch_resource announces an update; the
// notification must arrive), resources/unsubscribe; over HTTP also terminate (DELETE of the
// session) and after-terminate (a request on the ended session must fail). Output: one JSON
// object per line on stdout ("driver":"sdk1-legacy", "step", "ok"); exit 0 only if every
// step succeeded.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const DRIVER = 'sdk1-legacy';
const emit = obj => process.stdout.write(JSON.stringify({ driver: DRIVER, ...obj }) + '\n');

const argv = process.argv.slice(2);
let url;
let command;
if (argv.length === 2 && argv[0] === '--url') url = argv[1];
else if (argv[0] === '--' && argv.length > 1) command = argv.slice(1);
else {
    process.stderr.write('sdk1_legacy: need --url URL or -- COMMAND [ARGS...]\n');
    process.exit(2);
}

// Form elicitation declared at `initialize` (SDK v1 checks a handler against it).
const client = new Client(
    { name: 'strict-mcp-interop-sdk1', version: '0.1.0' },
    { capabilities: { elicitation: { form: {} } } }
);
const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...process.env }, stderr: 'inherit' });

// The version the SDK accepted from the `initialize` answer, as it hands it to the transport
// (the HTTP transport keeps it for its header; the stdio one has no such hook, so one is
// added here).
let negotiated = null;
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = version => {
    negotiated = version;
    setVersion?.(version);
};

// What the elicitation handler answers (action "accept").
const ELICIT_CONTENT = { username: 'octocat', email: 'octocat@example.com' };
const elicitations = [];
client.setRequestHandler(ElicitRequestSchema, async request => {
    elicitations.push(request.params);
    return { action: 'accept', content: ELICIT_CONTENT };
});

// The URIs of every notifications/resources/updated received, in order.
const updates = [];
const updateWaiters = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, notification => {
    updates.push(notification.params.uri);
    for (const wake of updateWaiters.splice(0)) wake();
});

// As in ts_legacy.mjs: on HTTP an update announced before the SDK's standalone GET stream is
// attached is dropped, so the touch is repeated until the notification arrives.
const TOUCH_ATTEMPTS = 10;
const TOUCH_WAIT_MS = 3000;

// Resolves true once an update for `uri` was received, false after `ms`.
function updateFor(uri, ms) {
    return new Promise(resolve => {
        const timer = setTimeout(() => resolve(false), ms);
        const check = () => {
            if (updates.includes(uri)) {
                clearTimeout(timer);
                resolve(true);
            } else updateWaiters.push(check);
        };
        check();
    });
}

let failed = false;
async function step(name, fn) {
    try {
        emit({ step: name, ok: true, ...(await fn()) });
    } catch (err) {
        failed = true;
        emit({ step: name, ok: false, error: { message: String(err?.message ?? err), code: err?.code } });
    }
}
const opts = { timeout: 15000 };

await step('connect', async () => {
    await client.connect(transport, opts);
    return {
        transport: url ? 'http' : 'stdio',
        protocolVersion: negotiated,
        sessionId: transport.sessionId ?? null,
        serverInfo: client.getServerVersion() ?? null,
        capabilities: client.getServerCapabilities() ?? null
    };
});
if (!failed) {
    await step('ping', async () => ({ result: await client.ping(opts) }));
    await step('tools/list', async () => ({ tools: (await client.listTools(undefined, opts)).tools.map(t => t.name) }));
    await step('tools/call', async () => {
        const result = await client.callTool({ name: 'test_simple_text', arguments: {} }, undefined, opts);
        if (result.isError) throw new Error(`isError: ${JSON.stringify(result.content)}`);
        return { result };
    });
    await step('resources/read', async () => ({
        result: await client.readResource({ uri: 'test://static-text' }, opts)
    }));
    await step('prompts/get', async () => ({
        result: await client.getPrompt({ name: 'test_simple_prompt', arguments: {} }, opts)
    }));
    await step('elicitation', async () => {
        const before = elicitations.length;
        const result = await client.callTool(
            { name: 'test_elicitation', arguments: { message: 'Who are you?' } },
            undefined,
            opts
        );
        const asked = elicitations.slice(before);
        if (result.isError) throw new Error(`isError: ${JSON.stringify(result.content)}`);
        if (asked.length === 0) throw new Error('the server never sent elicitation/create');
        return { elicitations: asked, result };
    });
    const uri = 'test://static-text';
    await step('resources/subscribe', async () => ({ result: await client.subscribeResource({ uri }, opts) }));
    await step('resources/updated', async () => {
        for (let attempt = 1; attempt <= TOUCH_ATTEMPTS; attempt++) {
            const seen = updateFor(uri, TOUCH_WAIT_MS);
            const touch = await client.callTool({ name: 'test_touch_resource', arguments: { uri } }, undefined, opts);
            if (touch.isError) throw new Error(`touch failed: ${JSON.stringify(touch.content)}`);
            if (await seen) return { uri: updates[0], touch, attempts: attempt };
        }
        throw new Error(`no notifications/resources/updated for ${uri} after ${TOUCH_ATTEMPTS} touches`);
    });
    await step('resources/unsubscribe', async () => ({
        result: await client.unsubscribeResource({ uri }, opts)
    }));
}
if (!failed && url) {
    let ended = null;
    await step('terminate', async () => {
        ended = transport.sessionId;
        await transport.terminateSession();
        return { sessionId: transport.sessionId ?? null };
    });
    // The SDK forgets the id after terminating; send one request with the ended id by hand.
    await step('after-terminate', async () => {
        const res = await fetch(url, {
            method: 'POST',
            headers: {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'mcp-protocol-version': '2025-11-25',
                'mcp-session-id': ended ?? ''
            },
            body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
            signal: AbortSignal.timeout(5000)
        });
        return { status: res.status, body: await res.json() };
    });
}
try {
    await client.close();
} catch (err) {
    process.stderr.write(`sdk1_legacy: close failed: ${err?.message ?? err}\n`);
}
emit({ step: 'done', ok: !failed });
process.exit(failed ? 1 : 0);
