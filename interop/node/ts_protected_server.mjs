#!/usr/bin/env node
// Interop server driver: a protected MCP server built from the TypeScript SDK v2's own auth
// support (@modelcontextprotocol/server 2.4.0): `requireBearerAuth` (401/403 with
// `WWW-Authenticate: Bearer … resource_metadata=…`, audience checked against this resource)
// and `buildOAuthProtectedResourceMetadata` (RFC 9728, served at
// /.well-known/oauth-protected-resource/mcp). Tokens are JWTs verified with `jose` against the
// authorization server's JWKS (its `jwks_uri`), issuer and expiry checked.
//
// Usage: node ts_protected_server.mjs ISSUER
// Listens on 127.0.0.1 (a free port) and prints one line {"listening":"http://127.0.0.1:PORT/mcp"}.
// Tool: whoami {} -> text "<client_id> <scopes>" of the verified token.
import http from 'node:http';
import {
    McpServer,
    buildOAuthProtectedResourceMetadata,
    createMcpHandler,
    getOAuthProtectedResourceMetadataUrl,
    requireBearerAuth
} from '@modelcontextprotocol/server';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const issuer = process.argv[2];
if (!issuer) {
    process.stderr.write('usage: ts_protected_server.mjs ISSUER\n');
    process.exit(2);
}
const oauthMetadata = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
const jwks = createRemoteJWKSet(new URL(oauthMetadata.jwks_uri));

function buildServer() {
    const server = new McpServer({ name: 'strict-mcp-interop-ts-protected', version: '0.1.0' });
    // The handler's last argument is the request context (the only one without an input schema).
    server.registerTool('whoami', { description: 'The verified token\'s client and scopes.' }, async (...args) => {
        const auth = args[args.length - 1]?.http?.authInfo;
        return { content: [{ type: 'text', text: `${auth?.clientId ?? 'anonymous'} ${(auth?.scopes ?? []).join(' ')}` }] };
    });
    return server;
}

const srv = http.createServer();
srv.listen(0, '127.0.0.1', () => {
    const port = srv.address().port;
    const resource = new URL(`http://127.0.0.1:${port}/mcp`);
    const metadataUrl = getOAuthProtectedResourceMetadataUrl(resource);
    const metadata = buildOAuthProtectedResourceMetadata({
        oauthMetadata,
        resourceServerUrl: resource,
        scopesSupported: ['mcp:use'],
        dangerouslyAllowInsecureIssuerUrl: true
    });
    const verifier = {
        async verifyAccessToken(token) {
            const { payload } = await jwtVerify(token, jwks, { issuer, audience: resource.href });
            return {
                token,
                clientId: String(payload.client_id ?? payload.sub),
                scopes: String(payload.scope ?? '').split(' ').filter(Boolean),
                expiresAt: payload.exp,
                resource: new URL(String(payload.aud))
            };
        }
    };
    const gate = requireBearerAuth({
        verifier,
        requiredScopes: ['mcp:use'],
        resourceMetadataUrl: metadataUrl,
        expectedResource: resource
    });
    const handler = createMcpHandler(buildServer, {
        onerror: err => process.stderr.write(`ts_protected_server: ${err?.message ?? err}\n`)
    });
    srv.on('request', async (req, res) => {
        try {
            const chunks = [];
            for await (const c of req) chunks.push(c);
            const headers = new Headers();
            for (const [k, v] of Object.entries(req.headers)) {
                if (Array.isArray(v)) v.forEach(x => headers.append(k, x));
                else if (v !== undefined) headers.set(k, v);
            }
            const url = new URL(req.url ?? '/', resource.origin);
            if (req.method === 'GET' && url.pathname === new URL(metadataUrl).pathname) {
                res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(metadata));
                return;
            }
            if (url.pathname !== '/mcp') {
                res.writeHead(404).end();
                return;
            }
            const body = chunks.length && req.method !== 'GET' ? Buffer.concat(chunks) : undefined;
            const request = new Request(url, { method: req.method, headers, body });
            const auth = await gate(request);
            const response = auth instanceof Response ? auth : await handler.fetch(request, { authInfo: auth });
            const out = {};
            response.headers.forEach((v, k) => {
                out[k] = v;
            });
            res.writeHead(response.status, out);
            res.end(Buffer.from(await response.arrayBuffer()));
        } catch (err) {
            process.stderr.write(`ts_protected_server: ${err?.stack ?? err}\n`);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        }
    });
    process.stdout.write(JSON.stringify({ listening: resource.href }) + '\n');
});
process.on('SIGTERM', () => process.exit(0));
