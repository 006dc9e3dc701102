// A run's page: its comparisons a page at a time (GET /v1/runs/:id/comparisons)
// with filters, thumbnails, the selected comparison expanded (baseline /
// current / diff and an overlay slider), approval of one, of a filter or of
// all, and keyboard review (j/k or arrows, a approve, ? help). A run of
// thousands of comparisons never loads them all at once.
import { api } from './api.js';
import { h, fill, badge, time, errorBox, shortID } from './ui.js';
import { actionLog } from './authprofiles.js';
import { unavailable, runCounts } from './regression.js';
import { changeGroups } from './groups.js';
import { changesPanel } from './changes.js';
import { maskedPanel } from './volatility.js';

const PAGE_SIZE = 50;

// FILTERS are the run page's filters: [name, query of the comparisons list, label, count key].
const FILTERS = [
  ['all', {}, 'all', 'total'],
  ['review', { status: 'failed,new,missing', approved: 'false' }, 'to review', 'to_review'],
  ['failed', { status: 'failed' }, 'failed', 'failed'],
  ['new', { status: 'new' }, 'new', 'new'],
  ['missing', { status: 'missing' }, 'missing', 'missing'],
  ['passed', { status: 'passed' }, 'passed', 'passed'],
  ['error', { status: 'error' }, 'error', 'error'],
];

// An error comparison has no capture to approve.
const needsApproval = (c) => ['failed', 'new', 'missing'].includes(c.status) && !c.approved;

const KEYS = [
  ['j / ↓', 'next comparison (the next page after the last)'],
  ['k / ↑', 'previous comparison'],
  ['a', 'approve the selected comparison'],
  ['r', 'reject the selected comparison (it stays failed)'],
  ['n / p', 'next / previous page'],
  ['?', 'this help (Esc closes)'],
];

export async function runView(ctx) {
  const [id] = ctx.params;
  const path = `/v1/runs/${encodeURIComponent(id)}`;
  const filter = FILTERS.find((f) => f[0] === ctx.query.get('filter')) || FILTERS[0];
  const msg = h('div', { id: 'run-message' });
  const head = h('div', { class: 'page-head stack' });
  const groups = h('div', { id: 'run-groups' }); // groups.js fills it
  const nav = h('nav', { class: 'filters', 'aria-label': 'Filter comparisons' });
  const pager = h('div', { class: 'row pager' });
  const list = h('div', { id: 'run-list', class: 'stack', 'aria-label': 'Comparisons' });
  const help = h('dialog', { id: 'run-help', 'aria-labelledby': 'run-help-title' },
    h('h2', { id: 'run-help-title' }, 'Keyboard review'),
    h('table', {}, h('tbody', {}, KEYS.map(([k, what]) => h('tr', {}, h('th', { scope: 'row' }, h('kbd', {}, k)), h('td', {}, what))))),
    h('form', { method: 'dialog' }, h('button', { class: 'btn', type: 'submit' }, 'Close')));
  ctx.main.append(msg, head, groups, nav, pager, list, help);

  const getRun = () => api('GET', `${path}?comparisons=false`, undefined, { signal: ctx.signal });
  let run;
  try {
    run = await getRun();
  } catch (err) {
    list.append(unavailable(err, 'Could not load the run'));
    return;
  }

  // The page: its rows, the cursors that led to each page, the selection.
  const cursors = [''];
  let page = 0;
  let rows = [];
  let next = '';
  let sel = 0;
  const els = new Map(); // comparison id → its element

  const render = (c) => {
    const i = rows.indexOf(c);
    const el = comparison(c, { expanded: i === sel, selected: i === sel, approve, select });
    els.set(c.id, el);
    return el;
  };
  const redrawRow = (c) => {
    const old = els.get(c.id);
    if (old) old.replaceWith(render(c));
  };
  const select = (cid, { focus = true } = {}) => {
    const i = rows.findIndex((c) => c.id === cid);
    if (i < 0) return;
    const prev = rows[sel];
    sel = i;
    if (prev && prev.id !== cid) redrawRow(prev);
    redrawRow(rows[i]);
    const el = els.get(cid);
    if (focus && el) {
      el.focus({ preventScroll: true });
      el.scrollIntoView({ block: 'nearest' });
    }
  };

  const total = () => run.counts[filter[3]] || 0;
  const drawHead = () => {
    const open = run.counts.to_review || 0;
    const byFilter = filter[1].status && !filter[1].status.includes(',') && needsApproval({ status: filter[1].status });
    fill(head,
      h('div', { class: 'crumbs' }, h('a', { href: '#/suites' }, 'Visual regression'), ' / ',
        h('a', { href: `#/suites/${run.suite_id}` }, 'suite'), ' / run ', shortID(run.id)),
      h('div', { class: 'spread' },
        h('div', { class: 'row' }, h('h1', {}, 'Run ', h('span', { class: 'mono' }, shortID(run.id))),
          h('span', { id: 'run-status' }, badge(run.status))),
        h('div', { class: 'row' },
          byFilter ? h('button', {
            type: 'button', class: 'btn', id: 'approve-filter', disabled: open === 0,
            onclick: (ev) => approve(ev.currentTarget, { status: [filter[1].status] }),
          }, `Approve all ${filter[1].status}`) : null,
          h('button', {
            type: 'button', class: 'btn btn-primary', id: 'approve-all', disabled: open === 0,
            onclick: (ev) => approve(ev.currentTarget, { all: true }),
          }, `Approve all (${open})`))),
      h('p', { class: 'muted', id: 'run-counts' }, `${run.trigger || 'manual'} run · ${runCounts(run.counts)} · `, time(run.created_at),
        run.batch_id ? [' · ', h('a', { href: `#/batches/${run.batch_id}` }, 'capture batch')] : null,
        ' · ', h('button', { type: 'button', class: 'linklike', onclick: () => help.showModal() }, 'keyboard: ?')));
    fill(nav, FILTERS.map(([name, , label, key]) => h('a', {
      href: name === 'all' ? `#/runs/${run.id}` : `#/runs/${run.id}?filter=${name}`,
      'aria-current': name === filter[0] ? 'true' : null, 'data-filter': name,
    }, `${label} (${run.counts[key] || 0})`)));
  };

  const drawPage = () => {
    els.clear();
    const from = page * PAGE_SIZE;
    fill(pager,
      h('button', { type: 'button', class: 'btn btn-small', id: 'page-prev', disabled: page === 0, onclick: () => turn(-1) }, '← Previous'),
      h('span', { id: 'run-page', class: 'small' }, rows.length ? `${from + 1}–${from + rows.length} of ${total()}` : `0 of ${total()}`),
      h('button', { type: 'button', class: 'btn btn-small', id: 'page-next', disabled: !next, onclick: () => turn(1) }, 'Next →'));
    if (!rows.length) {
      fill(list, h('p', { class: 'notice' }, run.status === 'running' ? 'Capturing…' : 'No comparisons here.'));
      return;
    }
    const byTarget = new Map();
    for (const c of rows) {
      if (!byTarget.has(c.target)) byTarget.set(c.target, []);
      byTarget.get(c.target).push(c);
    }
    fill(list, [...byTarget].map(([target, cs]) => h('section', { class: 'stack', 'data-target': target },
      h('div', { class: 'spread' }, h('h2', {}, target),
        cs.some(needsApproval) ? h('button', { type: 'button', class: 'btn btn-small', onclick: (ev) => approve(ev.currentTarget, { targets: [target] }) },
          `Approve ${target}`) : null),
      journeyOf(cs) ? journeys(cs, render) : cs.map(render))));
  };

  const load = async (p, selectLast) => {
    const q = new URLSearchParams({ limit: String(PAGE_SIZE), ...filter[1] });
    if (cursors[p]) q.set('cursor', cursors[p]);
    const res = await api('GET', `${path}/comparisons?${q}`, undefined, { signal: ctx.signal });
    page = p;
    rows = res.comparisons || [];
    next = res.next_cursor || '';
    cursors[p + 1] = next;
    sel = selectLast ? Math.max(rows.length - 1, 0) : Math.min(sel, Math.max(rows.length - 1, 0));
    drawPage();
  };
  let busy = false;
  const turn = async (d, selectLast = false) => {
    if (busy || (d > 0 && !next) || (d < 0 && page === 0)) return false;
    busy = true;
    try {
      if (d !== 0) sel = 0;
      await load(page + d, selectLast);
      if (rows[sel]) select(rows[sel].id);
      return true;
    } catch (err) {
      if (err.name !== 'AbortError') fill(msg, errorBox(err, 'Could not load comparisons'));
      return false;
    } finally {
      busy = false;
    }
  };

  // approve sends one approval; one comparison's is drawn in place (and the
  // selection moves on), a wider one reloads the page.
  async function approve(btn, payload, one) {
    if (btn) btn.disabled = true;
    fill(msg);
    try {
      run = await api('POST', `${path}/approve?comparisons=false`, payload);
      drawHead();
      if (one) {
        const c = rows.find((x) => x.id === one);
        if (c) { c.approved = true; c.approved_at = new Date().toISOString(); redrawRow(c); }
        if (rows[sel] && rows[sel].id === one) await move(1);
      } else {
        await load(page);
        if (rows[sel]) select(rows[sel].id, { focus: false });
      }
      fill(msg, h('p', { class: 'notice', role: 'status' }, `Approved. The run is now ${run.status.replace('_', ' ')}.`));
    } catch (err) {
      fill(msg, errorBox(err, 'Approve failed'));
      if (btn) btn.disabled = false;
    }
  }

  // reject marks one comparison rejected, draws it in place and moves on.
  async function reject(c) {
    fill(msg);
    try {
      const res = await api('POST', `${path}/reject`, { comparisons: [c.id] });
      run = { ...run, status: res.run_status, counts: res.counts };
      drawHead();
      c.rejected = true;
      c.rejected_at = new Date().toISOString();
      redrawRow(c);
      if (rows[sel] && rows[sel].id === c.id) await move(1);
      fill(msg, h('p', { class: 'notice', role: 'status' }, 'Rejected: it stays failed until approved.'));
    } catch (err) {
      fill(msg, errorBox(err, 'Reject failed'));
    }
  }

  const move = async (d) => {
    const i = sel + d;
    if (i >= 0 && i < rows.length) { select(rows[i].id); return; }
    await turn(d > 0 ? 1 : -1, d < 0);
  };
  const onKey = (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target.closest && ev.target.closest('input, textarea, select, [contenteditable]')) return;
    if (document.querySelector('dialog[open]') && ev.key !== '?') return;
    const c = rows[sel];
    switch (ev.key) {
      case 'j': case 'ArrowDown': move(1); break;
      case 'k': case 'ArrowUp': move(-1); break;
      case 'n': turn(1); break;
      case 'p': turn(-1); break;
      case 'a': if (c && needsApproval(c)) approve(null, { comparisons: [c.id] }, c.id); break;
      case 'r': if (c && needsApproval(c) && !c.rejected) reject(c); break;
      case '?': if (help.open) help.close(); else help.showModal(); break;
      default: return;
    }
    ev.preventDefault();
  };
  document.addEventListener('keydown', onKey);
  ctx.onCleanup(() => document.removeEventListener('keydown', onKey));

  drawHead();
  try {
    await load(0);
  } catch (err) {
    fill(list, unavailable(err, 'Could not load comparisons'));
    return;
  }
  // Ready for review: the first page is drawn and the keys work. The time
  // since navigation started is kept for measurements (performance.now()).
  list.dataset.readyMs = String(Math.round(performance.now()));
  changeGroups(id, groups, { onChange: async () => { run = await getRun(); drawHead(); await load(page); } });
  if (run.status === 'running') {
    // Live events while the run runs; polling every 2 s if they are unavailable.
    ctx.follow(`${path}/events`, async () => {
      run = await getRun();
      drawHead();
      await load(page);
      return run.status === 'running';
    });
  }
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
function journeys(list, render) {
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
        g.comps.map(render)))));
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

// ratio says how different a comparison's images are, or that there was
// nothing to compare: a new segment has no baseline, a missing one no capture.
function ratio(c) {
  if (c.status === 'new') return 'nothing to compare: no baseline yet';
  if (c.status === 'missing') return 'nothing to compare: no current capture';
  if (c.status === 'error' || c.diff_ratio === undefined || c.diff_ratio === null) return '';
  return `${(c.diff_ratio * 100).toFixed(3)}% different (${c.diff_pixels ?? 0} px; threshold ${((c.threshold || 0) * 100).toFixed(3)}%)`;
}

function image(ref, label) {
  if (!ref || !ref.url) return h('figure', {}, h('div', { class: 'placeholder' }, `no ${label}`), h('figcaption', {}, label));
  return h('figure', {},
    h('a', { href: ref.url }, h('img', { src: ref.url, alt: label, width: ref.width, height: ref.height, loading: 'lazy' })),
    h('figcaption', {}, `${label} · ${ref.width} × ${ref.height} px`));
}

// comparison is one row of the run page: compact (thumbnails) or, for the
// selected one, expanded (full images and the overlay slider).
function comparison(c, { expanded, selected, approve, select }) {
  return h('article', {
    class: `panel cmp${expanded ? ' cmp-open' : ''}`, 'data-comparison': c.id, tabindex: selected ? 0 : -1,
    'aria-current': selected ? 'true' : null, onclick: (ev) => { if (!ev.target.closest('a, button, input, summary')) select(c.id); },
  },
    h('div', { class: 'spread' },
      h('div', { class: 'row' },
        h('strong', {}, `${expanded ? '' : `${c.target} · `}${c.viewport || ''} · ${c.checkpoint ? `${c.checkpoint} · ` : ''}segment ${c.segment}`), badge(c.status),
        c.approved ? badge('approved') : null,
        c.rejected && !c.approved ? badge('rejected') : null,
        c.status === 'passed' && c.shifted_px ? badge('shifted', `unchanged, shifted ${c.shifted_px > 0 ? '+' : ''}${c.shifted_px} px`) : null,
        (c.masked_regions || []).length ? badge('shifted', `${c.masked_regions.length} masked as volatile`) : null,
        h('span', { class: 'small muted' }, ratio(c))),
      needsApproval(c) ? h('button', { type: 'button', class: 'btn btn-small', onclick: (ev) => approve(ev.currentTarget, { comparisons: [c.id] }, c.id) },
        'Approve') : null),
    c.message ? h('p', { class: 'small' }, c.message) : null,
    expanded ? [
      bands(c),
      h('div', { class: 'cmp-images' }, image(c.baseline, 'baseline'), image(c.current, 'current'), image(c.diff, 'diff')),
      maskedPanel(c),
      changesPanel(c),
      c.baseline && c.current ? overlay(c) : null,
    ] : h('div', { class: 'cmp-thumbs' }, thumb(c.baseline, 'baseline'), thumb(c.current, 'current'), thumb(c.diff, 'diff')));
}

// thumb is a compact row's small picture: the image's thumbnail when it has
// one, else the image scaled down; loaded only when scrolled near.
function thumb(ref, label) {
  if (!ref || !ref.url) return h('span', { class: 'thumb-box' }, `no ${label}`);
  const t = ref.thumbnail;
  return h('a', { href: ref.url, class: 'thumb-box', title: label },
    h('img', { src: t ? t.url : ref.url, alt: label, width: t ? t.width : 112, height: t ? t.height : 70, loading: 'lazy', decoding: 'async' }));
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
