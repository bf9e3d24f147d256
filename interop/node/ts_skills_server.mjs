#!/usr/bin/env node
// A server built on the official TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0) that
// serves the Skills extension (SEP-2640) from an in-memory catalog, for the strict client's
// skills interop test (tests/skills_interop.rs). Over stdio (serveStdio) only.
//
//   node ts_skills_server.mjs
//
// Skills (one per skills/list page, so the client walks two pages):
//   skill://pdf-processing/SKILL.md   with references/FORMS.md
//   skill://code-review/SKILL.md
// The texts are fixed; the test asserts them byte for byte.
import { McpServer } from '@modelcontextprotocol/server';
import { SkillsExtension, memorySkillFiles } from '@modelcontextprotocol/server/ext/skills';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const SERVER_INFO = { name: 'strict-mcp-interop-ts-skills', version: '0.1.0' };

const FILES = {
    'pdf-processing/SKILL.md':
        '---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nFill forms as in references/FORMS.md.\n',
    'pdf-processing/references/FORMS.md': 'Fields are filled in document order.\n',
    'code-review/SKILL.md': '---\nname: code-review\ndescription: Review a change\n---\n\nRead the diff twice.\n'
};

const catalog = await SkillsExtension.load(memorySkillFiles(FILES), {
    pageSize: 1,
    strict: true
});

function buildServer() {
    const server = new McpServer(SERVER_INFO, { capabilities: { resources: {} } });
    catalog.attach(server);
    return server;
}

if (process.argv.length > 2) {
    process.stderr.write(`ts_skills_server: unknown argument ${process.argv[2]}\nusage: ts_skills_server.mjs\n`);
    process.exit(2);
}
serveStdio(buildServer, { onerror: err => process.stderr.write(`ts_skills_server: ${err?.message ?? err}\n`) });
