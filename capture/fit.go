package capture

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-rod/rod"
)

// Fitting the page to a full or segment capture. Such a capture lays the whole document out
// at once (captureBeyondViewport grows the viewport to the clip), which breaks two kinds of
// real pages:
//
//   - Viewport-sized elements: a hero of height: 100vh stretches to the capture's height
//     (go-rod/rod#1008). Every element whose height, min-height or max-height is given in
//     viewport units (vh, svh, lvh, dvh, vmin, vmax) in a readable style sheet or its style
//     attribute is pinned to its computed px value at the real viewport first.
//   - App shells: the document does not scroll, an inner element does (height: 100vh;
//     overflow: auto), so the "full page" is one screen. The largest such scroller (at least
//     half the viewport each way) is expanded to its scrollHeight with overflow visible, its
//     ancestors let grow with it, and the capture covers the document that results.
//
// Both edits are inline styles with !important, undone after the capture (restoreFitJS), so
// later outputs (html, pdf) see the page as it was.

// fitJS pins vh-sized elements and expands an inner scroller. It resolves to what it did.
const fitJS = `(() => {
	const saved = [];
	const save = el => {
		if (el.hasAttribute("data-snapq-fit")) return;
		el.setAttribute("data-snapq-fit", el.hasAttribute("style") ? "s" + el.getAttribute("style") : "n");
		saved.push(el);
	};
	const set = (el, prop, value) => { save(el); el.style.setProperty(prop, value, "important"); };
	const props = ["height", "min-height", "max-height"];
	const vw = /\d\s*(s|l|d)?(vh|vmin|vmax)\b/i;
	const pins = new Map();
	const mark = (el, ps) => { const s = pins.get(el) || new Set(); ps.forEach(p => s.add(p)); pins.set(el, s); };
	const visit = rules => {
		for (const r of rules) {
			if (r.selectorText && r.style) {
				const ps = props.filter(p => vw.test(r.style.getPropertyValue(p)));
				if (ps.length) { let els = []; try { els = document.querySelectorAll(r.selectorText); } catch (e) {} els.forEach(el => mark(el, ps)); }
			}
			let inner = null;
			try { inner = r.cssRules; } catch (e) {}
			if (inner && inner.length) visit(inner);
		}
	};
	for (const sh of Array.from(document.styleSheets)) {
		let rules = null;
		try { rules = sh.cssRules; } catch (e) { continue; } // a cross-origin sheet cannot be read
		if (rules) visit(rules);
	}
	for (const el of document.querySelectorAll("[style]")) {
		const ps = props.filter(p => vw.test(el.style.getPropertyValue(p)));
		if (ps.length) mark(el, ps);
	}
	const values = [];
	for (const [el, ps] of pins) {
		const cs = getComputedStyle(el);
		if (cs.display === "none") continue;
		for (const p of ps) {
			const v = p === "height" ? el.getBoundingClientRect().height + "px" : cs.getPropertyValue(p);
			values.push([el, p, v]);
		}
	}
	// Set after reading them all: a pinned element must not change another's reading.
	for (const [el, p, v] of values) {
		set(el, p, v);
		if (p === "height") set(el, "box-sizing", "border-box");
	}
	const docHeight = () => Math.max(document.documentElement ? document.documentElement.scrollHeight : 0,
		document.body ? document.body.scrollHeight : 0);
	let scroller = null;
	if (docHeight() <= innerHeight + 1) {
		let best = 0;
		for (const el of document.querySelectorAll("*")) {
			if (el.scrollHeight <= el.clientHeight + 1) continue;
			if (el.clientHeight < innerHeight / 2 || el.clientWidth < innerWidth / 2) continue;
			const oy = getComputedStyle(el).overflowY;
			if (oy !== "auto" && oy !== "scroll" && oy !== "overlay") continue;
			const a = el.clientWidth * el.clientHeight;
			if (a > best) { best = a; scroller = el; }
		}
	}
	let desc = "";
	if (scroller) {
		const h = scroller.scrollHeight;
		scroller.scrollTop = 0;
		const cs = getComputedStyle(scroller);
		const extra = cs.boxSizing === "border-box" ? (scroller.offsetHeight - scroller.clientHeight) : 0;
		set(scroller, "height", (h + extra) + "px");
		set(scroller, "max-height", "none");
		set(scroller, "overflow", "visible");
		set(scroller, "flex", "none");
		for (let a = scroller.parentElement; a; a = a.parentElement) {
			set(a, "height", "auto");
			set(a, "max-height", "none");
			set(a, "overflow", "visible");
			if (getComputedStyle(a).position === "fixed") { set(a, "position", "absolute"); set(a, "bottom", "auto"); }
		}
		desc = scroller.tagName.toLowerCase() + (scroller.id ? "#" + scroller.id : "") + " " + h + " px";
	}
	return {pinned: values.length, scroller: desc, height: docHeight()};
})()`

// restoreFitJS undoes fitJS.
const restoreFitJS = `(() => {
	const els = document.querySelectorAll("[data-snapq-fit]");
	for (const el of els) {
		const v = el.getAttribute("data-snapq-fit");
		if (v === "n") el.removeAttribute("style"); else el.setAttribute("style", v.slice(1));
		el.removeAttribute("data-snapq-fit");
	}
	return els.length;
})()`

// fitPage prepares the page for a full or segment capture (see above) and returns the
// document's height afterwards and a function that undoes the edits. On failure the page
// is captured as it is: height is what it was and restore does nothing.
func fitPage(p *rod.Page, height int, res *Result, logIt bool) (int, func()) {
	start := time.Now()
	var out struct {
		Pinned   int    `json:"pinned"`
		Scroller string `json:"scroller"`
		Height   int    `json:"height"`
	}
	err := evalJSON(p, fitJS, &out)
	restore := func() { _ = evalJSON(p, restoreFitJS, new(int)) }
	if err != nil {
		restore()
		logStep(res, "fit", "", start, err, "")
		return height, func() {}
	}
	var parts []string
	if out.Pinned > 0 {
		parts = append(parts, fmt.Sprintf("%d viewport-unit sizes pinned", out.Pinned))
	}
	if out.Scroller != "" {
		parts = append(parts, "inner scroller "+out.Scroller+" expanded")
	}
	if logIt && len(parts) > 0 {
		logStep(res, "fit", "", start, nil, strings.Join(parts, "; ")+fmt.Sprintf("; page %d px", out.Height))
	}
	if out.Scroller != "" {
		height = out.Height
	}
	return height, restore
}
