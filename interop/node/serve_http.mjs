// Streamable HTTP serving shared by the SDK-built test servers (ref_server.mjs, ts_server.mjs,
// ts_tasks_server.mjs): a minimal node:http <-> fetch adapter (@modelcontextprotocol/node has
// no 2.4.0 release) around an SDK `createMcpHandler` handler, on http://127.0.0.1:PORT/mcp only.
//
// - Any other path is 404 "not found"; a Host header that is not localhost is the SDK's own
//   refusal (hostHeaderValidationResponse).
// - The first stdout line is {"listening":"http://127.0.0.1:PORT/mcp"} (PORT 0: any port), one
//   machine-readable line so a harness can wait for readiness.
// - SIGTERM/SIGINT: the handler ends every listen stream with its closing result first; the
//   server then stops once those responses have been written (at most 1 s later it exits).
import http from 'node:http';
import { hostHeaderValidationResponse, localhostAllowedHostnames } from '@modelcontextprotocol/server';

async function toRequest(req, signal) {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
        if (Array.isArray(v)) v.forEach(x => headers.append(k, x));
        else if (v !== undefined) headers.set(k, v);
    }
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
    const hasBody = body && req.method !== 'GET' && req.method !== 'HEAD';
    return new Request(url, { method: req.method, headers, body: hasBody ? body : undefined, signal });
}

async function writeResponse(res, response) {
    const headers = {};
    response.headers.forEach((v, k) => {
        headers[k] = v;
    });
    res.writeHead(response.status, headers);
    if (!response.body) return res.end();
    const reader = response.body.getReader();
    res.on('close', () => reader.cancel().catch(() => {}));
    for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        res.write(value);
    }
    res.end();
}

/**
 * Serves `handler` (from createMcpHandler) on 127.0.0.1:`port` at /mcp.
 * `name` prefixes what goes to stderr. With `abortOnClose` a request is aborted when its client
 * goes away (how a listen stream ends); without it the request runs on.
 */
export function serveHttp({ name, port, handler, abortOnClose }) {
    const allowed = localhostAllowedHostnames();
    const srv = http.createServer(async (req, res) => {
        let signal;
        if (abortOnClose) {
            const abort = new AbortController();
            res.on('close', () => abort.abort());
            signal = abort.signal;
        }
        try {
            const request = await toRequest(req, signal);
            if (new URL(request.url).pathname !== '/mcp') {
                res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
                return;
            }
            const rejected = hostHeaderValidationResponse(request, allowed);
            await writeResponse(res, rejected ?? (await handler.fetch(request)));
        } catch (err) {
            process.stderr.write(`${name}: ${err?.stack ?? err}\n`);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        }
    });
    srv.listen(port, '127.0.0.1', () => {
        const addr = srv.address();
        process.stdout.write(JSON.stringify({ listening: `http://127.0.0.1:${addr.port}/mcp` }) + '\n');
    });
    const stop = () => {
        handler.close().finally(() => srv.close(() => process.exit(0)));
        setTimeout(() => process.exit(0), 1000).unref();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    return srv;
}
