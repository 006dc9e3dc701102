// Visual regression: suites (last run, schedule), a suite's run history, and a
// run's comparisons with baseline / current / diff, an overlay slider and the
// approve buttons. Every view shows the API's own error when a call fails
// (for example a 404 from a server without the regression API).
import { api, artifactURL } from './api.js';
import { h, fill, badge, time, errorBox, shortID, previewImage } from './ui.js';
import { actionLog } from './authprofiles.js';
import { changesPanel } from './changes.js';

function unavailable(err, what) {
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

function runCounts(c) {
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

export async function runView(ctx) {
  const [id] = ctx.params;
  const msg = h('div', { id: 'run-message' });
  const body = h('div');
  ctx.main.append(msg, body);
  const get = () => api('GET', `/v1/runs/${encodeURIComponent(id)}`, undefined, { signal: ctx.signal });
  let run;
  try {
    run = await get();
  } catch (err) {
    body.append(unavailable(err, 'Could not load the run'));
    return;
  }
  const approve = async (btn, payload) => {
    btn.disabled = true;
    fill(msg);
    try {
      let next = await api('POST', `/v1/runs/${encodeURIComponent(id)}/approve`, payload);
      if (!next || !Array.isArray(next.comparisons)) next = await get();
      run = next;
      drawRun(body, run, approve);
      fill(msg, h('p', { class: 'notice', role: 'status' }, `Approved. The run is now ${run.status.replace('_', ' ')}.`));
    } catch (err) {
      fill(msg, errorBox(err, 'Approve failed'));
      btn.disabled = false;
    }
  };
  drawRun(body, run, approve);
  if (run.status === 'running') {
    // Live events while the run runs; polling every 2 s if they are unavailable.
    ctx.follow(`/v1/runs/${encodeURIComponent(id)}/events`, async () => {
      run = await get();
      drawRun(body, run, approve);
      return run.status === 'running';
    });
  }
}

// An error comparison has no capture to approve.
const needsApproval = (c) => ['failed', 'new', 'missing'].includes(c.status) && !c.approved;

function drawRun(el, run, approve) {
  const comps = run.comparisons || [];
  const byTarget = new Map();
  for (const c of comps) {
    if (!byTarget.has(c.target)) byTarget.set(c.target, []);
    byTarget.get(c.target).push(c);
  }
  const pending = comps.filter(needsApproval).length;
  const all = h('button', {
    type: 'button', class: 'btn btn-primary', id: 'approve-all', disabled: pending === 0,
    onclick: (ev) => approve(ev.currentTarget, { all: true }),
  }, `Approve all (${pending})`);
  fill(el,
    h('div', { class: 'page-head stack' },
      h('div', { class: 'crumbs' }, h('a', { href: '#/suites' }, 'Visual regression'), ' / ',
        h('a', { href: `#/suites/${run.suite_id}` }, 'suite'), ' / run ', shortID(run.id)),
      h('div', { class: 'spread' },
        h('div', { class: 'row' }, h('h1', {}, 'Run ', h('span', { class: 'mono' }, shortID(run.id))),
          h('span', { id: 'run-status' }, badge(run.status))),
        all),
      h('p', { class: 'muted' }, `${run.trigger || 'manual'} run · ${runCounts(run.counts)} · `, time(run.created_at),
        run.batch_id ? [' · ', h('a', { href: `#/batches/${run.batch_id}` }, 'capture batch')] : null)),
    comps.length ? null : h('p', { class: 'notice' }, run.status === 'running' ? 'Capturing…' : 'No comparisons.'),
    [...byTarget].map(([target, list]) => {
      const open = list.filter(needsApproval).length;
      return h('section', { class: 'stack', style: 'margin-top:24px', 'data-target': target },
        h('div', { class: 'spread' }, h('h2', {}, target),
          open ? h('button', { type: 'button', class: 'btn', onclick: (ev) => approve(ev.currentTarget, { targets: [target] }) },
            `Approve ${target} (${open})`) : null),
        journeyOf(list) ? journeys(list, approve) : list.map((c) => comparison(c, approve)));
    }));
}

// A target whose screenshot actions are checkpoints (journeys): its
// comparisons carry a checkpoint name or a step.
const journeyOf = (list) => list.some((c) => c.checkpoint || (c.step !== null && c.step !== undefined));

const ACTION_TYPES = new Set(['click', 'hover', 'type', 'press', 'select', 'scroll', 'wait', 'wait_for_selector',
  'wait_for_navigation', 'evaluate', 'screenshot']);

// actionEntries picks the actions' entries out of a job's step log: the last
// run of action entries with rising indexes (preparation steps come first,
// a failed later phase may come last).
function actionEntries(log) {
  const out = [];
  for (let i = (log || []).length - 1; i >= 0; i--) {
    const e = log[i];
    if (!ACTION_TYPES.has(e.type)) {
      if (out.length) break;
      continue;
    }
    if (out.length && e.index >= out[0].index) break;
    out.unshift(e);
  }
  return out;
}

const jobLogs = new Map(); // job id → Promise of its step log (a run's jobs are final)

function jobLog(jobID) {
  if (!jobLogs.has(jobID)) {
    jobLogs.set(jobID, api('GET', `/v1/jobs/${encodeURIComponent(jobID)}`)
      .then((j) => actionEntries((j.result && j.result.log) || []))
      .catch((err) => { jobLogs.delete(jobID); throw err; }));
  }
  return jobLogs.get(jobID);
}

// journeys shows a journey target's checkpoints in order, per capture job
// (viewport), with the steps performed between one checkpoint and the next.
function journeys(list, approve) {
  const byJob = new Map();
  for (const c of list) {
    if (!byJob.has(c.job_id)) byJob.set(c.job_id, []);
    byJob.get(c.job_id).push(c);
  }
  return [...byJob].map(([jobID, comps]) => {
    const groups = [];
    for (const c of comps) {
      const last = groups[groups.length - 1];
      if (last && last.checkpoint === c.checkpoint) last.comps.push(c);
      else groups.push({ checkpoint: c.checkpoint, step: c.step, comps: [c] });
    }
    const boxes = groups.map(() => h('div', { class: 'steps-between' }));
    const section = h('div', { class: 'stack journey', 'data-job': jobID },
      h('h3', {}, `${comps[0].viewport || ''} · journey of ${groups.length} checkpoints · `,
        h('a', { href: `#/jobs/${jobID}` }, 'capture job')),
      h('ol', { class: 'checkpoints' }, groups.map((g, i) => h('li', { 'data-checkpoint': g.checkpoint || 'final' },
        h('h4', {}, g.checkpoint ? `Checkpoint “${g.checkpoint}” (step ${g.step})` : 'Final screenshot'),
        boxes[i],
        g.comps.map((c) => comparison(c, approve))))));
    jobLog(jobID).then((entries) => {
      let prev = -1;
      groups.forEach((g, i) => {
        const upTo = g.step === null || g.step === undefined ? Infinity : g.step;
        const between = entries.filter((e) => e.index > prev && e.index < upTo);
        const failed = entries.find((e) => e.index === upTo && !e.ok);
        const shown = failed ? [...between, failed] : between;
        if (shown.length) {
          fill(boxes[i], h('details', { open: shown.some((e) => !e.ok) },
            h('summary', {}, `${shown.length} step${shown.length === 1 ? '' : 's'} before this checkpoint`),
            actionLog(shown, { 'data-testid': 'journey-steps' })));
        }
        if (upTo !== Infinity) prev = upTo;
      });
    }).catch((err) => fill(boxes[0], errorBox(err, 'Could not load the step log')));
    return section;
  });
}

function ratio(c) {
  if (c.diff_ratio === undefined || c.diff_ratio === null) return '';
  return `${(c.diff_ratio * 100).toFixed(3)}% different (${c.diff_pixels ?? 0} px; threshold ${((c.threshold || 0) * 100).toFixed(3)}%)`;
}

function image(ref, label) {
  if (!ref || !ref.url) return h('figure', {}, h('div', { class: 'placeholder' }, `no ${label}`), h('figcaption', {}, label));
  return h('figure', {},
    h('a', { href: ref.url }, h('img', { src: ref.url, alt: label, width: ref.width, height: ref.height, loading: 'lazy' })),
    h('figcaption', {}, `${label} · ${ref.width} × ${ref.height} px`));
}

function comparison(c, approve) {
  return h('article', { class: 'panel cmp', 'data-comparison': c.id },
    h('div', { class: 'spread' },
      h('div', { class: 'row' },
        h('strong', {}, `${c.viewport || ''} · ${c.checkpoint ? `${c.checkpoint} · ` : ''}segment ${c.segment}`), badge(c.status),
        c.approved ? badge('approved') : null,
        c.status === 'passed' && c.shifted_px ? badge('shifted', `unchanged, shifted ${c.shifted_px > 0 ? '+' : ''}${c.shifted_px} px`) : null,
        h('span', { class: 'small muted' }, ratio(c))),
      needsApproval(c) ? h('button', { type: 'button', class: 'btn btn-small', onclick: (ev) => approve(ev.currentTarget, { comparisons: [c.id] }) },
        'Approve') : null),
    c.message ? h('p', { class: 'small' }, c.message) : null,
    bands(c),
    h('div', { class: 'cmp-images' }, image(c.baseline, 'baseline'), image(c.current, 'current'), image(c.diff, 'diff')),
    changesPanel(c),
    c.baseline && c.current ? overlay(c) : null);
}

// bands lists an aligned comparison's inserted and removed blocks ("+40 px
// at y=1,204"); changed rows are in the message and the diff image.
function bands(c) {
  const hs = (c.hunks || []).filter((x) => x.kind === 'inserted' || x.kind === 'removed');
  if (!hs.length) return null;
  const fmt = (n) => n.toLocaleString('en-US');
  return h('ul', { class: 'small bands' }, hs.map((x) => h('li', { 'data-kind': x.kind },
    x.kind === 'inserted' ? `+${fmt(x.b_end - x.b_start)} px at y=${fmt(x.b_start)}` : `−${fmt(x.a_end - x.a_start)} px at y=${fmt(x.b_start)}`)));
}

// overlay stacks current over baseline; the slider (keyboard: arrow keys)
// moves the border between them.
function overlay(c) {
  const top = h('div', { class: 'top-layer' }, h('img', { src: c.current.url, alt: '' }));
  const divider = h('div', { class: 'divider' });
  const set = (v) => {
    top.style.clipPath = `inset(0 0 0 ${v}%)`;
    divider.style.left = `${v}%`;
  };
  const slider = h('input', {
    type: 'range', min: 0, max: 100, value: 50, class: 'slider',
    'aria-label': 'Overlay: baseline left of the line, current right of it',
    oninput: (ev) => set(ev.target.value),
  });
  set(50);
  return h('details', { open: c.status === 'failed' },
    h('summary', {}, 'Overlay (baseline | current)'),
    h('div', { class: 'overlay-box' },
      h('div', { class: 'overlay' }, h('img', { src: c.baseline.url, alt: 'baseline and current overlaid' }), top, divider),
      slider));
}
