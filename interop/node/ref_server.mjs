#!/usr/bin/env node
// Reference MCP server built on the official TypeScript SDK v2
// (@modelcontextprotocol/server 2.4.0). It exists only to prove that the
// interop client drivers work; the strict-mcp Rust server is the real target.
//
//   node ref_server.mjs               # stdio (serveStdio: 2026-07-28 + 2025 eras)
//   node ref_server.mjs --http PORT   # Streamable HTTP on http://127.0.0.1:PORT/mcp
//   node ref_server.mjs --http PORT --sse   # same, every response as an SSE stream
//
// Tools:
//   echo          {text: string}  -> text content "<text>"
//   region_echo   {region: string (x-mcp-header "Region"), text: string}
//                                 -> text content "<region>: <text>"
//   confirm_echo  {text: string}  -> first answers input_required with an
//                                    elicitation {confirm: boolean}; on the retry
//                                    answers "confirmed: <text>" (or "declined").
import {
    McpServer,
    acceptedContent,
    createMcpHandler,
    inputRequired,
    inputResponse
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';
import { serveHttp } from './serve_http.mjs';

const SERVER_INFO = { name: 'strict-mcp-interop-ref', version: '0.1.0' };
// Fixed, recognisable request state so transcripts show the byte-exact echo.
// (A real server must integrity-protect requestState; this is a test fixture.)
const CONFIRM_STATE = 'confirm_echo/round-1';

function buildServer() {
    const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} } });

    server.registerTool(
        'echo',
        {
            description: 'Echo the given text back.',
            inputSchema: z.object({ text: z.string() })
        },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
    );

    // SEP-2243: `x-mcp-header` makes 2026-07-28 HTTP clients mirror the
    // argument into an `Mcp-Param-Region` request header.
    server.registerTool(
        'region_echo',
        {
            description: 'Echo text prefixed by region; region is mirrored into the Mcp-Param-Region header.',
            inputSchema: z.object({
                region: z.string().meta({ 'x-mcp-header': 'Region' }),
                text: z.string()
            })
        },
        async ({ region, text }) => ({ content: [{ type: 'text', text: `${region}: ${text}` }] })
    );

    const confirmSchema = z.object({ confirm: z.boolean() });
    server.registerTool(
        'confirm_echo',
        {
            description: 'Ask the user (via elicitation / MRTR) to confirm, then echo the text.',
            inputSchema: z.object({ text: z.string() })
        },
        async ({ text }, ctx) => {
            const state = ctx.mcpReq.requestState?.();
            const view = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
            if (view.kind === 'missing') {
                return inputRequired({
                    inputRequests: {
                        confirm: inputRequired.elicit({
                            message: `Echo "${text}"?`,
                            requestedSchema: confirmSchema
                        })
                    },
                    requestState: CONFIRM_STATE
                });
            }
            const accepted = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmSchema);
            const stateNote = state === CONFIRM_STATE ? '' : ` (unexpected requestState ${JSON.stringify(state)})`;
            if (accepted?.confirm === true) {
                return { content: [{ type: 'text', text: `confirmed: ${text}${stateNote}` }] };
            }
            return { content: [{ type: 'text', text: `declined${stateNote}` }] };
        }
    );
    return server;
}

function parseArgs(argv) {
    const out = { http: undefined, sse: false };
    for (let i = 0; i < argv.length; i++) {
        if (argv[i] === '--http') out.http = Number(argv[++i]);
        else if (argv[i] === '--sse') out.sse = true;
        else if (argv[i] === '--help') {
            process.stderr.write('usage: ref_server.mjs [--http PORT [--sse]]\n');
            process.exit(0);
        } else {
            process.stderr.write(`ref_server: unknown argument ${argv[i]}\n`);
            process.exit(2);
        }
    }
    return out;
}

function serve(port, sse) {
    const handler = createMcpHandler(buildServer, {
        responseMode: sse ? 'sse' : 'auto',
        onerror: err => process.stderr.write(`ref_server: ${err?.message ?? err}\n`)
    });
    serveHttp({ name: 'ref_server', port, handler, abortOnClose: false });
}

const args = parseArgs(process.argv.slice(2));
if (args.http !== undefined) serve(args.http, args.sse);
else serveStdio(buildServer, { onerror: err => process.stderr.write(`ref_server: ${err?.message ?? err}\n`) });
