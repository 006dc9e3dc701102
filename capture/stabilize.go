package capture

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-rod/rod"
)

// Stabilization (Request.Stabilize > 1): a visual-regression capture is
// retaken until two consecutive captures are byte-identical, at most
// Request.Stabilize times, so a page still settling (a late font swap, an
// image decoding, a carousel) does not fail a comparison by itself. A page
// that never settles keeps its last capture and says so in WaitErrors.

// Stabilization reports what stabilization did.
type Stabilization struct {
	Captures int  `json:"captures"` // screenshots taken
	Stable   bool `json:"stable"`   // the last two matched
}

// stabilizeSettle is the pause between two captures of a stabilization.
const stabilizeSettle = 150 * time.Millisecond

// shootStable is shootTarget, retaken under Request.Stabilize.
// With Request.MaskSelectors and Request.BoxTree it measures the page before
// every capture and keeps the measurements of the capture it keeps: an
// element that appears during the retakes (a late ad, a modal) is masked and
// explained as the kept screenshot shows it (issue 30).
//
// The shots it returns carry the screenshot calls of every capture it took.
func shootStable(ctx context.Context, p *rod.Page, req Request, res *Result, callTimeout time.Duration) (s shots, err error) {
	m, err := measurePage(p, req, res)
	if err != nil {
		return shots{}, err
	}
	m.apply(res)
	prev, err := shootTarget(ctx, p, req, res, callTimeout)
	if err != nil || req.Stabilize <= 1 {
		return prev, err
	}
	calls := prev.calls
	defer func() { s.calls = calls }()
	start := time.Now()
	st := &Stabilization{Captures: 1}
	res.Stabilization = st
	for st.Captures < req.Stabilize {
		select {
		case <-ctx.Done():
			return prev, nil // the budget is spent: keep the capture we have
		case <-time.After(stabilizeSettle):
		}
		cm, err := measurePage(p, req, res)
		if err != nil {
			return prev, nil
		}
		cur, err := shootTarget(ctx, p, req, res, callTimeout)
		if err != nil {
			return prev, nil
		}
		calls = append(calls, cur.calls...)
		st.Captures++
		cm.apply(res)
		if sameShots(prev, cur) {
			st.Stable = true
			logStep(res, "stabilize", "", start, nil, fmt.Sprintf("stable after %d captures", st.Captures))
			return cur, nil
		}
		prev = cur
	}
	msg := fmt.Sprintf("stabilize: the page still changed after %d captures", st.Captures)
	res.WaitErrors = append(res.WaitErrors, msg)
	logStep(res, "stabilize", "", start, nil, msg)
	return prev, nil
}

// measured is what measurePage recorded before one capture.
type measured struct {
	masks    []Box
	hasMasks bool
	tree     *BoxTree
}

// apply makes m the result's measurements.
func (m measured) apply(res *Result) {
	if m.hasMasks {
		res.Masks = m.masks
	}
	if m.tree != nil {
		res.BoxTree = m.tree
	}
}

// measurePage records the boxes of Request.MaskSelectors and the box tree,
// as asked. Only a mask that cannot be measured is an error: no tree only
// means no explanation of the changes.
func measurePage(p *rod.Page, req Request, res *Result) (measured, error) {
	var m measured
	if len(req.MaskSelectors) > 0 {
		start := time.Now()
		boxes, err := measureMasks(p, req.MaskSelectors)
		logStep(res, "mask", strings.Join(req.MaskSelectors, ", "), start, err, fmt.Sprintf("%d boxes", len(boxes)))
		if err != nil {
			return m, err
		}
		m.masks, m.hasMasks = boxes, true
	}
	if req.BoxTree {
		start := time.Now()
		t, err := measureBoxTree(p)
		detail := ""
		if t != nil {
			detail = fmt.Sprintf("%d elements", len(t.Elements))
		}
		logStep(res, "box_tree", "", start, err, detail)
		if err == nil {
			m.tree = t
		}
	}
	return m, nil
}

// sameShots reports whether two captures hold the same images.
func sameShots(a, b shots) bool {
	if len(a.images) != len(b.images) {
		return false
	}
	for i := range a.images {
		if !bytes.Equal(a.images[i].Data, b.images[i].Data) {
			return false
		}
	}
	return true
}

// Box is an element's box in document coordinates, CSS pixels.
type Box struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// maxMaskBoxes bounds the boxes one job reports for Request.MaskSelectors.
const maxMaskBoxes = 500

// measureMasks returns the boxes of the elements matching selectors, as laid
// out for the screenshot, so a comparison can leave them out. An invalid or
// unmatched selector masks nothing.
func measureMasks(p *rod.Page, selectors []string) ([]Box, error) {
	var boxes []Box
	err := evalJSON(p, `(() => {
		const out = [];
		for (const sel of `+jsStrings(selectors)+`) {
			let els = [];
			try { els = document.querySelectorAll(sel); } catch (e) { continue; }
			for (const el of els) {
				const r = el.getBoundingClientRect();
				if (r.width <= 0 || r.height <= 0) continue;
				const x = Math.max(0, Math.floor(r.left + scrollX)), y = Math.max(0, Math.floor(r.top + scrollY));
				out.push({x, y, width: Math.ceil(r.right + scrollX) - x, height: Math.ceil(r.bottom + scrollY) - y});
				if (out.length >= `+fmt.Sprint(maxMaskBoxes)+`) return out;
			}
		}
		return out;
	})()`, &boxes)
	if err != nil {
		return nil, fmt.Errorf("measure mask selectors: %w", err)
	}
	return boxes, nil
}

// jsStrings renders a JavaScript array literal of strings.
func jsStrings(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = jsString(s)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
