#!/usr/bin/env node
// Interop driver for the initialise era: the official TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0) in its DEFAULT version negotiation (which
// opens with `initialize`, the 2025 lifecycle) against a strict-mcp server built
// with the `legacy` feature.
//
// Usage:
//   node ts_legacy.mjs --url http://127.0.0.1:PORT/mcp
//   node ts_legacy.mjs -- COMMAND [ARGS...]      (stdio: spawns COMMAND)
//
// Steps: connect, ping, tools/list, tools/call (test_simple_text),
// resources/list, resources/read (test://static-text), resources/read of an
// unknown URI (resource not found), elicitation (test_elicitation: the server sends
// elicitation/create, the handler below accepts with ELICIT_CONTENT, the tool reports it),
// tools/call of a tool that needs sampling, which this client does not declare (the
// confirmation_required tool failure), resources/subscribe (test://static-text),
// resources/updated (test_touch_resource announces an update; the notification must
// arrive), resources/unsubscribe, prompts/list, prompts/get (test_simple_prompt).
// Output: one JSON object per line on stdout ("driver":"ts-legacy", "step",
// "ok"); exit 0 only if every step succeeded.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const DRIVER = 'ts-legacy';
const emit = obj => process.stdout.write(JSON.stringify({ driver: DRIVER, ...obj }) + '\n');

const argv = process.argv.slice(2);
let url;
let command;
for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--url') url = argv[++i];
    else if (argv[i] === '--') {
        command = argv.slice(i + 1);
        break;
    } else {
        process.stderr.write(`ts_legacy: unknown argument ${argv[i]}\n`);
        process.exit(2);
    }
}
if (!url && !(command && command.length)) {
    process.stderr.write('ts_legacy: need --url URL or -- COMMAND [ARGS...]\n');
    process.exit(2);
}

// No versionNegotiation option: the SDK's default. Form elicitation is declared at
// `initialize` (the handler below answers it); sampling is not.
const client = new Client(
    { name: 'strict-mcp-interop-ts-legacy', version: '0.1.0' },
    { capabilities: { elicitation: { form: {} } } }
);

// What the elicitation handler answers (action "accept").
const ELICIT_CONTENT = { username: 'octocat', email: 'octocat@example.com' };
const elicitations = [];
client.setRequestHandler('elicitation/create', async request => {
    elicitations.push(request.params);
    return { action: 'accept', content: ELICIT_CONTENT };
});

// The URIs of every notifications/resources/updated received, in order.
const updates = [];
const updateWaiters = [];
client.setNotificationHandler('notifications/resources/updated', notification => {
    updates.push(notification.params.uri);
    for (const wake of updateWaiters.splice(0)) wake();
});
const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...process.env }, stderr: 'inherit' });

// On HTTP the update travels on the session's standalone GET stream, which the SDK opens
// on its own after `notifications/initialized`; an update announced before that stream is
// attached is dropped (the 2025-11-25 transport allows it). So the touch is repeated until
// the notification arrives: at most TOUCH_ATTEMPTS touches, each awaited for TOUCH_WAIT_MS
// (generous bounds: a slow machine only needs more of them).
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
        era: client.getProtocolEra?.(),
        protocolVersion: client.getNegotiatedProtocolVersion?.(),
        serverInfo: client.getServerVersion?.() ?? null,
        capabilities: client.getServerCapabilities?.() ?? null
    };
});
if (!failed) {
    await step('ping', async () => ({ result: await client.ping(opts) }));
    await step('tools/list', async () => ({ tools: (await client.listTools(undefined, opts)).tools.map(t => t.name) }));
    await step('tools/call', async () => {
        const result = await client.callTool({ name: 'test_simple_text', arguments: {} }, opts);
        if (result.isError) throw new Error(`isError: ${JSON.stringify(result.content)}`);
        return { result };
    });
    await step('resources/list', async () => ({
        resources: (await client.listResources(undefined, opts)).resources.map(r => r.uri)
    }));
    await step('resources/read', async () => ({
        result: await client.readResource({ uri: 'test://static-text' }, opts)
    }));
    await step('resources/read-unknown', async () => {
        try {
            await client.readResource({ uri: 'test://no-such-resource' }, opts);
        } catch (err) {
            // The server sends -32002 (tests/legacy_stdio.rs checks the bytes); the SDK may
            // surface it under its modern code. Either way the message says what happened.
            if ([-32002, -32602].includes(err?.code) && /Resource not found/.test(err?.message ?? '')) {
                return { code: err.code, message: err.message };
            }
            throw new Error(`expected resource-not-found, got ${err?.code}: ${err?.message}`);
        }
        throw new Error('an unknown resource was read');
    });
    await step('elicitation', async () => {
        const before = elicitations.length;
        const result = await client.callTool(
            { name: 'test_elicitation', arguments: { message: 'Who are you?' } },
            opts
        );
        const asked = elicitations.slice(before);
        if (result.isError) throw new Error(`isError: ${JSON.stringify(result.content)}`);
        if (asked.length === 0) throw new Error('the server never sent elicitation/create');
        return { elicitations: asked, result };
    });
    await step('tools/call-needs-input', async () => {
        const result = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'Say hi.' } }, opts);
        const text = result.content?.[0]?.text ?? '';
        if (!result.isError || !text.includes('"confirmation_required"')) {
            throw new Error(`expected the confirmation_required failure, got ${JSON.stringify(result)}`);
        }
        return { result };
    });
    const uri = 'test://static-text';
    await step('resources/subscribe', async () => ({ result: await client.subscribeResource({ uri }, opts) }));
    await step('resources/updated', async () => {
        for (let attempt = 1; attempt <= TOUCH_ATTEMPTS; attempt++) {
            const seen = updateFor(uri, TOUCH_WAIT_MS);
            const touch = await client.callTool({ name: 'test_touch_resource', arguments: { uri } }, opts);
            if (touch.isError) throw new Error(`touch failed: ${JSON.stringify(touch.content)}`);
            if (await seen) return { uri: updates[0], touch, attempts: attempt };
        }
        throw new Error(`no notifications/resources/updated for ${uri} after ${TOUCH_ATTEMPTS} touches`);
    });
    await step('resources/unsubscribe', async () => ({
        result: await client.unsubscribeResource({ uri }, opts)
    }));
    await step('prompts/list', async () => ({
        prompts: (await client.listPrompts(undefined, opts)).prompts.map(p => p.name)
    }));
    await step('prompts/get', async () => ({
        result: await client.getPrompt({ name: 'test_simple_prompt', arguments: {} }, opts)
    }));
}
try {
    await client.close();
} catch (err) {
    process.stderr.write(`ts_legacy: close failed: ${err?.message ?? err}\n`);
}
emit({ step: 'done', ok: !failed });
process.exit(failed ? 1 : 0);
