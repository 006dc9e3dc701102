package regression

import (
	"slices"
	"strings"

	"github.com/snapq/snapq/capture"
)

// dynamicContainer returns the first dynamic_text rule that, with the
// others, suppresses a text change attributed to an element that holds
// dynamic_text elements rather than to one of them, or nil. It is the case
// of a relative time or a counter inside a line of text: when its width
// changes ("9 minutes ago" → "10 minutes ago") the words after it shift, so
// the changed pixels leave its own box and the change goes to the line
// (`div.meta`: "Published 9 minutes ago · 1,204 reading").
//
// The change may also go to the time itself, its pixels spilling over the
// words it shifted: then the line is its parent (dynamicLine).
//
// The change is suppressed only when the line kept its box in both captures
// (same place and size: the layout around it did not move), the changed
// pixels lie inside that box, the rules apply to elements inside it in both
// captures (base, cur: the box trees), and the line's two texts are equal
// once every match of those rules' patterns is replaced — so any other
// word of the line that changed still counts.
func (rs *ruleSet) dynamicContainer(ch Change, base, cur *capture.BoxTree) *Rule {
	if ch.Kind != ChangeText || ch.Before == nil || ch.After == nil || base == nil || cur == nil {
		return nil
	}
	l, ok := rs.dynamicLine(ch, base, cur)
	if !ok || l.bt == l.at || !rectImage(ch.Box).In(rectImage(l.before).Inset(-maskSlackPx)) {
		return nil
	}
	var first *Rule
	for i, r := range rs.rules {
		re := r.pattern()
		if r.Kind != RuleDynamicText || re == nil || !rs.ok[i] || !rs.inside(base, i, l.before) || !rs.inside(cur, i, l.after) {
			continue
		}
		nb, na := re.ReplaceAllString(l.bt, dynamicPlaceholder), re.ReplaceAllString(l.at, dynamicPlaceholder)
		if nb == l.bt && na == l.at {
			continue // its pattern is not in this line
		}
		l.bt, l.at = nb, na
		if first == nil {
			first = r
		}
	}
	if first == nil || l.bt != l.at {
		return nil
	}
	return first
}

// textLine is the line of text a dynamic_text change is judged in: its box
// (the same in both captures) and its two texts.
type textLine struct {
	before, after Rect
	bt, at        string
}

// dynamicLine is the line a text change is judged in: the changed element
// itself when it kept its box (the change went to the line), or else, when
// the changed element is a dynamic_text rule's whose width alone changed
// (same top and height, one edge kept), its parent if that kept its box (the
// change went to the time itself, and its pixels spill over the words it
// shifted), with the parent's texts read from the box trees.
func (rs *ruleSet) dynamicLine(ch Change, base, cur *capture.BoxTree) (textLine, bool) {
	b, a := ch.Before, ch.After
	if b.Box == a.Box {
		return textLine{b.Box, a.Box, b.Text, a.Text}, true
	}
	bb, ab := b.Box, a.Box
	if bb.Y != ab.Y || bb.Height != ab.Height || (bb.X != ab.X && bb.X+bb.Width != ab.X+ab.Width) {
		return textLine{}, false
	}
	if b.Container == nil || a.Container == nil || *b.Container != *a.Container || !rs.dynamicElement(base, cur, bb, ab) {
		return textLine{}, false
	}
	bt, okb := textOf(base, *b.Container, b.Text)
	at, oka := textOf(cur, *a.Container, a.Text)
	return textLine{*b.Container, *a.Container, bt, at}, okb && oka
}

// textOf is the text of t's element at box that holds inner.
func textOf(t *capture.BoxTree, box Rect, inner string) (string, bool) {
	for _, e := range t.Elements {
		if e.X == box.X && e.Y == box.Y && e.Width == box.Width && e.Height == box.Height && strings.Contains(e.Text, inner) {
			return e.Text, true
		}
	}
	return "", false
}

// inside reports whether rule i matches an element of t within box (and
// not box itself: the container is another element).
func (rs *ruleSet) inside(t *capture.BoxTree, i int, box Rect) bool {
	outer := rectImage(box).Inset(-maskSlackPx)
	for _, r := range rs.boxes(t, i) {
		if r != box && r.Width > 0 && r.Height > 0 && rectImage(r).In(outer) {
			return true
		}
	}
	return false
}

// dynamicElement reports whether a dynamic_text rule matches the element at
// box b in base and at box a in cur.
func (rs *ruleSet) dynamicElement(base, cur *capture.BoxTree, b, a Rect) bool {
	for i, r := range rs.rules {
		if r.Kind == RuleDynamicText && rs.ok[i] && slices.Contains(rs.boxes(base, i), b) && slices.Contains(rs.boxes(cur, i), a) {
			return true
		}
	}
	return false
}
