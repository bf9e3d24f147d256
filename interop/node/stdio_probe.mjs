#!/usr/bin/env node
// Differential edge-case probe for a 2026-07-28 stdio server. Each case spawns
// a FRESH server process, writes its lines to stdin, collects stdout lines for
// a short while, and prints one JSON line:
//   {"case":NAME,"sent":[...],"received":[<parsed lines>],"exit":CODE|null}
// Run it against the SDK reference server and against strict-mcp, then diff.
//
//   node stdio_probe.mjs [--tool echo] [--case NAME] -- COMMAND [ARGS...]
import { spawn } from 'node:child_process';
import readline from 'node:readline';

const argv = process.argv.slice(2);
let tool = 'echo';
let only;
let command;
for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--') {
        command = argv.slice(i + 1);
        break;
    } else if (argv[i] === '--tool') tool = argv[++i];
    else if (argv[i] === '--case') only = argv[++i];
    else {
        process.stderr.write(`stdio_probe: unknown argument ${argv[i]}\n`);
        process.exit(2);
    }
}
if (!command?.length) {
    process.stderr.write('usage: stdio_probe.mjs [--tool NAME] [--case NAME] -- COMMAND [ARGS...]\n');
    process.exit(2);
}

const V = '2026-07-28';
const meta = (version = V) => ({
    'io.modelcontextprotocol/protocolVersion': version,
    'io.modelcontextprotocol/clientInfo': { name: 'stdio-probe', version: '0.0.0' },
    'io.modelcontextprotocol/clientCapabilities': {}
});
const req = (id, method, params = {}, version = V) =>
    JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta(version) } });
const call = (id, args) => req(id, 'tools/call', { name: tool, arguments: args });

// [name, lines to send, number of responses to wait for]
const cases = [
    ['discover-ok', [req(1, 'server/discover')], 1],
    ['tools-list-without-discover', [req(1, 'tools/list')], 1],
    ['tools-call-without-discover', [call(1, { text: 'x' })], 1],
    ['unknown-method', [req(1, 'server/discover'), req(2, 'no/such/method')], 2],
    ['ping-removed-in-2026', [req(1, 'server/discover'), req(2, 'ping')], 2],
    ['unsupported-version', [req(1, 'tools/list', {}, '2099-01-01')], 1],
    ['invalid-json', ['{"jsonrpc":"2.0",', req(2, 'server/discover')], 2],
    ['batch-array', [`[${req(1, 'tools/list')},${req(2, 'tools/list')}]`], 1],
    ['notification-then-request', [JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9, _meta: meta() } }), req(1, 'tools/list')], 1],
    ['tools-call-invalid-arguments', [call(1, { text: 42 })], 1],
    ['tools-call-unknown-tool', [req(1, 'tools/call', { name: 'no_such_tool', arguments: {} })], 1],
    ['no-envelope-opening (2025-style, no initialize)', [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })], 1],
    ['modern-then-no-envelope', [req(1, 'tools/list'), JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} })], 2],
    ['legacy-initialize-opening', [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'p', version: '0' } } })], 1],
    ['string-and-null-ids', [req('a', 'tools/list'), JSON.stringify({ jsonrpc: '2.0', id: null, method: 'tools/list', params: { _meta: meta() } })], 2]
];

function runCase(name, lines, expect) {
    return new Promise(resolve => {
        const child = spawn(command[0], command.slice(1), { stdio: ['pipe', 'pipe', 'ignore'] });
        const received = [];
        let exit = null;
        let done = false;
        const finish = () => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            child.stdin.end();
            setTimeout(() => child.kill('SIGTERM'), 200).unref();
            resolve({ case: name, sent: lines.map(l => { try { return JSON.parse(l); } catch { return l; } }), received, exit });
        };
        const timer = setTimeout(finish, 3000);
        readline.createInterface({ input: child.stdout }).on('line', l => {
            let v;
            try { v = JSON.parse(l); } catch { v = { unparsable: l }; }
            received.push(v);
            // count responses only (ignore server notifications)
            if (received.filter(m => m && (m.result !== undefined || m.error !== undefined)).length >= expect) finish();
        });
        child.on('exit', code => {
            exit = code;
            setTimeout(finish, 50);
        });
        child.on('error', err => {
            received.push({ spawnError: err.message });
            finish();
        });
        for (const l of lines) child.stdin.write(l + '\n');
    });
}

for (const [name, lines, expect] of cases) {
    if (only && only !== name) continue;
    process.stdout.write(JSON.stringify(await runCase(name, lines, expect)) + '\n');
}
