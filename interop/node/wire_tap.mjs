#!/usr/bin/env node
// Wire tap: records exactly what an MCP client and server exchange.
//
//   node wire_tap.mjs stdio --log FILE -- COMMAND [ARGS...]
//       Use as the client's server command (the `--` may be omitted). Spawns COMMAND, passes stdin/stdout
//       through unchanged and appends every line to FILE as
//         [stdio pid=N] C->S {json}
//         [stdio pid=N] S->C {json}
//       (pid distinguishes e.g. the TS SDK's disposable probe sibling process).
//
//   node wire_tap.mjs http --listen PORT --target http://127.0.0.1:P/mcp --log FILE
//       Reverse proxy on 127.0.0.1:PORT forwarding to a loopback target. Appends
//       each exchange (request line, headers, body; status, headers, body) to FILE.
//       Prints {"listening": URL} on stdout once ready.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import readline from 'node:readline';

function usage(msg) {
    process.stderr.write(`wire_tap: ${msg}\n`);
    process.exit(2);
}

const [mode, ...rest] = process.argv.slice(2);
let log;
let listen;
let target;
let command;
for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--') {
        command = rest.slice(i + 1);
        break;
    } else if (a === '--log') log = rest[++i];
    else if (a === '--listen') listen = Number(rest[++i]);
    else if (a === '--target') target = rest[++i];
    else if (!a.startsWith('-')) {
        // Some launchers (e.g. the Inspector CLI) drop a literal `--`: the
        // first positional argument starts the command.
        command = rest.slice(i);
        break;
    } else usage(`unknown argument ${a}`);
}
if (!log) usage('--log FILE is required');
const append = text => fs.appendFileSync(log, text);

if (mode === 'stdio') {
    if (!command?.length) usage('stdio mode needs -- COMMAND [ARGS...]');
    const child = spawn(command[0], command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
    const tag = `[stdio pid=${child.pid}]`;
    append(`${tag} spawned ${JSON.stringify(command)}\n`);
    readline.createInterface({ input: process.stdin }).on('line', line => {
        append(`${tag} C->S ${line}\n`);
        child.stdin.write(line + '\n');
    }).on('close', () => {
        append(`${tag} C->S <stdin closed>\n`);
        child.stdin.end();
    });
    readline.createInterface({ input: child.stdout }).on('line', line => {
        append(`${tag} S->C ${line}\n`);
        process.stdout.write(line + '\n');
    });
    child.on('exit', (code, signal) => {
        append(`${tag} exit code=${code} signal=${signal}\n`);
        process.exit(code ?? 1);
    });
    for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => child.kill(sig));
} else if (mode === 'http') {
    if (!listen && listen !== 0) usage('http mode needs --listen PORT');
    if (!target) usage('http mode needs --target URL');
    const t = new URL(target);
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(t.hostname)) usage('target must be a loopback address');
    let n = 0;
    const server = http.createServer((req, res) => {
        const id = ++n;
        const reqChunks = [];
        req.on('data', c => reqChunks.push(c));
        req.on('end', () => {
            const body = Buffer.concat(reqChunks);
            let text = `=== #${id} request\n${req.method} ${req.url} HTTP/${req.httpVersion}\n`;
            for (let i = 0; i < req.rawHeaders.length; i += 2) text += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\n`;
            text += `\n${body.toString('utf8')}\n`;
            append(text);
            const headers = { ...req.headers, host: t.host };
            const up = http.request(
                { host: t.hostname.replace(/^\[|\]$/g, ''), port: t.port, method: req.method, path: req.url, headers },
                upRes => {
                    res.writeHead(upRes.statusCode ?? 502, upRes.rawHeaders);
                    // Headers are logged at once: a streamed (SSE) response such as
                    // subscriptions/listen may stay open until the client aborts it.
                    let head = `=== #${id} response\nHTTP/${upRes.httpVersion} ${upRes.statusCode} ${upRes.statusMessage}\n`;
                    for (let i = 0; i < upRes.rawHeaders.length; i += 2) {
                        head += `${upRes.rawHeaders[i]}: ${upRes.rawHeaders[i + 1]}\n`;
                    }
                    append(head);
                    const resChunks = [];
                    let logged = false;
                    const logBody = how => {
                        if (logged) return;
                        logged = true;
                        const tag = how === 'complete' ? '' : ` (${how})`;
                        append(`--- #${id} response body${tag}\n${Buffer.concat(resChunks).toString('utf8')}\n`);
                    };
                    upRes.on('data', c => {
                        resChunks.push(c);
                        res.write(c);
                    });
                    upRes.on('end', () => {
                        res.end();
                        logBody('complete');
                    });
                    res.on('close', () => {
                        if (!upRes.complete) {
                            upRes.destroy();
                            logBody('client closed the stream before it ended');
                        }
                    });
                }
            );
            up.on('error', err => {
                append(`=== #${id} upstream error ${err.message}\n`);
                if (!res.headersSent) res.writeHead(502);
                res.end();
            });
            up.end(body);
        });
    });
    server.listen(listen, '127.0.0.1', () => {
        process.stdout.write(JSON.stringify({ listening: `http://127.0.0.1:${server.address().port}${t.pathname}` }) + '\n');
    });
    for (const sig of ['SIGTERM', 'SIGINT']) {
        process.on(sig, () => {
            server.close(() => process.exit(0));
            server.closeAllConnections();
            setTimeout(() => process.exit(0), 1000).unref();
        });
    }
} else {
    usage('mode must be stdio or http');
}
