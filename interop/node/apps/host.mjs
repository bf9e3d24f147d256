// The test host page's script: an MCP client (pinned to 2026-07-28) that reads the Apps shell
// through the server under test across origins (CORS), renders it in a sandboxed iframe with
// the CSP the shell declares, and passes a tool result in through the pinned
// @modelcontextprotocol/ext-apps 2.0.4 AppBridge. Bundled into the page by apps_browser.mjs.
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const UI = 'io.modelcontextprotocol/ui';
const MIME = 'text/html;profile=mcp-app';

/** The iframe CSP from the shell's declared `_meta.ui.csp` (the ext-apps host rules):
 *  nothing external unless declared; inline script and style for the inlined bundle. */
export function buildCsp(csp) {
    const list = (k, none) => {
        const v = csp?.[k] ?? [];
        return v.length ? v.join(' ') : none;
    };
    const resources = (csp?.resourceDomains ?? []).join(' ');
    const withRes = base => (resources ? `${base} ${resources}` : base);
    return [
        "default-src 'none'",
        withRes("script-src 'self' 'unsafe-inline'"),
        withRes("style-src 'self' 'unsafe-inline'"),
        withRes("img-src 'self' data:"),
        withRes("font-src 'self'"),
        withRes("media-src 'self' data:"),
        `connect-src ${list('connectDomains', "'none'")}`,
        `frame-src ${list('frameDomains', "'none'")}`,
        `base-uri ${list('baseUriDomains', "'self'")}`,
        "object-src 'none'",
        "form-action 'none'"
    ].join('; ');
}

function injectCsp(html, policy) {
    const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replace(/"/g, '&quot;')}">`;
    const at = html.search(/<head[^>]*>/i);
    if (at < 0) return meta + html;
    const end = html.indexOf('>', at) + 1;
    return html.slice(0, end) + meta + html.slice(end);
}

window.runHost = async cfg => {
    const report = { pageOrigin: window.location.origin };
    const client = new Client(
        { name: 'strict-mcp-browser-host', version: '0.1.0' },
        {
            capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } },
            versionNegotiation: { mode: { pin: '2026-07-28' } }
        }
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(cfg.server)));
    report.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? null;
    // The shell's URI, as a host finds it: on the tool the call goes through
    // (compact `call_tool`'s `_meta.ui.resourceUri`).
    const { tools } = await client.listTools();
    const tool = tools.find(t => t.name === cfg.tool);
    report.toolUi = tool?._meta?.ui ?? null;
    const uri = report.toolUi?.resourceUri;
    if (!uri) throw new Error(`tool ${cfg.tool} names no _meta.ui.resourceUri`);
    const read = await client.readResource({ uri });
    const contents = read.contents[0];
    report.mimeType = contents.mimeType ?? null;
    report.declaredCsp = contents._meta?.ui?.csp ?? null;
    report.appliedCsp = buildCsp(report.declaredCsp);

    const iframe = document.createElement('iframe');
    iframe.setAttribute('sandbox', 'allow-scripts');
    iframe.id = 'app';
    iframe.style.cssText = 'width: 640px; height: 240px; border: 1px solid #888';
    iframe.srcdoc = injectCsp(contents.text, report.appliedCsp);
    const bridge = new AppBridge(client, { name: 'strict-mcp-browser-host', version: '0.1.0' }, { serverTools: {} });
    const initialized = new Promise(resolve => {
        bridge.oninitialized = resolve;
    });
    document.body.append(iframe);
    await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
    await initialized;
    report.appInitialized = true;

    const result = await client.callTool({ name: cfg.tool, arguments: cfg.args });
    report.toolResult = result;
    await bridge.sendToolInput({ arguments: cfg.args });
    await bridge.sendToolResult(result);
    report.sandbox = iframe.getAttribute('sandbox');
    return report;
};
