// The test app (the "view") rendered inside the host's sandboxed iframe: the pinned
// @modelcontextprotocol/ext-apps 2.0.4 App, bundled into the shell HTML by apps_browser.mjs.
//
// It shows the text of the tool result the host passes in (#result) and the view the server
// selected with its data (#view), and probes the CSP: a
// fetch to the URL in <body data-forbidden> must be blocked (#probe), with the violation the
// browser reports (#violation).
import { App } from '@modelcontextprotocol/ext-apps';

const result = document.getElementById('result');
const probe = document.getElementById('probe');
const violation = document.getElementById('violation');
const view = document.getElementById('view');

document.addEventListener('securitypolicyviolation', e => {
    violation.textContent = `${e.effectiveDirective} ${e.blockedURI}`;
});

const app = new App({ name: 'strict-mcp-browser-view', version: '0.1.0' });
app.ontoolresult = r => {
    const texts = (r.content ?? []).filter(b => b.type === 'text').map(b => b.text);
    result.textContent = texts.join('\n');
    // The view the server selected for this result, with its data (strict-mcp's result _meta).
    const selected = r._meta?.['strict-mcp/view'];
    if (selected) view.textContent = `${selected.view}: ${JSON.stringify(selected.data)}`;
    result.dataset.done = '1';
};

async function probeForbidden() {
    const url = document.body.dataset.forbidden;
    if (!url) {
        probe.textContent = 'no probe';
    } else {
        try {
            await fetch(url, { cache: 'no-store' });
            probe.textContent = 'fetch allowed';
        } catch (e) {
            probe.textContent = `fetch blocked: ${e.name}`;
        }
    }
    probe.dataset.done = '1';
}

app.connect().then(probeForbidden, e => {
    result.textContent = `connect failed: ${e.message}`;
    result.dataset.done = '1';
});
