package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// A session's snapshot is the page's accessibility tree as compact YAML-like text: one line
// per landmark, interactive or named element, with a ref (`e21`) for each interactive or
// named one. The walk runs in an isolated world of its own, so the page's scripts never see
// the refs (no attribute is written to the DOM): the world keeps a map from element to ref,
// so an element keeps its ref across snapshots of one document, and numbers are never
// reused within a session. A navigation destroys the world, and with it every ref.

// worldName is the session's isolated world.
const worldName = "snapq-session"

// refSet is the refs of the latest snapshot and the world they live in.
type refSet struct {
	world proto.RuntimeExecutionContextID
	frame proto.PageFrameID
	refs  map[string]bool
	next  int // the first number the next new element gets
}

// clear forgets the refs (a navigation, another tab); numbers go on.
func (r *refSet) clear() { r.world, r.frame, r.refs = 0, "", nil }

// refPattern is what a ref looks like; anything else is a CSS selector.
var refPattern = regexp.MustCompile(`^e[0-9]{1,9}$`)

// IsRef reports whether target is a ref rather than a CSS selector.
func IsRef(target string) bool { return refPattern.MatchString(target) }

// snapshotJS walks the document and returns {text, refs, next}.
const snapshotJS = `(start, maxLines) => {
  const W = globalThis.__snapq || (globalThis.__snapq = {ids: new WeakMap(), els: new Map(), next: start});
  if (W.next < start) W.next = start;
  const INTERACTIVE = 'a[href],button,input,select,textarea,summary,[role=button],[role=link],[role=checkbox],[role=radio],[role=tab],[role=menuitem],[role=option],[role=switch],[role=textbox],[role=combobox],[contenteditable=""],[contenteditable=true],[onclick]';
  const TAGS = {a: 'link', button: 'button', textarea: 'textbox', h1: 'heading', h2: 'heading', h3: 'heading', h4: 'heading', h5: 'heading', h6: 'heading', img: 'img', nav: 'navigation', main: 'main', form: 'form', ul: 'list', ol: 'list', li: 'listitem', table: 'table', tr: 'row', dialog: 'dialog', header: 'banner', footer: 'contentinfo', summary: 'button', iframe: 'iframe', p: 'paragraph', label: 'label'};
  const INPUTS = {checkbox: 'checkbox', radio: 'radio', submit: 'button', button: 'button', reset: 'button', image: 'button', range: 'slider', search: 'searchbox', number: 'spinbutton'};
  const CONTAINERS = new Set(['navigation', 'main', 'form', 'list', 'listitem', 'table', 'row', 'dialog', 'banner', 'contentinfo']);
  const clip = (s, n) => { s = (s || '').replace(/\s+/g, ' ').trim(); return s.length > n ? s.slice(0, n - 1) + '…' : s; };
  const role = el => {
    const r = el.getAttribute('role'); if (r) return r;
    const t = el.tagName.toLowerCase();
    if (t === 'input') return INPUTS[(el.type || 'text').toLowerCase()] || 'textbox';
    if (t === 'select') return el.multiple ? 'listbox' : 'combobox';
    if (t === 'a' && !el.hasAttribute('href')) return '';
    return TAGS[t] || '';
  };
  const name = (el, r) => {
    const a = el.getAttribute('aria-label'); if (a) return clip(a, 80);
    const by = el.getAttribute('aria-labelledby');
    if (by) { const n = by.split(/\s+/).map(id => { const e = document.getElementById(id); return e ? e.innerText : ''; }).join(' '); if (n.trim()) return clip(n, 80); }
    if (el.labels && el.labels.length) return clip(el.labels[0].innerText, 80);
    if (r === 'img') return clip(el.alt || el.title, 80);
    if (el.tagName === 'INPUT' && ['submit', 'button', 'reset'].includes(el.type)) return clip(el.value, 80);
    if (['textbox', 'searchbox', 'combobox', 'spinbutton', 'listbox', 'checkbox', 'radio', 'slider'].includes(r)) return clip(el.placeholder || el.title || el.name, 80);
    if (CONTAINERS.has(r) || r === 'paragraph') return '';
    return clip(el.innerText || el.textContent || el.title, 80);
  };
  const shown = el => { const s = getComputedStyle(el); if (s.display === 'none' || s.visibility === 'hidden') return false; const b = el.getBoundingClientRect(); return b.width > 0 || b.height > 0 || s.display === 'contents'; };
  const props = (el, r) => {
    const p = [];
    if (r === 'heading') p.push('level=' + el.tagName.slice(1));
    if (el.disabled) p.push('disabled');
    if ((r === 'checkbox' || r === 'radio') && el.checked) p.push('checked');
    if (['textbox', 'searchbox', 'spinbutton'].includes(r) && el.value) p.push(el.type === 'password' ? 'value=••••' : 'value=' + JSON.stringify(clip(el.value, 60)));
    if (r === 'combobox' && el.selectedOptions && el.selectedOptions.length) p.push('selected=' + JSON.stringify(clip(el.selectedOptions[0].text, 60)));
    if (r === 'link' && el.getAttribute('href')) p.push('url=' + clip(el.getAttribute('href'), 100));
    return p.map(x => ' [' + x + ']').join('');
  };
  const lines = [], refs = [];
  const refOf = el => { let id = W.ids.get(el); if (!id) { id = 'e' + (W.next++); W.ids.set(el, id); } W.els.set(id, el); refs.push(id); return id; };
  const ownText = el => Array.from(el.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join(' ');
  const walk = (el, depth) => {
    for (const c of el.children) {
      if (lines.length >= maxLines) return;
      if (['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD'].includes(c.tagName) || !shown(c)) continue;
      const r = role(c), pad = '  '.repeat(depth);
      const interactive = c.matches(INTERACTIVE), n = name(c, r);
      if (interactive || ((r === 'heading' || r === 'img' || r === 'iframe') && n)) {
        lines.push(pad + '- ' + (r || c.tagName.toLowerCase()) + (n ? ' ' + JSON.stringify(n) : '') + props(c, r) + ' [ref=' + refOf(c) + ']');
        if (c.tagName === 'SELECT') { for (const o of c.options) lines.push(pad + '  - option ' + JSON.stringify(clip(o.text, 60))); }
        else if (!['A', 'BUTTON', 'IFRAME'].includes(c.tagName) && r !== 'heading') walk(c, depth + 1);
        continue;
      }
      const text = clip(ownText(c), 200);
      if (CONTAINERS.has(r)) { lines.push(pad + '- ' + r + ':' + (text ? ' ' + JSON.stringify(text) : '')); walk(c, depth + 1); continue; }
      if (text) lines.push(pad + '- text: ' + JSON.stringify(text));
      walk(c, depth);
    }
  };
  walk(document.body || document.documentElement, 0);
  if (lines.length >= maxLines) lines.push('- … (snapshot cut at ' + maxLines + ' lines)');
  return {text: lines.join('\n'), refs, next: W.next};
}`

// maxSnapshotLines bounds a snapshot's walk; the reply cap bounds its bytes.
const maxSnapshotLines = 4000

// Snapshot returns the current page's snapshot; its refs replace the previous snapshot's.
func (s *Session) Snapshot(ctx context.Context) (string, error) {
	var text string
	err := s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		var out struct {
			Text string   `json:"text"`
			Refs []string `json:"refs"`
			Next int      `json:"next"`
		}
		if err := s.inWorld(ctx, p, snapshotJS, []any{s.refs.next + 1, maxSnapshotLines}, &out); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		s.refs.refs = make(map[string]bool, len(out.Refs))
		for _, r := range out.Refs {
			s.refs.refs[r] = true
		}
		s.refs.next = max(s.refs.next, out.Next-1)
		text = out.Text
		return nil
	})
	return text, err
}

// world returns the isolated world of the current page's document, making one when the
// document has none yet (a new document has lost the refs: they are cleared).
func (s *Session) world(ctx context.Context, p *rod.Page) (proto.RuntimeExecutionContextID, error) {
	frame := p.FrameID
	if s.refs.world != 0 && s.refs.frame == frame {
		// Still this document's? A world of a replaced document is gone.
		_, err := proto.RuntimeEvaluate{Expression: "1", ContextID: s.refs.world}.Call(p)
		if err == nil {
			return s.refs.world, nil
		}
	}
	s.refs.clear()
	w, err := proto.PageCreateIsolatedWorld{FrameID: frame, WorldName: worldName}.Call(p)
	if err != nil {
		return 0, fmt.Errorf("create isolated world: %w", err)
	}
	s.refs.world, s.refs.frame = w.ExecutionContextID, frame
	return w.ExecutionContextID, nil
}

// inWorld calls the function fn with args in the session's world and decodes its value.
func (s *Session) inWorld(ctx context.Context, p *rod.Page, fn string, args []any, out any) error {
	world, err := s.world(ctx, p)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	res, err := proto.RuntimeEvaluate{Expression: "(" + fn + ")(..." + string(raw) + ")", ContextID: world,
		ReturnByValue: true, AwaitPromise: true}.Call(p)
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return exceptionError(exceptionText(res.ExceptionDetails))
	}
	return json.Unmarshal([]byte(res.Result.Value.JSON("", "")), out)
}

// element finds target on the current page: a ref of the latest snapshot (ErrStaleRef when
// it is not one, or its element left the page) or a CSS selector (waited for up to
// findTimeout).
func (s *Session) element(ctx context.Context, p *rod.Page, target string) (*rod.Element, error) {
	if !IsRef(target) {
		return findElement(ctx, p, target, findTimeout)
	}
	if !s.refs.refs[target] || s.refs.frame != p.FrameID {
		return nil, fmt.Errorf("%w: %s is not a ref of the latest snapshot", ErrStaleRef, target)
	}
	world := s.refs.world
	res, err := proto.RuntimeEvaluate{ContextID: world,
		Expression: `(r => { const W = globalThis.__snapq; const e = W && W.els.get(r); return e && e.isConnected ? e : null; })(` +
			fmt.Sprintf("%q", target) + `)`}.Call(p)
	if err != nil || res.ExceptionDetails != nil || res.Result.ObjectID == "" {
		// The world went with its document (a navigation): every ref of it is stale.
		return nil, fmt.Errorf("%w: %s is gone from the page (it changed since the snapshot)", ErrStaleRef, target)
	}
	return p.ElementFromObject(res.Result)
}
