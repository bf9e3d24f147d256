#!/usr/bin/env node
// Differential edge-case probe for a 2026-07-28 Streamable HTTP endpoint.
// Sends a fixed list of hand-built requests (valid, malformed, mismatched
// headers, removed methods, ...) and prints one JSON line per case:
//   {"case":NAME,"status":200,"contentType":"application/json","body":<parsed JSON | SSE events | text>}
// Run it against the SDK reference server and against strict-mcp, then diff.
// It never fails on a response: it records. Exit 2 only on usage errors.
//
//   node http_probe.mjs http://127.0.0.1:PORT/mcp [--tool echo] [--case NAME]
const argv = process.argv.slice(2);
let url;
let tool = 'echo';
let only;
for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--tool') tool = argv[++i];
    else if (argv[i] === '--case') only = argv[++i];
    else if (!url) url = argv[i];
    else {
        process.stderr.write(`http_probe: unknown argument ${argv[i]}\n`);
        process.exit(2);
    }
}
if (!url) {
    process.stderr.write('usage: http_probe.mjs URL [--tool NAME] [--case NAME]\n');
    process.exit(2);
}
if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) {
    process.stderr.write('http_probe: only loopback URLs\n');
    process.exit(2);
}

const V = '2026-07-28';
const envelope = (version = V) => ({
    'io.modelcontextprotocol/protocolVersion': version,
    'io.modelcontextprotocol/clientInfo': { name: 'http-probe', version: '0.0.0' },
    'io.modelcontextprotocol/clientCapabilities': {}
});
const req = (id, method, params = {}, version = V) => ({
    jsonrpc: '2.0',
    id,
    method,
    params: { ...params, _meta: envelope(version) }
});
const std = (method, extra = {}) => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': V,
    'mcp-method': method,
    ...extra
});
const call = (id, args = { text: 'x' }) => req(id, 'tools/call', { name: tool, arguments: args });

const cases = [
    ['discover-ok', 'POST', std('server/discover'), req(1, 'server/discover')],
    ['tools-list-ok', 'POST', std('tools/list'), req(2, 'tools/list')],
    ['tools-call-ok', 'POST', std('tools/call', { 'mcp-name': tool }), call(3)],
    ['no-protocol-version-header', 'POST', (({ 'mcp-protocol-version': _, ...h }) => h)(std('tools/list')), req(4, 'tools/list')],
    ['header-version-differs-from-meta', 'POST', std('tools/list', { 'mcp-protocol-version': '2025-11-25' }), req(5, 'tools/list')],
    ['unsupported-version', 'POST', std('tools/list', { 'mcp-protocol-version': '2099-01-01' }), req(6, 'tools/list', {}, '2099-01-01')],
    ['no-mcp-method-header', 'POST', (({ 'mcp-method': _, ...h }) => h)(std('tools/list')), req(7, 'tools/list')],
    ['mcp-method-mismatch', 'POST', std('tools/call', { 'mcp-name': tool }), req(8, 'tools/list')],
    ['tools-call-no-mcp-name', 'POST', std('tools/call'), call(9)],
    ['tools-call-mcp-name-mismatch', 'POST', std('tools/call', { 'mcp-name': 'other' }), call(10)],
    ['no-envelope-no-header (2025-style)', 'POST', { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, { jsonrpc: '2.0', id: 11, method: 'tools/list', params: {} }],
    ['envelope-missing-meta-with-modern-header', 'POST', std('tools/list'), { jsonrpc: '2.0', id: 12, method: 'tools/list', params: {} }],
    ['unknown-method', 'POST', std('no/such/method'), req(13, 'no/such/method')],
    ['ping-removed-in-2026', 'POST', std('ping'), req(14, 'ping')],
    ['initialize-with-modern-envelope', 'POST', std('initialize'), req(15, 'initialize', { protocolVersion: V, capabilities: {}, clientInfo: { name: 'p', version: '0' } })],
    ['tools-call-unknown-tool', 'POST', std('tools/call', { 'mcp-name': 'no_such_tool' }), req(16, 'tools/call', { name: 'no_such_tool', arguments: {} })],
    ['tools-call-invalid-arguments', 'POST', std('tools/call', { 'mcp-name': tool }), call(17, { text: 42 })],
    ['notification', 'POST', std('notifications/cancelled'), { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: envelope() } }],
    ['batch-array', 'POST', std('tools/list'), [req(18, 'tools/list'), req(19, 'tools/list')]],
    ['invalid-json', 'POST', std('tools/list'), '{"jsonrpc":"2.0",'],
    ['wrong-content-type', 'POST', std('tools/list', { 'content-type': 'text/plain' }), req(20, 'tools/list')],
    ['accept-json-only', 'POST', std('tools/list', { accept: 'application/json' }), req(21, 'tools/list')],
    ['accept-sse-only', 'POST', std('tools/list', { accept: 'text/event-stream' }), req(22, 'tools/list')],
    ['get', 'GET', { accept: 'text/event-stream', 'mcp-protocol-version': V }, undefined],
    ['delete', 'DELETE', { 'mcp-protocol-version': V }, undefined],
    ['session-id-header', 'POST', std('tools/list', { 'mcp-session-id': 'abc' }), req(23, 'tools/list')]
];

function parseBody(contentType, text) {
    if (!text) return undefined;
    if (contentType?.startsWith('text/event-stream')) {
        return text
            .split(/\n\n/)
            .filter(Boolean)
            .map(ev => {
                const out = {};
                for (const line of ev.split('\n')) {
                    const m = /^(\w+): ?(.*)$/.exec(line);
                    if (!m) continue;
                    out[m[1]] = m[1] === 'data' ? (() => { try { return JSON.parse(m[2]); } catch { return m[2]; } })() : m[2];
                }
                return out;
            });
    }
    try {
        return JSON.parse(text);
    } catch {
        return text;
    }
}

for (const [name, method, headers, body] of cases) {
    if (only && only !== name) continue;
    const line = { case: name };
    try {
        const res = await fetch(url, {
            method,
            headers,
            body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
            signal: AbortSignal.timeout(5000)
        });
        line.status = res.status;
        line.contentType = res.headers.get('content-type');
        const allow = res.headers.get('allow');
        if (allow) line.allow = allow;
        // A stream that stays open (e.g. GET) is cut after a short read.
        const reader = res.body?.getReader();
        let text = '';
        if (reader) {
            const dec = new TextDecoder();
            const deadline = Date.now() + 1500;
            for (;;) {
                const r = await Promise.race([
                    reader.read(),
                    new Promise(resolve => setTimeout(() => resolve({ timeout: true }), Math.max(0, deadline - Date.now())))
                ]);
                if (r.timeout) {
                    line.streamLeftOpen = true;
                    reader.cancel().catch(() => {});
                    break;
                }
                if (r.done) break;
                text += dec.decode(r.value, { stream: true });
            }
        }
        line.body = parseBody(line.contentType, text);
    } catch (err) {
        line.error = String(err?.message ?? err);
    }
    process.stdout.write(JSON.stringify(line) + '\n');
}
