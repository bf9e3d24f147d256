#!/usr/bin/env node
// Interop client driver: the official TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0) talking to an MCP server.
//
// Usage:
//   node ts_client.mjs [options] --url http://127.0.0.1:PORT/mcp
//   node ts_client.mjs [options] -- COMMAND [ARGS...]      (stdio: spawns COMMAND)
//   MCP_SERVER_URL=... node ts_client.mjs [options]
//   MCP_SERVER_CMD='["cmd","arg"]' node ts_client.mjs [options]   (JSON array)
//
// Options:
//   --era modern|auto|legacy   version negotiation (default modern = pin 2026-07-28)
//   --pin VERSION              modern revision to pin (default 2026-07-28)
//   --steps a,b,c              subset/order of: discover,list,call,mrtr
//                              (default: discover,list,call,mrtr; mrtr only
//                              runs when --mrtr-tool is set or defaulted)
//   --tool NAME                tool for the "call" step (default echo)
//   --args JSON                arguments for it (default {"text":"hello"})
//   --expect-text STR          fail the call step unless a text block equals STR
//   --mrtr-tool NAME           tool that answers input_required (default confirm_echo)
//   --mrtr-args JSON           its arguments (default {"text":"hi"})
//   --mrtr-expect-text STR     fail the mrtr step unless a text block equals STR
//   --elicit-content JSON      content returned with action "accept"
//                              (default {"confirm":true})
//   --timeout MS               per-request timeout (default 15000)
//
// Output: one JSON object per line on stdout, each with "driver":"ts",
// "step" and "ok". Exit 0 only if every step succeeded; 1 on any failure;
// 2 on usage errors. Diagnostics go to stderr.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const DRIVER = 'ts';
const SDK = '@modelcontextprotocol/client@2.4.0';

function emit(obj) {
    process.stdout.write(JSON.stringify({ driver: DRIVER, ...obj }) + '\n');
}

function usage(msg) {
    process.stderr.write(`ts_client: ${msg}\n`);
    process.exit(2);
}

function parseJson(label, text) {
    try {
        return JSON.parse(text);
    } catch (e) {
        usage(`${label} is not valid JSON: ${e.message}`);
    }
}

function parseArgs(argv) {
    const o = {
        url: process.env.MCP_SERVER_URL || undefined,
        command: process.env.MCP_SERVER_CMD ? parseJson('MCP_SERVER_CMD', process.env.MCP_SERVER_CMD) : undefined,
        era: 'modern',
        pin: '2026-07-28',
        steps: ['discover', 'list', 'call', 'mrtr'],
        tool: 'echo',
        args: { text: 'hello' },
        expectText: undefined,
        mrtrTool: 'confirm_echo',
        mrtrArgs: { text: 'hi' },
        mrtrExpectText: undefined,
        elicitContent: { confirm: true },
        timeout: 15000
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) usage(`${a} needs a value`);
            return argv[++i];
        };
        switch (a) {
            case '--':
                o.command = argv.slice(i + 1);
                i = argv.length;
                break;
            case '--url': o.url = next(); break;
            case '--era': o.era = next(); break;
            case '--pin': o.pin = next(); break;
            case '--steps': o.steps = next().split(',').filter(Boolean); break;
            case '--tool': o.tool = next(); break;
            case '--args': o.args = parseJson('--args', next()); break;
            case '--expect-text': o.expectText = next(); break;
            case '--mrtr-tool': o.mrtrTool = next(); break;
            case '--mrtr-args': o.mrtrArgs = parseJson('--mrtr-args', next()); break;
            case '--mrtr-expect-text': o.mrtrExpectText = next(); break;
            case '--elicit-content': o.elicitContent = parseJson('--elicit-content', next()); break;
            case '--timeout': o.timeout = Number(next()); break;
            case '-h':
            case '--help':
                process.stderr.write('see the header of ts_client.mjs or interop/README.md\n');
                process.exit(0);
            default:
                usage(`unknown argument ${a}`);
        }
    }
    if (!o.url && !(Array.isArray(o.command) && o.command.length)) usage('need --url URL or -- COMMAND [ARGS...]');
    if (!['modern', 'auto', 'legacy'].includes(o.era)) usage(`bad --era ${o.era}`);
    for (const s of o.steps) if (!['discover', 'list', 'call', 'mrtr'].includes(s)) usage(`bad step ${s}`);
    return o;
}

function errorJson(err) {
    const out = { name: err?.name, message: String(err?.message ?? err) };
    if (err?.code !== undefined) out.code = err.code;
    if (err?.data !== undefined) out.data = err.data;
    return out;
}

function texts(result) {
    return (result?.content ?? []).filter(b => b.type === 'text').map(b => b.text);
}

const opts = parseArgs(process.argv.slice(2));
let failed = false;
const elicitations = [];

const versionNegotiation =
    opts.era === 'modern' ? { mode: { pin: opts.pin } } : opts.era === 'auto' ? { mode: 'auto' } : { mode: 'legacy' };

const client = new Client(
    { name: 'strict-mcp-interop-ts', version: '0.1.0' },
    {
        // Form-mode elicitation must be declared, or a 2026-07-28 server refuses
        // the embedded request with -32021 (MissingRequiredClientCapability).
        capabilities: { elicitation: { form: {} } },
        versionNegotiation
    }
);

// MRTR: on a 2026-07-28 connection an `input_required` tools/call result is
// auto-fulfilled through this same handler, then the call is retried with
// inputResponses + the byte-exact requestState echo. On a 2025 connection
// this handler answers real server->client elicitation/create requests.
client.setRequestHandler('elicitation/create', async request => {
    elicitations.push(request.params);
    return { action: 'accept', content: opts.elicitContent };
});

const transport = opts.url
    ? new StreamableHTTPClientTransport(new URL(opts.url))
    : new StdioClientTransport({
          command: opts.command[0],
          args: opts.command.slice(1),
          // The SDK default passes only a few variables (HOME, PATH, ...); hand the
          // server the driver's whole environment so tests can set e.g. RUST_LOG.
          env: { ...process.env },
          stderr: 'inherit'
      });

async function step(name, fn) {
    const t0 = Date.now();
    try {
        const extra = await fn();
        emit({ step: name, ok: true, ms: Date.now() - t0, ...extra });
        return true;
    } catch (err) {
        failed = true;
        emit({ step: name, ok: false, ms: Date.now() - t0, error: errorJson(err) });
        return false;
    }
}

const reqOpts = { timeout: opts.timeout };
const connected = await step('connect', async () => {
    await client.connect(transport, reqOpts);
    return {
        sdk: SDK,
        transport: opts.url ? 'http' : 'stdio',
        era: client.getProtocolEra?.(),
        protocolVersion: client.getNegotiatedProtocolVersion?.(),
        serverInfo: client.getServerVersion?.() ?? null,
        capabilities: client.getServerCapabilities?.() ?? null
    };
});

if (connected) {
    for (const s of opts.steps) {
        if (s === 'discover') {
            await step('discover', async () => {
                if (client.getProtocolEra?.() !== 'modern') {
                    return { skipped: 'legacy era: server/discover is not a 2025 method' };
                }
                // Explicit server/discover on the live connection (connect()'s own
                // probe may have run on a sibling process for stdio).
                const result = await client.discover(reqOpts);
                return { result };
            });
        } else if (s === 'list') {
            await step('tools/list', async () => {
                const result = await client.listTools(undefined, { ...reqOpts, cacheMode: 'refresh' });
                return { tools: result.tools.map(t => t.name), result };
            });
        } else if (s === 'call') {
            await step('tools/call', async () => {
                const result = await client.callTool({ name: opts.tool, arguments: opts.args }, reqOpts);
                if (result.isError) throw new Error(`tool returned isError: ${JSON.stringify(result.content)}`);
                if (opts.expectText !== undefined && !texts(result).includes(opts.expectText)) {
                    throw new Error(`expected text ${JSON.stringify(opts.expectText)}, got ${JSON.stringify(texts(result))}`);
                }
                return { tool: opts.tool, result };
            });
        } else if (s === 'mrtr') {
            await step('mrtr', async () => {
                const before = elicitations.length;
                const result = await client.callTool({ name: opts.mrtrTool, arguments: opts.mrtrArgs }, reqOpts);
                const asked = elicitations.slice(before);
                if (result.isError) throw new Error(`tool returned isError: ${JSON.stringify(result.content)}`);
                if (asked.length === 0) throw new Error('server never asked for input (no elicitation round)');
                if (opts.mrtrExpectText !== undefined && !texts(result).includes(opts.mrtrExpectText)) {
                    throw new Error(
                        `expected text ${JSON.stringify(opts.mrtrExpectText)}, got ${JSON.stringify(texts(result))}`
                    );
                }
                return { tool: opts.mrtrTool, elicitations: asked, rounds: asked.length, result };
            });
        }
    }
}

try {
    await client.close();
} catch (err) {
    process.stderr.write(`ts_client: close failed: ${err?.message ?? err}\n`);
}
emit({ step: 'done', ok: !failed });
process.exit(failed ? 1 : 0);
