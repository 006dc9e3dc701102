package capture

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rod/rod"
)

// area is the part of the document captured as if it were the page, in CSS px.
type area struct {
	X, Y          int
	Width, Height int
	element       bool // one element's box, not the page
}

// shootTarget captures the page, or only the element of req.Screenshot.Selector: its box
// (getBoundingClientRect plus the scroll offsets) cut into segments like a page. The job's
// budget (budget.go) starts from what res already holds: earlier screenshot actions' images.
func shootTarget(ctx context.Context, p *rod.Page, req Request, res *Result, callTimeout time.Duration) (shots, error) {
	sel := req.Screenshot.Selector
	b := newBudget(req.Limits, res)
	if sel == "" {
		height := res.PageHeight
		if req.Screenshot.Mode != ModeViewport {
			// vh-sized elements keep their height, an inner scroller shows all (fit.go).
			h, restore := fitPage(p, height, res, res.Stabilization == nil)
			defer restore()
			height = h
			res.PageHeight = h
		}
		return shoot(ctx, p, req, height, b, callTimeout)
	}
	start := time.Now()
	a, err := elementArea(p, sel)
	logStep(res, "screenshot.element", sel, start, err, fmt.Sprintf("%dx%d at %d,%d", a.Width, a.Height, a.X, a.Y))
	if err != nil {
		return shots{}, err
	}
	return shootArea(ctx, p, req, a, b, callTimeout) // an element too wide is refused before any capture
}

// elementArea measures the first element matching selector in document coordinates, rounded
// outwards to whole CSS px.
func elementArea(p *rod.Page, selector string) (area, error) {
	var box struct {
		State                    string
		Left, Top, Right, Bottom float64
	}
	err := evalJSON(p, `(() => {
		let el;
		try { el = document.querySelector(`+jsString(selector)+`); } catch (e) { return {state: "invalid"}; }
		if (!el) return {state: "missing"};
		const r = el.getBoundingClientRect();
		if (r.width <= 0 || r.height <= 0) return {state: "empty"};
		return {state: "ok", left: r.left + scrollX, top: r.top + scrollY, right: r.right + scrollX, bottom: r.bottom + scrollY};
	})()`, &box)
	if err != nil {
		return area{}, fmt.Errorf("measure element %q: %w", selector, err)
	}
	switch box.State {
	case "invalid":
		return area{}, newError(CodeInvalidSelector, false, nil, "%q is not a valid CSS selector", selector)
	case "missing":
		return area{}, newError(CodeSelectorNotFound, false, nil, "no element matches %q", selector)
	case "empty":
		return area{}, newError(CodeSelectorNotFound, false, nil, "the element %q has no size (not rendered)", selector)
	}
	x, y := int(max(box.Left, 0)), int(max(box.Top, 0))
	right, bottom := int(box.Right+0.999), int(box.Bottom+0.999)
	return area{X: x, Y: y, Width: max(right-x, 1), Height: max(bottom-y, 1), element: true}, nil
}
