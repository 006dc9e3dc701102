// Learned volatility (issue 30). On a comparison: the learned-volatile
// regions it masked, listed and outlined on its images, so nothing is hidden
// silently. On a suite: a heat map per target (which regions changed how
// often over the suite's last runs, drawn over the active baseline) and the
// suggested rules, each accepted in one click.
import { api, artifactURL } from './api.js';
import { h, fill, badge, errorBox } from './ui.js';

const pct = (x) => `${Math.round((x || 0) * 100)} %`;

// boxOver is an outline of box (image pixels of an image naturalW × naturalH
// pixels) placed in percent, so it holds whatever size the image is shown at.
function boxOver(box, naturalW, naturalH, cls, style, title) {
  return h('div', {
    class: cls, title, 'aria-hidden': 'true',
    style: `position:absolute;pointer-events:none;left:${(100 * box.x) / naturalW}%;top:${(100 * box.y) / naturalH}%;` +
      `width:${(100 * box.width) / naturalW}%;height:${(100 * box.height) / naturalH}%;${style}`,
  });
}

// maskedPanel lists comparison c's masked regions and outlines them on its
// current and diff images; null for none.
export function maskedPanel(c) {
  const regions = c.masked_regions || [];
  if (!regions.length) return null;
  const section = h('section', { class: 'masked small', 'data-masked': String(regions.length) },
    h('strong', {}, `Masked as volatile (${regions.length})`),
    h('ul', {}, regions.map((r) => h('li', { 'data-selector': r.selector },
      h('code', {}, r.selector), ' ', h('span', { class: 'muted' },
        `${(r.kinds || []).join(', ')} · changed in ${r.changed_runs} of the last ${r.runs} runs (${pct(r.share)}) · ` +
        `${r.box.width} × ${r.box.height} px at ${r.box.x}, ${r.box.y}`)))));
  queueMicrotask(() => outlineMasked(c, section.closest('article'))); // once the comparison's article holds it
  return section;
}

// outlineMasked draws each masked region on the comparison's current and diff images.
function outlineMasked(c, article) {
  if (!article) return;
  const refs = [c.baseline, c.current, c.diff];
  article.querySelectorAll('.cmp-images figure').forEach((fig, i) => {
    const ref = refs[i];
    const holder = fig.querySelector('img')?.parentElement;
    if (i === 0 || !ref || !ref.width || !holder) return; // the regions are placed in the current capture
    holder.style.position = 'relative';
    holder.style.display = 'block';
    for (const r of c.masked_regions) {
      holder.append(boxOver(r.box, ref.width, ref.height, 'masked-box', 'border:2px dashed #2060d0;background:rgba(32,96,208,.12)',
        `masked: ${r.selector}`));
    }
  });
}

// volatilitySection is a suite's heat map per target and its suggestions.
export function volatilitySection(suite, ctx) {
  const body = h('div', { class: 'stack', id: 'volatility' });
  const mode = (suite.volatility && suite.volatility.mode) || 'off';
  const section = h('section', { class: 'stack', style: 'margin-top:20px' },
    h('h2', {}, 'Volatility'),
    h('p', { class: 'muted' }, `Mode ${mode}. Which elements changed by themselves over the last runs, and how often ` +
      '(the redder, the more often), drawn over the active baseline. ' +
      (mode === 'mask' ? 'Volatile ones are masked in comparisons and listed on each.' : 'Volatile ones are suggested as rules.')),
    body);
  (async () => {
    let v;
    let bases;
    try {
      [v, bases] = await Promise.all([
        api('GET', `/v1/suites/${encodeURIComponent(suite.id)}/volatility`, undefined, { signal: ctx.signal }),
        api('GET', `/v1/suites/${encodeURIComponent(suite.id)}/baselines`, undefined, { signal: ctx.signal }),
      ]);
    } catch (err) {
      fill(body, errorBox(err, 'Could not load the volatility'));
      return;
    }
    const regions = v.regions || [];
    if (!regions.length) {
      fill(body, h('p', { class: 'muted' }, `Nothing changed by itself in the last ${v.runs} runs.`));
      return;
    }
    fill(body, heatMaps(v, bases.baselines || []), suggestions(suite.id, v));
  })();
  return section;
}

// heatMaps draws, per target, viewport and segment, its regions over the
// active baseline's image, each filled by how often it changed.
function heatMaps(v, baselines) {
  const groups = new Map();
  for (const r of v.regions) {
    const k = `${r.target}\u0000${r.viewport}\u0000${r.segment || 1}`;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  const maps = [];
  for (const [k, rs] of groups) {
    const [target, viewport, segment] = k.split('\u0000');
    const b = baselines.find((x) => x.target === target && x.viewport === viewport && !x.checkpoint && String(x.segment) === segment);
    const holder = h('div', { style: 'position:relative' });
    const draw = (w, hgt) => holder.append(...rs.filter((r) => r.box).map((r) => boxOver(r.box, w, hgt, 'heat-box',
      `background:rgba(220,30,30,${(0.15 + 0.6 * r.share).toFixed(2)});border:1px solid rgba(160,0,0,.7)`,
      `${r.selector}: changed in ${r.changed_runs} of ${v.runs} runs`)));
    if (b && b.artifact_id) {
      const img = h('img', { src: artifactURL(b.artifact_id), alt: `baseline of ${target}`, style: 'display:block;width:100%;height:auto' });
      img.addEventListener('load', () => draw(img.naturalWidth, img.naturalHeight), { once: true });
      holder.append(img);
    } else { // no baseline image: the regions on a blank of their extent
      const w = Math.max(1, ...rs.map((r) => (r.box ? r.box.x + r.box.width : 1)));
      const hgt = Math.max(1, ...rs.map((r) => (r.box ? r.box.y + r.box.height : 1)));
      holder.append(h('div', { style: `aspect-ratio:${w}/${hgt};background:var(--code-bg)` }));
      draw(w, hgt);
    }
    maps.push(h('figure', { class: 'heat-map', 'data-target': target, 'data-viewport': viewport, style: 'margin:0;max-width:480px' },
      holder,
      h('figcaption', { class: 'small' }, `${target} · ${viewport} · segment ${segment}`),
      h('ul', { class: 'small' }, rs.map((r) => h('li', { 'data-selector': r.selector },
        h('code', {}, r.selector), ' ', `${r.changed_runs}/${v.runs} runs (${pct(r.share)})`, ' ',
        r.volatile ? badge('failed', 'volatile') : null,
        r.approved_runs ? h('span', { class: 'muted' }, ` · a change approved in ${r.approved_runs} run(s): real, never masked`) : null)))));
  }
  return h('div', { class: 'row', style: 'flex-wrap:wrap;gap:16px;align-items:flex-start' }, maps);
}

// suggestions lists the suggested rules, each accepted in one click.
function suggestions(suiteID, v) {
  const list = v.suggestions || [];
  if (!list.length) return null;
  return h('ul', { class: 'small' }, list.map((s) => {
    const status = h('span', { class: 'muted' });
    return h('li', {}, `Ignore `, h('code', {}, s.rule.selector), ` on ${s.rule.target}: would have suppressed ` +
      `${s.preview.would_suppress} of ${s.preview.changes} changes in the last ${s.preview.runs} runs `,
    h('button', {
      type: 'button', class: 'btn btn-small', onclick: async (ev) => {
        ev.currentTarget.disabled = true;
        try {
          await api('POST', `/v1/suites/${encodeURIComponent(suiteID)}/rules`, s.rule);
          status.textContent = ' rule saved; it applies from the next run';
        } catch (err) {
          fill(status, errorBox(err, 'Rule'));
        }
      },
    }, 'Accept'), status);
  }));
}
