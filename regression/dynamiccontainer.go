package regression

import "github.com/snapq/snapq/capture"

// dynamicContainer returns the first dynamic_text rule that, with the
// others, suppresses a text change attributed to an element that holds
// dynamic_text elements rather than to one of them, or nil. It is the case
// of a relative time or a counter inside a line of text: when its width
// changes ("9 minutes ago" → "10 minutes ago") the words after it shift, so
// the changed pixels leave its own box and the change goes to the line
// (`div.meta`: "Published 9 minutes ago · 1,204 reading").
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
	b, a := ch.Before, ch.After
	if b.Box != a.Box || b.Text == a.Text || !rectImage(ch.Box).In(rectImage(b.Box).Inset(-maskSlackPx)) {
		return nil
	}
	bt, at := b.Text, a.Text
	var first *Rule
	for i, r := range rs.rules {
		re := r.pattern()
		if r.Kind != RuleDynamicText || re == nil || !rs.ok[i] || !rs.inside(base, i, b.Box) || !rs.inside(cur, i, a.Box) {
			continue
		}
		nb, na := re.ReplaceAllString(bt, dynamicPlaceholder), re.ReplaceAllString(at, dynamicPlaceholder)
		if nb == bt && na == at {
			continue // its pattern is not in this line
		}
		bt, at = nb, na
		if first == nil {
			first = r
		}
	}
	if first == nil || bt != at {
		return nil
	}
	return first
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
