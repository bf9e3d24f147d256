#!/usr/bin/env node
// Interop client driver: the official TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0) with its own OAuth provider
// (ClientCredentialsProvider: the client_credentials grant, client_secret_basic)
// against a protected MCP server. The SDK does the whole authorization itself:
// the 401 challenge, Protected Resource Metadata, authorization server metadata
// (issuer checked against ISSUER), the token request with `resource`.
//
// Usage: node ts_oauth_client.mjs URL CLIENT_ID CLIENT_SECRET ISSUER TOOL
//
// Output: one JSON line on stdout, {"ok":true,"result":<tools/call result>} or
// {"ok":false,"error":"..."}. Exit 0 on success, 1 on failure, 2 on usage errors.
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, clientId, clientSecret, issuer, tool] = process.argv.slice(2);
if (!url || !clientId || !clientSecret || !issuer || !tool) {
    process.stderr.write('usage: ts_oauth_client.mjs URL CLIENT_ID CLIENT_SECRET ISSUER TOOL\n');
    process.exit(2);
}

const provider = new ClientCredentialsProvider({ clientId, clientSecret, expectedIssuer: issuer });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
const client = new Client(
    { name: 'strict-mcp-interop-ts-oauth', version: '0.1.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } }
);
const options = { timeout: 15000 };
try {
    await client.connect(transport, options);
    const result = await client.callTool({ name: tool, arguments: {} }, options);
    process.stdout.write(JSON.stringify({ ok: true, result }) + '\n');
    await client.close();
    process.exit(0);
} catch (err) {
    process.stdout.write(JSON.stringify({ ok: false, error: String(err?.stack ?? err) }) + '\n');
    process.exit(1);
}
