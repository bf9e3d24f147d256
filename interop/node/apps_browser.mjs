#!/usr/bin/env node
// The real-browser test of the MCP Apps shell (driven by tests/apps_browser.rs).
//
// 1. Bundles apps/view.mjs (the test app, with the pinned @modelcontextprotocol/ext-apps 2.0.4
//    App) into one self-contained HTML file at --view-out, with --forbidden as the URL its CSP
//    probe fetches; bundles apps/host.mjs (the host page: pinned MCP client + AppBridge).
//    rolldown is the bundler already pinned in package-lock.json (vite's).
// 2. Serves the host page on 127.0.0.1 (an ephemeral port) and prints one JSON line
//    {"ready": true, "pageOrigin": "http://127.0.0.1:PORT"} so the caller can allow that origin
//    in CORS and start the MCP server with the view as its shell.
// 3. Reads one JSON line on stdin: {"server": URL, "tool": NAME, "args": {…}}; the host finds
//    the shell's URI on that tool's `_meta.ui.resourceUri` in tools/list. For another app
//    (without --view-out / --forbidden, e.g. the demo's): "wait": {"id", "text"} (the element
//    text that says it is done) and "read": [ids] (the elements whose text is reported).
// 4. Launches Debian's Chromium (--chromium, default /usr/bin/chromium) headless through
//    playwright-core 1.65.1 (which never downloads a browser), opens the host page, runs the
//    host, waits for the view's DOM, writes a screenshot to --screenshot, and prints one JSON
//    report line. Exit 0 when the report was produced (the caller asserts it), 1 otherwise.
//
// Nothing here dials a non-loopback address; --timeout (ms, default 60000) bounds the run.
import { createServer } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));

function usage(msg) {
    process.stderr.write(`apps_browser: ${msg}\n`);
    process.exit(2);
}

const opts = { chromium: '/usr/bin/chromium', timeout: 60000 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
    const next = () => (i + 1 < argv.length ? argv[++i] : usage(`${argv[i]} needs a value`));
    switch (argv[i]) {
        case '--forbidden': opts.forbidden = next(); break;
        case '--view-out': opts.viewOut = next(); break;
        case '--screenshot': opts.screenshot = next(); break;
        case '--chromium': opts.chromium = next(); break;
        case '--timeout': opts.timeout = Number(next()); break;
        default: usage(`unknown argument ${argv[i]}`);
    }
}
if (!opts.screenshot) usage('--screenshot is required');
if (!opts.viewOut !== !opts.forbidden) usage('--view-out and --forbidden go together');
if (opts.forbidden && !/^http:\/\/127\.0\.0\.\d+:\d+\/?/.test(opts.forbidden)) usage('--forbidden must be a loopback http URL');

let browser;
const deadline = setTimeout(async () => {
    process.stdout.write(JSON.stringify({ error: `timed out after ${opts.timeout} ms` }) + '\n');
    try { await browser?.close(); } catch {}
    process.exit(1);
}, opts.timeout);

function emit(obj) {
    process.stdout.write(JSON.stringify(obj) + '\n');
}

async function bundle(entry) {
    const b = await rolldown({ input: join(here, 'apps', entry), platform: 'browser', logLevel: 'silent' });
    const { output } = await b.generate({ format: 'iife' });
    await b.close();
    // Inlined in <script>: a literal "</script" would end the element early.
    return output[0].code.replace(/<\/script/gi, '<\\/script');
}

const escapeAttr = s => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

const [viewJs, hostJs] = await Promise.all([opts.viewOut ? bundle('view.mjs') : null, bundle('host.mjs')]);
if (opts.viewOut) writeFileSync(
    opts.viewOut,
    '<!doctype html><html><head><meta charset="utf-8"><title>strict-mcp test app</title>' +
        '<style>body{font:16px system-ui,sans-serif;margin:12px}#result{font-size:20px;color:#063}</style>' +
        `</head><body data-forbidden="${escapeAttr(opts.forbidden)}"><h1>Tool result</h1>` +
        '<pre id="result"></pre><pre id="view"></pre><p id="probe"></p><p id="violation"></p>' +
        `<script>${viewJs}</script></body></html>`
);
const page = '<!doctype html><html><head><meta charset="utf-8"><title>strict-mcp test host</title><link rel="icon" href="data:,"></head>' +
    `<body><h1>strict-mcp test host</h1><script>${hostJs}</script></body></html>`;

const http = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        res.end(page);
    } else {
        res.writeHead(404).end();
    }
});
await new Promise(r => http.listen(0, '127.0.0.1', r));
const pageOrigin = `http://127.0.0.1:${http.address().port}`;
emit({ ready: true, pageOrigin });

const lines = createInterface({ input: process.stdin });
const cfg = JSON.parse(await new Promise(r => lines.once('line', r)));
lines.close();

const report = { pageOrigin, console: [], pageErrors: [] };
try {
    browser = await chromium.launch({
        executablePath: opts.chromium,
        headless: true,
        args: [
            '--no-sandbox',
            '--no-first-run',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-gpu',
            '--disable-sync'
        ]
    });
    report.browserVersion = browser.version();
    const tab = await browser.newPage({ viewport: { width: 720, height: 420 } });
    tab.on('console', m => report.console.push(`${m.type()}: ${m.text()}`.slice(0, 500)));
    tab.on('pageerror', e => report.pageErrors.push(String(e.message).slice(0, 500)));
    await tab.goto(`${pageOrigin}/`);
    report.host = await tab.evaluate(c => window.runHost(c), cfg);
    const frame = await (await tab.$('#app')).contentFrame();
    const waitOpts = { timeout: Math.max(1000, opts.timeout - 5000) };
    if (cfg.wait) {
        // Another app (the demo's): wait until element `id` shows `text`.
        await frame.waitForFunction(w => document.getElementById(w.id)?.textContent === w.text, cfg.wait, waitOpts);
    } else {
        await frame.waitForFunction(
            () => document.getElementById('result')?.dataset.done && document.getElementById('probe')?.dataset.done,
            null,
            waitOpts
        );
    }
    report.view = await frame.evaluate(
        ids => {
            const out = { origin: String(window.origin) };
            for (const id of ids) out[id] = document.getElementById(id)?.textContent ?? null;
            return out;
        },
        cfg.read ?? ['result', 'view', 'probe', 'violation']
    );
    await tab.screenshot({ path: opts.screenshot });
    report.screenshot = opts.screenshot;
} catch (e) {
    report.error = String(e?.stack ?? e).slice(0, 2000);
}
try { await browser?.close(); } catch {}
http.close();
clearTimeout(deadline);
emit(report);
process.exit(report.error ? 1 : 0);
