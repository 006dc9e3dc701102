package regression

import (
	"image"
	"testing"

	"github.com/snapq/snapq/capture"
)

// A relative time and a counter inside one line of text: when the time's
// width changes ("9 minutes ago" → "10 minutes ago") the words after it
// shift, the change is attributed to the line, and the rules of the two
// spans suppress it together — unless another word of the line changed, the
// line's box moved, or the changed pixels left it (issue 30: the noise
// bench's meta line failed every run once the time reached two digits).
func TestDynamicTextInsideALine(t *testing.T) {
	t.Parallel()
	line := func(ago, readers, verb string, lineW, agoW int) *capture.BoxTree {
		text := "Published " + ago + " · " + readers + " people " + verb + " now"
		t := &capture.BoxTree{Elements: []capture.Element{
			el("body", "body", -1, 0, 0, 800, 600, text, "white"),
			el("div.meta", "div", 0, 24, 113, lineW, 21, text, ""),
			el("span.reltime", "span", 1, 87, 116, agoW, 15, ago, ""),
			el("span.visitors", "span", 1, 87+agoW+10, 116, 34, 15, readers, ""),
		}}
		for i, c := range []string{"", "meta", "reltime", "visitors"} {
			t.Elements[i].Classes = c
		}
		return t
	}
	rules := []*Rule{
		{ID: "ago", Kind: RuleDynamicText, Selector: ".reltime", Pattern: `\d+ (seconds?|minutes?) ago`},
		{ID: "count", Kind: RuleDynamicText, Selector: ".visitors", Pattern: `[\d,]+`},
	}
	// The changed pixels: from the time to the end of the shifted words.
	cluster := image.Rect(87, 119, 334, 131)
	tests := []struct {
		name      string
		base, cur *capture.BoxTree
		rules     []*Rule
		want      string // the suppressing rule's id, "" for none
	}{
		{"time and counter", line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "reading", 760, 88), rules, "ago"},
		{"another word changed", line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "leaving", 760, 88), rules, ""},
		{"counter without its rule", line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "reading", 760, 88), rules[:1], ""},
		{"the line's box changed", line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "reading", 700, 88), rules, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			changes := attribute(tt.base, tt.cur, []image.Rectangle{cluster}, 1, 0)
			if len(changes) != 1 || changes[0].Kind != ChangeText || changes[0].Selector != "div.meta" {
				t.Fatalf("changes = %+v, want one text change of the line (div.meta)", changes)
			}
			applyRules(newRuleSet(tt.rules), changes, tt.base, tt.cur)
			if got := changes[0].SuppressedBy; got != tt.want {
				t.Errorf("suppressed by %q, want %q", got, tt.want)
			}
		})
	}
	// The change goes to the time itself, its pixels spilling over the
	// separator it shifted: judged in its parent line.
	spill := attribute(line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "reading", 760, 88),
		[]image.Rectangle{image.Rect(87, 119, 194, 131)}, 1, 0)
	if len(spill) != 1 || spill[0].Selector != "span.reltime" {
		t.Fatalf("changes = %+v, want one text change of span.reltime", spill)
	}
	applyRules(newRuleSet(rules), spill, line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "reading", 760, 88))
	if spill[0].SuppressedBy != "ago" {
		t.Errorf("the time's change spilling over its line was suppressed by %q, want \"ago\"", spill[0].SuppressedBy)
	}
	spill = attribute(line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "leaving", 760, 88),
		[]image.Rectangle{image.Rect(87, 119, 194, 131)}, 1, 0)
	applyRules(newRuleSet(rules), spill, line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "leaving", 760, 88))
	if len(spill) != 1 || spill[0].SuppressedBy != "" {
		t.Errorf("the time's change in a line where another word changed: %+v, want it not suppressed", spill)
	}
	// Outside the line: the changed pixels reach below it.
	changes := attribute(line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "reading", 760, 88),
		[]image.Rectangle{image.Rect(87, 119, 334, 131)}, 1, 0)
	changes[0].Box.Height = 60
	applyRules(newRuleSet(rules), changes, line("9 minutes ago", "1,265", "reading", 760, 80), line("10 minutes ago", "1,310", "reading", 760, 88))
	if changes[0].SuppressedBy != "" {
		t.Errorf("a change reaching past the line was suppressed by %q", changes[0].SuppressedBy)
	}
}
