// Changes explained by elements: a failed comparison's changes (GET
// /v1/comparisons/:id/changes) listed beside its images; hovering or focusing
// a change outlines its element on the baseline and current images. Each
// change offers the rules made from it (ignore the element; its text is
// dynamic), previewed before they are saved.
import { api } from './api.js';
import { h, fill, badge, errorBox } from './ui.js';

const KIND_LABEL = {
  text_changed: 'text changed', style_changed: 'style changed', moved: 'moved', added: 'added',
  removed: 'removed', image_changed: 'image changed', frame_changed: 'frame changed', unattributed: 'unattributed',
};

// changesPanel returns the panel of comparison c (its article holds the
// images), loading the changes when opened; null when nothing differed.
export function changesPanel(c) {
  if (!c.id || !(c.diff_pixels > 0 || c.status === 'failed')) return null;
  const list = h('div', { class: 'changes-list small' }, 'Loading…');
  let loaded = false;
  const panel = h('details', {
    class: 'changes', open: c.status === 'failed',
    ontoggle: (ev) => { if (ev.currentTarget.open && !loaded) { loaded = true; load(c, list); } },
  }, h('summary', {}, 'Changes by element'), list);
  if (c.status === 'failed') { loaded = true; queueMicrotask(() => load(c, list)); }
  return panel;
}

async function load(c, list) {
  try {
    const out = await api('GET', `/v1/comparisons/${c.id}/changes`);
    const changes = out.changes || [];
    if (!changes.length) { fill(list, h('p', { class: 'muted' }, 'No change could be explained (no element boxes recorded).')); return; }
    fill(list, h('ul', { class: 'changes-items' }, changes.map((ch) => item(ch, out, list))));
  } catch (err) {
    fill(list, errorBox(err, 'Changes'));
  }
}

function detail(ch) {
  const parts = [];
  if (ch.kind === 'text_changed' && ch.before && ch.after) parts.push(`“${ch.before.text || ''}” → “${ch.after.text || ''}”`);
  if (ch.dx || ch.dy) parts.push(`moved ${ch.dx || 0}, ${ch.dy || 0} px`);
  if (ch.properties && ch.properties.length) {
    parts.push(ch.properties.map((p) => {
      const b = ch.before && ch.before.style ? ch.before.style[p] : undefined;
      const a = ch.after && ch.after.style ? ch.after.style[p] : undefined;
      return b !== undefined || a !== undefined ? `${p}: ${b ?? '—'} → ${a ?? '—'}` : p;
    }).join('; '));
  }
  return parts.join(' · ');
}

function item(ch, out, list) {
  const li = h('li', {
    tabindex: 0, 'data-kind': ch.kind,
    onmouseenter: () => highlight(list, ch, true), onmouseleave: () => highlight(list, ch, false),
    onfocus: () => highlight(list, ch, true), onblur: () => highlight(list, ch, false),
  },
  badge(ch.suppressed_by ? 'passed' : 'failed', KIND_LABEL[ch.kind] || ch.kind),
  ' ', ch.selector ? h('code', {}, ch.selector) : null,
  ' ', h('span', { class: 'muted' }, detail(ch)),
  ch.suppressed_by ? h('span', { class: 'muted' }, ch.suppressed_by === 'volatility'
    ? ' · masked: its region was learned volatile' : ` · suppressed by rule ${ch.suppressed_by.slice(-8)}`) : null,
  ch.selector && !ch.suppressed_by ? ruleButtons(ch, out) : null);
  return li;
}

// ruleButtons make a rule from the change: preview first, then save on confirm.
function ruleButtons(ch, out) {
  const status = h('span', { class: 'small muted' });
  const make = async (body) => {
    try {
      const p = await api('POST', `/v1/suites/${out.suite_id}/rules/preview`, body);
      if (!window.confirm(`This rule would have suppressed ${p.would_suppress} of ${p.changes} changes in the last ${p.runs} runs. Save it?`)) return;
      await api('POST', `/v1/suites/${out.suite_id}/rules`, body);
      status.textContent = ' rule saved; it applies from the next run';
    } catch (err) {
      fill(status, errorBox(err, 'Rule'));
    }
  };
  const buttons = [
    h('button', { type: 'button', class: 'btn btn-small', onclick: () => make({ kind: 'ignore_element', selector: ch.selector, target: out.target }) },
      'Ignore element'),
  ];
  if (ch.kind === 'text_changed') {
    buttons.push(h('button', {
      type: 'button', class: 'btn btn-small',
      onclick: () => {
        const pattern = window.prompt('Regular expression (RE2) of the text that may change:', '\\d{1,2}:\\d{2}');
        if (pattern) make({ kind: 'dynamic_text', selector: ch.selector, pattern });
      },
    }, 'Dynamic text…'));
  }
  return h('span', { class: 'row' }, buttons, status);
}

// highlight outlines the change's element (before on the baseline image,
// after on the current one; the changed pixels on the diff) in the article.
function highlight(list, ch, on) {
  const article = list.closest('article');
  if (!article) return;
  for (const old of article.querySelectorAll('.change-box')) old.remove();
  if (!on) return;
  const figures = article.querySelectorAll('.cmp-images figure');
  const boxes = [ch.before ? ch.before.box : null, ch.after ? ch.after.box : null, ch.box];
  figures.forEach((fig, i) => {
    const img = fig.querySelector('img');
    const box = boxes[i] || ch.box;
    if (!img || !box || !img.naturalWidth) return;
    const scale = img.clientWidth / img.naturalWidth;
    const holder = img.parentElement;
    holder.style.position = 'relative';
    holder.style.display = 'block';
    holder.append(h('div', {
      class: 'change-box', 'aria-hidden': 'true',
      style: `position:absolute;pointer-events:none;border:2px solid #e0a000;box-shadow:0 0 0 9999px rgba(0,0,0,.15);` +
        `left:${box.x * scale}px;top:${box.y * scale}px;width:${box.width * scale}px;height:${box.height * scale}px`,
    }));
  });
}
