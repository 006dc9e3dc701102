package capture

import (
	"fmt"
	"time"

	"github.com/go-rod/rod"
)

// The box tree (Request.BoxTree): during a regression capture, in the same
// page load as its screenshot, the visible elements are recorded with a
// stable selector, their border box, their text and a few computed styles,
// so a comparison can say which element changed and how (regression's
// attribution). The page is untrusted: the walk stops at MaxBoxTreeElements
// elements, after boxTreeBudget of script time, and texts are capped.

const (
	// MaxBoxTreeElements bounds the elements one capture records.
	MaxBoxTreeElements = 5000
	// MaxElementText bounds the text kept per element (its hash covers more).
	MaxElementText = 200
	// maxBoxTreeText bounds the text kept over all elements; past it, texts
	// are dropped and only their hashes kept.
	maxBoxTreeText = 300_000
	// MaxBoxTreeBytes bounds a stored tree's size, about (its JSON): the walk
	// stops past it.
	MaxBoxTreeBytes = 768 << 10
	// boxTreeBudget bounds the script's walk of the document.
	boxTreeBudget = 1500 * time.Millisecond
)

// BoxTree is the recorded elements of a page, in document order.
type BoxTree struct {
	Elements []Element `json:"e"`
	// Truncated: the walk stopped at MaxBoxTreeElements or its time budget.
	Truncated bool `json:"truncated,omitempty"`
}

// Element is one visible element of a box tree. Boxes are border boxes in
// page coordinates, CSS pixels (a comparison scales them by the device scale
// factor). The short JSON names keep a stored tree small.
type Element struct {
	// Selector is stable across captures: [data-testid="…"], then #id, then
	// role=<role>[name="<accessible name>"], then a short CSS path.
	Selector string `json:"s"`
	// Path is the element's short CSS path, recorded for every element: it
	// pairs an element whose text-derived role name changed with its text.
	Path    string `json:"pa,omitempty"`
	Tag     string `json:"t"`
	ID      string `json:"id,omitempty"`
	Classes string `json:"c,omitempty"`
	TestID  string `json:"d,omitempty"`
	Role    string `json:"r,omitempty"`
	Name    string `json:"n,omitempty"`
	// Parent is the index of the nearest recorded ancestor, -1 for none.
	Parent int `json:"p"`
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"w"`
	Height int `json:"h"`
	// Text is the trimmed, whitespace-collapsed text content, at most
	// MaxElementText characters; TextHash covers the text before the cap.
	Text     string `json:"tx,omitempty"`
	TextHash string `json:"th,omitempty"`
	// Style holds the computed font, colour, background and background image;
	// StyleHash covers them and the box size.
	Style     Style  `json:"st"`
	StyleHash string `json:"sh"`
	// Image: an img, picture, canvas, svg or video, or a background image.
	Image bool `json:"img,omitempty"`
}

// Style is the few computed styles an element is compared by.
type Style struct {
	Font       string `json:"f,omitempty"`
	Color      string `json:"c,omitempty"`
	Background string `json:"b,omitempty"`
	BgImage    string `json:"bi,omitempty"`
}

// measureBoxTree records the page's box tree (see BoxTree).
func measureBoxTree(p *rod.Page) (*BoxTree, error) {
	var t BoxTree
	err := evalJSON(p, fmt.Sprintf(boxTreeJS, MaxBoxTreeElements, boxTreeBudget.Milliseconds(), MaxElementText, maxBoxTreeText, MaxBoxTreeBytes), &t)
	if err != nil {
		return nil, fmt.Errorf("measure box tree: %w", err)
	}
	return &t, nil
}

// boxTreeJS walks the document (see BoxTree); its arguments are the element
// cap, the time budget in ms, the per-element and the total text caps, the
// size cap.
const boxTreeJS = `(() => {
	const MAX = %d, deadline = performance.now() + %d, TEXT = %d;
	let textLeft = %d, bytes = 0;
	const MAXBYTES = %d;
	const out = [], index = new Map();
	let truncated = false;
	const sx = scrollX, sy = scrollY;
	const hash = (s) => { let h = 0x811c9dc5; for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); } return (h >>> 0).toString(16).padStart(8, "0"); };
	const norm = (s) => (s || "").slice(0, 20000).replace(/\s+/g, " ").trim();
	const q = (s) => '"' + s.replace(/["\\]/g, "\\$&") + '"';
	const implicit = (el) => {
		const t = el.localName;
		if (t === "button") return "button";
		if (t === "a" && el.hasAttribute("href")) return "link";
		if (/^h[1-6]$/.test(t)) return "heading";
		if (t === "img") return "img";
		if (t === "nav") return "navigation";
		if (t === "input" && /^(button|submit|reset)$/.test(el.type)) return "button";
		return "";
	};
	const ids = new Map();
	for (const e of document.querySelectorAll("[id]")) ids.set(e.id, (ids.get(e.id) || 0) + 1);
	// nth-of-type per parent, counted once per parent: a wide parent is not quadratic.
	const sib = new Map();
	const nth = (par, el) => {
		if (!sib.has(par)) {
			const counts = new Map(), pos = new Map();
			for (const c of par.children) { const k = (counts.get(c.localName) || 0) + 1; counts.set(c.localName, k); pos.set(c, k); }
			sib.set(par, {counts, pos});
		}
		const s = sib.get(par);
		return {i: s.pos.get(el), of: s.counts.get(el.localName)};
	};
	const path = (el) => {
		const parts = [];
		let cur = el;
		while (cur && cur !== document.body && cur !== document.documentElement && parts.length < 8) {
			if (cur !== el && cur.id && ids.get(cur.id) === 1) { parts.unshift("#" + CSS.escape(cur.id)); return parts.join(" > "); }
			let part = cur.localName;
			const cls = (cur.getAttribute("class") || "").trim().split(/\s+/)[0];
			if (cls) part += "." + CSS.escape(cls);
			const par = cur.parentElement;
			if (par) {
				const n = nth(par, cur);
				if (n.of > 1) part += ":nth-of-type(" + n.i + ")";
			}
			parts.unshift(part);
			cur = par;
		}
		if (cur === document.body) parts.unshift("body");
		return parts.join(" > ");
	};
	const roles = new Map();
	const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_ELEMENT);
	for (let el = walker.currentNode; el; el = walker.nextNode()) {
		if (out.length >= MAX || bytes > MAXBYTES || performance.now() > deadline) { truncated = true; break; }
		const r = el.getBoundingClientRect();
		if (r.width <= 0 || r.height <= 0) continue;
		const cs = getComputedStyle(el);
		if (cs.visibility === "hidden" || cs.opacity === "0") continue;
		let p = el.parentElement, parent = -1;
		while (p) { if (index.has(p)) { parent = index.get(p); break; } p = p.parentElement; }
		const tag = el.localName;
		const full = norm(el.textContent);
		let text = full.slice(0, TEXT);
		if (textLeft <= 0) text = ""; else textLeft -= text.length;
		const role = el.getAttribute("role") || implicit(el);
		let name = (el.getAttribute("aria-label") || (tag === "img" ? el.getAttribute("alt") : "") || "").trim();
		if (!name && (role === "button" || role === "link" || role === "heading")) name = full;
		name = name.slice(0, 60);
		const bi = cs.backgroundImage === "none" ? "" : cs.backgroundImage.slice(0, 120);
		const st = {f: (cs.fontStyle + " " + cs.fontWeight + " " + cs.fontSize + " " + cs.fontFamily).slice(0, 120), c: cs.color, b: cs.backgroundColor, bi};
		const x = Math.max(0, Math.floor(r.left + sx)), y = Math.max(0, Math.floor(r.top + sy));
		const w = Math.ceil(r.right + sx) - x, h = Math.ceil(r.bottom + sy) - y;
		const testid = el.getAttribute("data-testid") || "";
		let sel;
		if (testid) sel = "[data-testid=" + q(testid) + "]";
		else if (el.id && ids.get(el.id) === 1) sel = "#" + CSS.escape(el.id);
		else if (role && name) { sel = "role=" + role + "[name=" + q(name) + "]"; roles.set(sel, (roles.get(sel) || 0) + 1); }
		else sel = path(el);
		index.set(el, out.length);
		const pa = sel.startsWith("body") ? undefined : path(el);
		bytes += 150 + sel.length + (pa ? pa.length : 0) + text.length + st.f.length + bi.length;
		out.push({s: sel, pa, t: tag, id: el.id || undefined, c: (el.getAttribute("class") || "").slice(0, 120) || undefined, d: testid || undefined,
			r: role || undefined, n: name || undefined, p: parent, x, y, w, h, tx: text || undefined, th: full ? hash(full) : undefined,
			st, sh: hash([st.f, st.c, st.b, st.bi, w, h].join("|")),
			img: /^(img|picture|canvas|svg|video)$/.test(tag) || bi.startsWith("url(") || undefined, _el: el});
	}
	for (const e of out) {
		if (roles.get(e.s) > 1) { e.s = path(e._el); e.pa = undefined; } // a role and name many elements share is no stable name
		delete e._el;
	}
	return {e: out, truncated};
})()`
