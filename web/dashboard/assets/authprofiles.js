// Auth profiles: the logins owned by this API key (name, origins, version,
// last login, last failure) and "Test login now", which runs the recipe on a
// worker (POST /v1/auth-profiles/:id/test) and shows its action log as the
// API gives it: secrets are masked (••••) by the server, never sent here.
import { api } from './api.js';
import { h, fill, badge, time, errorBox } from './ui.js';

/** actionLog draws a login's (or a journey's) step log: index, step, target, outcome, time. */
export function actionLog(entries, attrs) {
  return h('table', { class: 'responsive step-log', ...attrs },
    h('thead', {}, h('tr', {}, ['#', 'Step', 'Target', 'Outcome', 'ms'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, (entries || []).map((e) => h('tr', { 'data-ok': e.ok ? 'true' : 'false', 'data-index': e.index },
      h('td', { 'data-label': '#' }, String(e.index)),
      h('td', { 'data-label': 'Step', class: 'mono' }, e.type),
      h('td', { 'data-label': 'Target', class: 'mono wrap' }, e.target || ''),
      h('td', { 'data-label': 'Outcome', class: 'wrap' }, e.ok ? badge('succeeded', 'ok') : badge('failed', 'failed'),
        e.error ? [' ', e.error] : null, e.excerpt ? [' ', h('code', { class: 'excerpt' }, e.excerpt)] : null),
      h('td', { 'data-label': 'ms' }, String(e.ms ?? ''))))));
}

/** authProfilesView lists the key's auth profiles with a test button each. */
export async function authProfilesView(ctx) {
  const msg = h('div');
  const body = h('tbody', { id: 'profile-rows' });
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Auth profiles')),
    h('p', { class: 'muted' }, 'Logins that batches and suite targets use with ', h('code', {}, '"auth_profile": "name"'),
      '. Secrets are write-only: the API never returns them.'),
    msg,
    h('div', { class: 'table-wrap' }, h('table', { class: 'responsive', id: 'profile-table' },
      h('thead', {}, h('tr', {}, ['Name', 'Origins', 'Version', 'Last login', 'Last failure', ''].map((c) => h('th', { scope: 'col' }, c)))),
      body)));
  let data;
  try {
    data = await api('GET', '/v1/auth-profiles', undefined, { signal: ctx.signal });
  } catch (err) {
    fill(msg, errorBox(err, 'Could not load auth profiles'));
    return;
  }
  const list = data.auth_profiles || [];
  if (!list.length) {
    fill(body, h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No auth profiles yet: create one with POST /v1/auth-profiles.')));
    return;
  }
  for (const p of list) {
    const out = h('tr', { class: 'test-row', hidden: true }, h('td', { colspan: 6 }));
    const btn = h('button', {
      type: 'button', class: 'btn btn-small test-login', disabled: !p.login_url,
      title: p.login_url ? null : 'An uploaded storage state has no recipe to run',
      onclick: async () => {
        btn.disabled = true;
        out.hidden = false;
        fill(out.firstChild, h('p', { class: 'muted', role: 'status' }, 'Logging in…'));
        try {
          const r = await api('POST', `/v1/auth-profiles/${encodeURIComponent(p.id)}/test`);
          fill(out.firstChild, h('div', { class: 'stack test-result', 'data-ok': r.ok ? 'true' : 'false' },
            h('p', { role: 'status' }, r.ok ? badge('succeeded', `logged in: version ${r.version}`) : badge('failed', 'login failed'),
              r.error ? [' ', r.error] : null),
            actionLog(r.log, { 'data-testid': 'test-log' })));
        } catch (err) {
          fill(out.firstChild, errorBox(err, 'Test login failed'));
        }
        btn.disabled = false;
      },
    }, 'Test login now');
    body.append(h('tr', { 'data-profile': p.id },
      h('td', { 'data-label': 'Name' }, h('strong', {}, p.name)),
      h('td', { 'data-label': 'Origins', class: 'wrap' }, (p.origins || []).join(', ')),
      h('td', { 'data-label': 'Version' }, String(p.version)),
      h('td', { 'data-label': 'Last login' }, time(p.last_login_at)),
      h('td', { 'data-label': 'Last failure', class: 'wrap' }, p.last_failure
        ? [time(p.last_failure_at), h('div', { class: 'small' }, p.last_failure)] : h('span', { class: 'muted' }, '—')),
      h('td', {}, btn)), out);
  }
}
