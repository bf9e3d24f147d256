#!/usr/bin/env node
// Interop driver for the initialise era: the TypeScript SDK v1 client
// (@modelcontextprotocol/sdk, 1.32.2 as resolved in package-lock.json, the newest 1.x
// there) against a strict-mcp server built with the `legacy` feature. SDK v1 knows only the
// 2025 lifecycle: it always opens with `initialize`.
//
// Usage:
//   node sdk1_legacy.mjs --url http://127.0.0.1:PORT/mcp
//
// Steps: connect (with the Mcp-Session-Id the server issued), ping, tools/list,
// tools/call (test_simple_text), resources/read (test://static-text), prompts/get
// (test_simple_prompt), terminate (DELETE of the session), after-terminate (a request on the
// ended session must fail). Output: one JSON object per line on stdout
// ("driver":"sdk1-legacy", "step", "ok"); exit 0 only if every step succeeded.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const DRIVER = 'sdk1-legacy';
const emit = obj => process.stdout.write(JSON.stringify({ driver: DRIVER, ...obj }) + '\n');

const argv = process.argv.slice(2);
if (argv.length !== 2 || argv[0] !== '--url') {
    process.stderr.write('sdk1_legacy: need --url URL\n');
    process.exit(2);
}
const url = argv[1];

const client = new Client({ name: 'strict-mcp-interop-sdk1', version: '0.1.0' }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(url));

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
        protocolVersion: transport.protocolVersion ?? null,
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
