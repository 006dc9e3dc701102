// Batches: the list (newest first, filter by status) and the submit form.
import { api, getKey } from './api.js';
import { h, fill, badge, progress, time, labelChips, errorBox, filterLinks, shortID, donePercent } from './ui.js';

const BATCH_STATES = ['queued', 'running', 'completed'];

/** batchesView lists batches newest first; it refreshes every 5 s while some are unfinished. */
export async function batchesView(ctx) {
  const status = BATCH_STATES.includes(ctx.query.get('status')) ? ctx.query.get('status') : '';
  const list = h('ul', { class: 'batch-list', 'aria-label': 'Batches', id: 'batch-list' });
  const more = h('div', { class: 'row' });
  const msg = h('div');
  ctx.main.append(
    h('div', { class: 'spread page-head' },
      h('h1', {}, 'Batches'),
      h('div', { class: 'row' },
        filterLinks('#/batches', status, BATCH_STATES, 'Filter batches by status'),
        h('a', { class: 'btn btn-primary', href: '#/submit' }, 'New batch'))),
    msg, list, more);

  let pages = 1;
  const load = async (cursor) => {
    const q = new URLSearchParams({ limit: '25' });
    if (status) q.set('status', status);
    if (cursor) q.set('cursor', cursor);
    return api('GET', `/v1/batches?${q}`, undefined, { signal: ctx.signal });
  };
  const showMore = (next) => {
    fill(more);
    if (!next) return;
    more.append(h('button', {
      type: 'button', class: 'btn', onclick: async (ev) => {
        ev.target.disabled = true;
        try {
          const page = await load(next);
          pages++;
          list.append(...page.batches.map(batchItem));
          showMore(page.next_cursor);
        } catch (err) {
          fill(more, errorBox(err));
        }
      },
    }, 'Load more'));
  };

  let first;
  try {
    first = await load('');
  } catch (err) {
    msg.append(errorBox(err, 'Could not load batches'));
    return;
  }
  const draw = (page) => {
    fill(list, ...page.batches.map(batchItem));
    fill(msg);
    if (!page.batches.length) msg.append(status ? h('p', { class: 'notice' }, `No ${status} batches.`) : emptyState());
    showMore(page.next_cursor);
  };
  draw(first);
  // Refresh the first page while something is still moving (not after "Load more").
  ctx.every(5000, async () => {
    if (pages > 1) return true;
    const page = await load('');
    draw(page);
    return true;
  });
}

function batchItem(b) {
  const done = (b.counts.succeeded || 0) + (b.counts.failed || 0) + (b.counts.canceled || 0);
  return h('li', { class: 'panel batch-item', 'data-batch': b.id },
    h('div', { class: 'stack' },
      h('div', { class: 'row' },
        h('a', { href: `#/batches/${b.id}`, class: 'mono', 'aria-label': `Batch ${b.id}` }, shortID(b.id)),
        badge(b.status)),
      labelChips(b.labels)),
    h('div', {},
      progress(b.counts, b.total),
      h('div', { class: 'small muted' },
        `${done} of ${b.total} done · ${donePercent(b.counts, b.total)}%`,
        b.counts.succeeded ? ` · ${b.counts.succeeded} succeeded` : '',
        b.counts.failed ? ` · ${b.counts.failed} failed` : '',
        b.counts.running ? ` · ${b.counts.running} running` : '',
        b.counts.queued ? ` · ${b.counts.queued} queued` : '',
        b.counts.canceled ? ` · ${b.counts.canceled} canceled` : '')),
    h('div', { class: 'when' },
      h('div', {}, 'created ', time(b.created_at)),
      b.finished_at ? h('div', {}, 'finished ', time(b.finished_at)) : null));
}

function emptyState() {
  const auth = getKey() ? ` \\\n  -H "Authorization: Bearer $SNAPQ_KEY"` : '';
  const curl = `curl -s -X POST ${location.origin}/v1/batches \\\n  -H 'Content-Type: application/json'${auth} \\\n` +
    `  -d '{"urls": ["https://example.com/"], "options": {"viewport": {"width": 1280, "height": 720}}}'`;
  return h('div', { class: 'panel empty stack', id: 'empty-state' },
    h('h2', {}, 'No batches yet'),
    h('p', {}, 'A batch is a list of URLs captured together: every page is rendered in headless Chromium, cut into screenshots and stored. ',
      'Submit one with the form, or from a script:'),
    h('p', {}, h('a', { class: 'btn btn-primary', href: '#/submit' }, 'Submit a batch')),
    h('pre', {}, curl),
    h('p', { class: 'small muted' }, 'The answer holds the batch id; it shows up here at once and its progress updates live.'));
}

const OUTPUTS = ['screenshot', 'html', 'text', 'links', 'metadata', 'pdf', 'markdown'];

/** submitView is the form that posts a batch; the API's field errors appear next to their field. */
export async function submitView(ctx) {
  const err = {};
  const errEl = (name) => (err[name] = h('p', { class: 'field-error', id: `err-${name}`, role: 'alert' }));
  const urls = h('textarea', { id: 'f-urls', name: 'urls', rows: 8, required: true, spellcheck: 'false',
    placeholder: 'https://example.com/\nhttps://example.com/pricing', 'aria-describedby': 'hint-urls err-urls' });
  const mode = h('select', { id: 'f-mode', name: 'mode', 'aria-describedby': 'err-mode' },
    ['segments', 'full', 'viewport'].map((m) => h('option', { value: m }, m)));
  const format = h('select', { id: 'f-format', name: 'format', 'aria-describedby': 'err-format' },
    ['png', 'jpeg', 'webp'].map((m) => h('option', { value: m }, m)));
  const width = h('input', { id: 'f-width', name: 'width', type: 'number', value: '1280', inputmode: 'numeric', 'aria-describedby': 'err-width' });
  const height = h('input', { id: 'f-height', name: 'height', type: 'number', value: '720', inputmode: 'numeric', 'aria-describedby': 'err-height' });
  const maxSeg = h('input', { id: 'f-max-segments', name: 'max_segments', type: 'number', value: '10', inputmode: 'numeric', 'aria-describedby': 'err-max_segments' });
  const labels = h('input', { id: 'f-labels', name: 'labels', type: 'text', placeholder: 'team=web, env=staging', 'aria-describedby': 'err-labels' });
  const outputs = OUTPUTS.map((o) => h('input', { type: 'checkbox', name: 'outputs', value: o, id: `f-out-${o}`, checked: o === 'screenshot' }));
  const formError = h('div', { id: 'form-error' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', id: 'submit-batch' }, 'Submit batch');

  const fields = { urls, mode, format, width, height, max_segments: maxSeg, labels, outputs: outputs[0] };
  const form = h('form', { class: 'panel stack', id: 'submit-form', novalidate: true },
    h('div', { class: 'field' },
      h('label', { for: 'f-urls' }, 'URLs'),
      h('p', { class: 'hint', id: 'hint-urls' }, 'One per line, http or https.'),
      urls, errEl('urls')),
    h('div', { class: 'form-grid' },
      h('div', { class: 'field' }, h('label', { for: 'f-mode' }, 'Screenshot mode'), mode, errEl('mode')),
      h('div', { class: 'field' }, h('label', { for: 'f-format' }, 'Format'), format, errEl('format')),
      h('div', { class: 'field' }, h('label', { for: 'f-width' }, 'Viewport width (px)'), width, errEl('width')),
      h('div', { class: 'field' }, h('label', { for: 'f-height' }, 'Viewport height (px)'), height, errEl('height')),
      h('div', { class: 'field' }, h('label', { for: 'f-max-segments' }, 'Max segments'), maxSeg, errEl('max_segments'))),
    h('div', { class: 'field' },
      h('fieldset', { 'aria-describedby': 'err-outputs' },
        h('legend', {}, 'Outputs'),
        h('div', { class: 'checks' }, outputs.map((c) => h('label', {}, c, c.value)))),
      errEl('outputs')),
    h('div', { class: 'field' },
      h('label', { for: 'f-labels' }, 'Labels (optional)'), labels,
      h('p', { class: 'hint' }, 'key=value pairs separated by commas.'), errEl('labels')),
    formError,
    h('div', { class: 'row' }, submit, h('a', { href: '#/', class: 'btn btn-quiet' }, 'Cancel')));
  ctx.main.append(h('div', { class: 'page-head' }, h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Batches'), ' / new'),
    h('h1', {}, 'New batch')), form);
  urls.focus();

  const clear = () => {
    Object.values(err).forEach((e) => { e.textContent = ''; });
    Object.values(fields).forEach((f) => f.removeAttribute('aria-invalid'));
    fill(formError);
  };
  const show = (name, text) => {
    const el = err[name];
    el.textContent = el.textContent ? `${el.textContent} ${text}` : text;
    fields[name].setAttribute('aria-invalid', 'true');
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear();
    // Remember which line each target came from, so "targets[3].url" points at its line.
    const lines = urls.value.split('\n');
    const targets = [];
    const lineOf = [];
    lines.forEach((l, i) => {
      if (l.trim()) { targets.push({ url: l.trim() }); lineOf.push(i + 1); }
    });
    const parsedLabels = parseLabels(labels.value);
    if (parsedLabels.error) { show('labels', parsedLabels.error); return; }
    const body = {
      targets,
      options: {
        viewport: { width: num(width.value), height: num(height.value) },
        screenshot: { mode: mode.value, format: format.value, max_segments: num(maxSeg.value) },
        outputs: outputs.filter((c) => c.checked).map((c) => c.value),
      },
    };
    if (Object.keys(parsedLabels.labels).length) body.labels = parsedLabels.labels;
    submit.disabled = true;
    try {
      const b = await api('POST', '/v1/batches', body);
      location.hash = `#/batches/${b.id}`;
    } catch (e) {
      let placed = 0;
      for (const f of e.fields) {
        const where = fieldFor(f.field || '');
        if (!where) continue;
        const [name, index] = where;
        const prefix = index === undefined ? '' : `Line ${lineOf[index] ?? index + 1}: `;
        show(name, `${prefix}${f.message}`);
        placed++;
      }
      if (!placed) formError.append(errorBox(e, 'The batch was not accepted'));
      const firstBad = Object.values(fields).find((f) => f.getAttribute('aria-invalid') === 'true');
      if (firstBad) firstBad.focus();
    } finally {
      submit.disabled = false;
    }
  });
}

/** fieldFor maps an API error field ("targets[3].url", "options.viewport.width") to a form field. */
export function fieldFor(path) {
  const t = path.match(/^(?:targets|urls)\[(\d+)\]/);
  if (t) return ['urls', Number(t[1])];
  if (path === 'targets' || path === 'urls') return ['urls'];
  const map = [
    ['options.viewport.width', 'width'], ['options.viewport.height', 'height'], ['options.viewport', 'width'],
    ['options.screenshot.mode', 'mode'], ['options.screenshot.format', 'format'],
    ['options.screenshot.max_segments', 'max_segments'], ['options.outputs', 'outputs'], ['labels', 'labels'],
  ];
  const hit = map.find(([p]) => path === p || path.startsWith(`${p}.`) || path.startsWith(`${p}[`));
  return hit ? [hit[1]] : null;
}

function num(v) {
  const n = Number(v);
  return v.trim() === '' || Number.isNaN(n) ? v : n;
}

function parseLabels(text) {
  const labels = {};
  for (const part of text.split(',')) {
    if (!part.trim()) continue;
    const i = part.indexOf('=');
    if (i <= 0) return { error: `"${part.trim()}" is not key=value` };
    labels[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return { labels };
}
