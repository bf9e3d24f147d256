#!/usr/bin/env node
// A Tasks server (io.modelcontextprotocol/tasks, SEP-2663) built on the official TypeScript
// SDK v2 (@modelcontextprotocol/server 2.4.0), its shapes checked with the Tasks V2 schemas of
// @modelcontextprotocol/ext-tasks 0.2.2, for the strict client's interop test
// (tests/tasks_interop.rs). The SDK has no Tasks server of its own: the tools return
// CreateTaskResult themselves and tasks/get, tasks/update and tasks/cancel are registered as
// extension methods with ext-tasks' request schemas. Its HTTP entry checks the routing
// headers, Mcp-Name = params.taskId included.
//
//   node ts_tasks_server.mjs --http PORT   # http://127.0.0.1:PORT/mcp (0: any port)
//
// The first stdout line is {"listening":"http://127.0.0.1:PORT/mcp"}.
//
// Tools (a task only for a request that declares the extension; otherwise run in-line):
//   slow    {ms}  -> task "working", completed after ms with text "slept <ms>"
//   ask     {}    -> task "input_required" with inputRequests.confirm (form elicitation
//                    {ok: boolean}); after tasks/update: completed "confirmed: <ok>"
//   broken  {}    -> task failed with error {code: -32603, message: "broken on purpose"}
//   quick   {}    -> always a plain result "quick"
// Undeclared tasks/* requests get -32021; an unknown taskId gets -32602.
import { randomUUID } from 'node:crypto';
import {
    McpServer,
    ProtocolError,
    createMcpHandler
} from '@modelcontextprotocol/server';
import {
    CancelTaskRequestV2Schema,
    CreateTaskResultV2Schema,
    GetTaskRequestV2Schema,
    GetTaskResultV2Schema,
    InputResponsesV2Schema,
    TASKS_EXTENSION_ID_V2,
    UpdateTaskRequestV2Schema,
    hasTaskClientCapabilityV2
} from '@modelcontextprotocol/ext-tasks/core/v2';
import * as z from 'zod';
import { serveHttp } from './serve_http.mjs';

const SERVER_INFO = { name: 'strict-mcp-interop-ts-tasks', version: '0.1.0' };
const TTL_MS = 60000;
const POLL_MS = 50;
const MAX_TASKS = 100;
// The longest `slow` may sleep: a task the tests cancel sleeps 60 s, so that it is still
// working when the cancel comes however slow the machine (10 s was the old bound).
const MAX_SLOW_MS = 120000;

/** taskId -> {status, createdAt, lastUpdatedAt, result?, error?, inputRequests?, timer?} */
const tasks = new Map();

// The SDK lifts the per-request envelope (protocol version, client capabilities) out of
// `_meta` into `ctx.mcpReq.envelope`, keyed as on the wire.
const declared = ctx => hasTaskClientCapabilityV2({ _meta: ctx.mcpReq.envelope ?? {} });

const missingCapability = () =>
    new ProtocolError(-32021, 'Missing required client capability', {
        requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID_V2]: {} } }
    });

function touch(task, fields) {
    Object.assign(task, fields, { lastUpdatedAt: new Date().toISOString() });
}

function wire(taskId) {
    const t = tasks.get(taskId);
    const out = {
        taskId,
        status: t.status,
        createdAt: t.createdAt,
        lastUpdatedAt: t.lastUpdatedAt,
        ttlMs: TTL_MS,
        pollIntervalMs: POLL_MS
    };
    if (t.status === 'completed') out.result = t.result;
    if (t.status === 'failed') {
        out.error = t.error;
        out.statusMessage = t.error.message;
    }
    if (t.status === 'input_required') out.inputRequests = t.inputRequests;
    return out;
}

function create(start) {
    if (tasks.size >= MAX_TASKS) throw new ProtocolError(-32603, 'too many tasks');
    const taskId = randomUUID();
    const now = new Date().toISOString();
    const task = { status: 'working', createdAt: now, lastUpdatedAt: now };
    tasks.set(taskId, task);
    start(task);
    return CreateTaskResultV2Schema.parse({ resultType: 'task', ...wire(taskId) });
}

const text = t => ({ content: [{ type: 'text', text: t }] });

function known(taskId) {
    if (!tasks.has(taskId)) throw new ProtocolError(-32602, `Failed to retrieve task: Task not found`);
    return tasks.get(taskId);
}

function buildServer() {
    const server = new McpServer(SERVER_INFO, {
        capabilities: { tools: {}, extensions: { [TASKS_EXTENSION_ID_V2]: {} } }
    });

    server.registerTool(
        'slow',
        { description: 'Sleep ms, as a task when the request declares Tasks.', inputSchema: z.object({ ms: z.number().int().min(0).max(MAX_SLOW_MS) }) },
        async ({ ms }, ctx) => {
            if (!declared(ctx)) {
                await new Promise(r => setTimeout(r, ms));
                return text(`slept ${ms}`);
            }
            return create(task => {
                task.timer = setTimeout(() => {
                    if (task.status === 'working') touch(task, { status: 'completed', result: text(`slept ${ms}`) });
                }, ms);
            });
        }
    );

    server.registerTool(
        'ask',
        { description: 'A task that asks for confirmation.', inputSchema: z.object({}) },
        async (_args, ctx) => {
            if (!declared(ctx)) throw missingCapability();
            return create(task => {
                touch(task, {
                    status: 'input_required',
                    inputRequests: {
                        confirm: {
                            method: 'elicitation/create',
                            params: {
                                mode: 'form',
                                message: 'Go ahead?',
                                requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }
                            }
                        }
                    }
                });
            });
        }
    );

    server.registerTool(
        'broken',
        { description: 'A task that fails with a JSON-RPC error.', inputSchema: z.object({}) },
        async (_args, ctx) => {
            if (!declared(ctx)) throw missingCapability();
            return create(task => {
                touch(task, { status: 'failed', error: { code: -32603, message: 'broken on purpose' } });
            });
        }
    );

    server.registerTool('quick', { description: 'Never a task.', inputSchema: z.object({}) }, async () => text('quick'));

    server.server.setRequestHandler('tasks/get', { params: GetTaskRequestV2Schema.shape.params }, async ({ taskId }, ctx) => {
        if (!declared(ctx)) throw missingCapability();
        known(taskId);
        return GetTaskResultV2Schema.parse({ resultType: 'complete', ...wire(taskId) });
    });

    // The SDK lifts `inputResponses` out of every request's params (its MRTR retry keys)
    // into `ctx.mcpReq.inputResponses`: the params schema sees only `taskId`, and the answers
    // are checked with ext-tasks' schema here.
    const updateParams = UpdateTaskRequestV2Schema.shape.params.omit({ inputResponses: true });
    server.server.setRequestHandler('tasks/update', { params: updateParams }, async ({ taskId }, ctx) => {
        if (!declared(ctx)) throw missingCapability();
        const task = known(taskId);
        const parsed = InputResponsesV2Schema.safeParse(ctx.mcpReq.inputResponses ?? {});
        if (!parsed.success) throw new ProtocolError(-32602, `Invalid inputResponses: ${parsed.error.message}`);
        const inputResponses = parsed.data;
        const answer = inputResponses.confirm;
        if (task.status === 'input_required' && answer !== undefined) {
            const ok = answer.action === 'accept' && answer.content?.ok === true;
            touch(task, { status: 'working', inputRequests: undefined });
            setTimeout(() => {
                if (task.status === 'working') touch(task, { status: 'completed', result: text(`confirmed: ${ok}`) });
            }, POLL_MS);
        }
        return { resultType: 'complete' };
    });

    server.server.setRequestHandler('tasks/cancel', { params: CancelTaskRequestV2Schema.shape.params }, async ({ taskId }, ctx) => {
        if (!declared(ctx)) throw missingCapability();
        const task = known(taskId);
        if (task.status === 'working' || task.status === 'input_required') {
            clearTimeout(task.timer);
            touch(task, { status: 'cancelled', inputRequests: undefined });
        }
        return { resultType: 'complete' };
    });
    return server;
}

const argv = process.argv.slice(2);
if (argv.length !== 2 || argv[0] !== '--http') {
    process.stderr.write('usage: ts_tasks_server.mjs --http PORT\n');
    process.exit(2);
}
const handler = createMcpHandler(buildServer, {
    onerror: err => process.stderr.write(`ts_tasks_server: ${err?.message ?? err}\n`)
});
serveHttp({ name: 'ts_tasks_server', port: Number(argv[1]), handler, abortOnClose: true });
