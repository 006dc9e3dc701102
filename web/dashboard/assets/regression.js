// Visual regression: suites (last run, schedule), a suite's run history, and a
// run's comparisons with baseline / current / diff, an overlay slider and the
// approve buttons. Every view shows the API's own error when a call fails
// (for example a 404 from a server without the regression API).
import { api, artifactURL } from './api.js';
import { h, fill, badge, time, errorBox, shortID, previewImage } from './ui.js';
import { volatilitySection } from './volatility.js';

export function unavailable(err, what) {
  const box = errorBox(err, what);
  if (err.status === 404 && err.code === 'not_found') {
    box.append(h('p', { class: 'small' }, 'If this names an endpoint, this server has no visual-regression API.'));
  }
  return box;
}

function schedule(s) {
  if (!s.schedule || !s.schedule.cron) return h('span', { class: 'muted' }, 'manual only');
  return h('span', { class: 'mono' }, s.schedule.cron, s.schedule.timezone ? ` (${s.schedule.timezone})` : '');
}

export function runCounts(c) {
  if (!c) return '';
  return ['passed', 'failed', 'new', 'missing', 'error', 'pending']
    .filter((k) => c[k]).map((k) => `${c[k]} ${k}`).join(' · ') || `${c.total || 0} comparisons`;
}

export async function suitesView(ctx) {
  ctx.main.append(h('div', { class: 'page-head' }, h('h1', {}, 'Visual regression')));
  let data;
  try {
    data = await api('GET', '/v1/suites', undefined, { signal: ctx.signal });
  } catch (err) {
    ctx.main.append(unavailable(err, 'Could not load suites'));
    return;
  }
  const suites = data.suites || [];
  if (!suites.length) {
    ctx.main.append(h('div', { class: 'panel empty stack' }, h('h2', {}, 'No suites yet'),
      h('p', {}, 'A suite is a list of pages captured on a schedule and compared with approved baselines. Create one with the API:'),
      h('pre', {}, `curl -s -X POST ${location.origin}/v1/suites -H 'Content-Type: application/json' \\\n  -d '{"name": "home", "targets": [{"url": "https://example.com/", "name": "home"}], "schedule": {"cron": "0 * * * *"}}'`)));
    return;
  }
  ctx.main.append(h('div', { class: 'table-wrap' }, h('table', { class: 'responsive', id: 'suite-table' },
    h('thead', {}, h('tr', {}, ['Suite', 'Targets', 'Schedule', 'Last run', ''].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, suites.map((s) => h('tr', { 'data-suite': s.id },
      h('td', { 'data-label': 'Suite' }, h('a', { href: `#/suites/${s.id}` }, s.name),
        s.enabled === false ? h('span', { class: 'small muted' }, ' (disabled)') : null),
      h('td', { 'data-label': 'Targets' }, String((s.targets || []).length)),
      h('td', { 'data-label': 'Schedule' }, schedule(s)),
      h('td', { 'data-label': 'Last run' }, s.last_run
        ? h('span', { class: 'row' }, h('a', { href: `#/runs/${s.last_run.id}` }, badge(s.last_run.status)), time(s.last_run.created_at))
        : h('span', { class: 'muted' }, 'never')),
      h('td', {}, runButton(s.id))))))));
}

function runButton(suiteID) {
  const out = h('span');
  const btn = h('button', {
    type: 'button', class: 'btn btn-small', onclick: async () => {
      btn.disabled = true;
      try {
        const run = await api('POST', `/v1/suites/${encodeURIComponent(suiteID)}/runs`);
        location.hash = `#/runs/${run.id}`;
      } catch (err) {
        fill(out, btn, errorBox(err, 'Run failed to start'));
        btn.disabled = false;
      }
    },
  }, 'Run now');
  out.append(btn);
  return out;
}

export async function suiteView(ctx) {
  const [id] = ctx.params;
  let s;
  try {
    s = await api('GET', `/v1/suites/${encodeURIComponent(id)}`, undefined, { signal: ctx.signal });
  } catch (err) {
    ctx.main.append(unavailable(err, 'Could not load the suite'));
    return;
  }
  const history = h('tbody', { id: 'run-rows' });
  const more = h('div', { class: 'row' });
  ctx.main.append(
    h('div', { class: 'page-head' },
      h('div', { class: 'crumbs' }, h('a', { href: '#/suites' }, 'Visual regression'), ' / ', s.name),
      h('div', { class: 'spread' }, h('h1', {}, s.name), runButton(s.id))),
    h('section', { class: 'panel' }, h('dl', { class: 'meta' },
      h('dt', {}, 'Schedule'), h('dd', {}, schedule(s)),
      h('dt', {}, 'Enabled'), h('dd', {}, s.enabled === false ? 'no' : 'yes'),
      h('dt', {}, 'Threshold'), h('dd', {}, `${s.threshold ?? 0} of pixels (pixel threshold ${s.pixel_threshold ?? '—'})`),
      h('dt', {}, 'Targets'), h('dd', {}, h('ul', {}, (s.targets || []).map((t) => h('li', { class: 'wrap' },
        h('strong', {}, t.name || ''), ' ', t.url)))))),
    baselinesSection(s.id, ctx),
    flakinessSection(s.id, ctx),
    volatilitySection(s, ctx),
    h('h2', { style: 'margin:20px 0 10px' }, 'Runs'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'responsive' },
      h('thead', {}, h('tr', {}, ['Run', 'Status', 'Trigger', 'Comparisons', 'Created', 'Finished'].map((c) => h('th', { scope: 'col' }, c)))),
      history)),
    more);
  const load = async (cursor) => {
    const q = new URLSearchParams({ limit: '25' });
    if (cursor) q.set('cursor', cursor);
    const page = await api('GET', `/v1/suites/${encodeURIComponent(id)}/runs?${q}`, undefined, { signal: ctx.signal });
    history.append(...(page.runs || []).map((r) => h('tr', { 'data-run': r.id },
      h('td', { 'data-label': 'Run' }, h('a', { href: `#/runs/${r.id}`, class: 'mono' }, shortID(r.id))),
      h('td', { 'data-label': 'Status' }, badge(r.status)),
      h('td', { 'data-label': 'Trigger' }, r.trigger || ''),
      h('td', { 'data-label': 'Comparisons' }, runCounts(r.counts)),
      h('td', { 'data-label': 'Created' }, time(r.created_at)),
      h('td', { 'data-label': 'Finished' }, time(r.finished_at)))));
    if (!history.children.length) fill(more, h('p', { class: 'notice' }, 'No runs yet.'));
    else if (page.next_cursor) fill(more, h('button', { type: 'button', class: 'btn', onclick: () => load(page.next_cursor) }, 'Load more'));
    else fill(more);
  };
  try { await load(''); } catch (err) { fill(more, unavailable(err, 'Could not load runs')); }
}

// baselinesSection lists every baseline version (newest first per target,
// viewport and segment) with its image; an older version can be restored.
function baselinesSection(suiteID, ctx) {
  const body = h('tbody', { id: 'baseline-rows' });
  const msg = h('div', { role: 'status' });
  const section = h('section', { class: 'stack', style: 'margin-top:20px' },
    h('h2', {}, 'Baselines'), msg,
    h('div', { class: 'table-wrap' }, h('table', { class: 'responsive' },
      h('thead', {}, h('tr', {}, ['Target', 'Viewport', 'Segment', 'Version', 'Image', 'Approved', ''].map((c) => h('th', { scope: 'col' }, c)))),
      body)));
  const load = async () => {
    let data;
    try {
      data = await api('GET', `/v1/suites/${encodeURIComponent(suiteID)}/baselines?history=true`, undefined, { signal: ctx.signal });
    } catch (err) {
      fill(msg, unavailable(err, 'Could not load baselines'));
      return;
    }
    const list = data.baselines || [];
    if (!list.length) {
      fill(body, h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'None yet: approve a run to make its captures the baselines.')));
      return;
    }
    fill(body, ...list.map((b) => h('tr', { 'data-baseline': b.id },
      h('td', { 'data-label': 'Target' }, b.target),
      h('td', { 'data-label': 'Viewport' }, b.viewport),
      h('td', { 'data-label': 'Segment' }, b.checkpoint ? `${b.checkpoint} · ${b.segment}` : String(b.segment)),
      h('td', { 'data-label': 'Version' }, `v${b.version}`, b.active ? [' ', badge('approved', 'active')] : null),
      h('td', { 'data-label': 'Image' }, b.artifact_id
        ? h('a', { href: artifactURL(b.artifact_id), class: 'thumb-box' }, previewImage(b.artifact_id, { alt: `baseline v${b.version}`, width: 112, height: 70, loading: 'lazy' }))
        : h('span', { class: 'muted' }, 'removed')),
      h('td', { 'data-label': 'Approved' }, b.approved_by || '', ' · ', time(b.approved_at)),
      h('td', {}, !b.active && b.artifact_id ? h('button', {
        type: 'button', class: 'btn btn-small', onclick: async (ev) => {
          ev.currentTarget.disabled = true;
          try {
            const nb = await api('POST', `/v1/baselines/${encodeURIComponent(b.id)}/restore`);
            fill(msg, h('p', { class: 'notice' }, `Restored: ${b.target} ${b.viewport} segment ${b.segment} is v${nb.version} now.`));
            await load();
          } catch (err) {
            fill(msg, errorBox(err, 'Restore failed'));
          }
        },
      }, `Restore v${b.version}`) : null))));
  };
  load();
  return section;
}

// flakinessSection lists the suite's targets flakiest first: the flake
// score over the last 20 finished runs and each run's outcome (oldest left).
function flakinessSection(suiteID, ctx) {
  const body = h('tbody', { id: 'flaky-rows' });
  const msg = h('div', { role: 'status' });
  const section = h('section', { class: 'stack', style: 'margin-top:20px' },
    h('h2', {}, 'Flakiness'),
    h('p', { class: 'muted' }, 'How often each target changed between runs with nobody approving a change, over the last 20 runs: 0 steady, 1 changes every run.'),
    msg,
    h('div', { class: 'table-wrap' }, h('table', { class: 'responsive' },
      h('thead', {}, h('tr', {}, ['Target', 'Flake score', 'Flips', 'Runs (oldest → newest)'].map((c) => h('th', { scope: 'col' }, c)))),
      body)));
  (async () => {
    let data;
    try {
      data = await api('GET', `/v1/suites/${encodeURIComponent(suiteID)}/flakiness?runs=20`, undefined, { signal: ctx.signal });
    } catch (err) {
      fill(msg, unavailable(err, 'Could not load flakiness'));
      return;
    }
    const list = data.targets || [];
    if (!list.length) {
      fill(body, h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No finished runs yet.')));
      return;
    }
    fill(body, ...list.map((t) => h('tr', { 'data-target': t.target },
      h('td', { 'data-label': 'Target' }, t.target),
      h('td', { 'data-label': 'Flake score' }, t.flake_score.toFixed(2)),
      h('td', { 'data-label': 'Flips' }, String(t.flips)),
      h('td', { 'data-label': 'Runs', class: 'wrap' }, [...(t.history || [])].reverse().map((r) => h('a', {
        href: `#/runs/${r.run_id}`, title: `${r.status}${r.approved ? ' (approved)' : ''}, diff ${(r.max_diff_ratio * 100).toFixed(2)} %`,
      }, badge(r.approved && r.status !== 'passed' ? 'approved' : r.status)))))));
  })();
  return section;
}
