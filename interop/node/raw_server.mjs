#!/usr/bin/env node
// Hand-rolled stdio MCP responder (no SDK) for probing what the peer clients
// accept: it answers server/discover, tools/list and tools/call with minimal
// 2026-07-28 results, and can drop fields from them.
//
//   node raw_server.mjs [--omit METHOD.FIELD[,METHOD.FIELD...]]
//   e.g. --omit tools/list.resultType,server/discover.ttlMs,tools/call._meta
//
// Tools: echo {text} -> text. Every received line is echoed to stderr as "raw_server <- ...".
import readline from 'node:readline';

const omit = new Set();
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--omit') {
        for (const f of argv[++i].split(',')) if (f) omit.add(f);
    } else {
        process.stderr.write(`raw_server: unknown argument ${argv[i]}\n`);
        process.exit(2);
    }
}

const meta = { 'io.modelcontextprotocol/serverInfo': { name: 'raw-server', version: '0.0.0' } };
const results = {
    'server/discover': () => ({
        supportedVersions: ['2026-07-28'],
        capabilities: { tools: {} },
        resultType: 'complete',
        ttlMs: 0,
        cacheScope: 'private',
        _meta: meta
    }),
    'tools/list': () => ({
        tools: [
            {
                name: 'echo',
                inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }
            }
        ],
        resultType: 'complete',
        ttlMs: 0,
        cacheScope: 'private',
        _meta: meta
    }),
    'tools/call': params => ({
        content: [{ type: 'text', text: String(params?.arguments?.text ?? '') }],
        resultType: 'complete',
        _meta: meta
    })
};

const send = obj => process.stdout.write(JSON.stringify(obj) + '\n');
readline.createInterface({ input: process.stdin }).on('line', line => {
    process.stderr.write(`raw_server <- ${line}\n`);
    let msg;
    try {
        msg = JSON.parse(line);
    } catch {
        send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
        return;
    }
    if (msg.id === undefined) return; // notification
    const make = results[msg.method];
    if (!make) {
        send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } });
        return;
    }
    const result = make(msg.params);
    for (const f of omit) {
        const dot = f.lastIndexOf('.');
        if (f.slice(0, dot) === msg.method) delete result[f.slice(dot + 1)];
    }
    send({ jsonrpc: '2.0', id: msg.id, result });
});
