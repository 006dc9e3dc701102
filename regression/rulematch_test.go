package regression

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math/rand"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/snapq/snapq/capture"
)

// refMatchNodes is the matching rules had before ruleSet (a synthetic chain
// built per element per rule): the reference the fast paths must agree with.
func refMatchNodes(selector string, nodes []Node) bool {
	if len(nodes) == 0 {
		return false
	}
	last := nodes[len(nodes)-1]
	if last.Selector == selector || last.Path == selector {
		return true
	}
	m, err := compileSelector(selector)
	if err != nil {
		return false
	}
	if m.role != "" {
		return last.Role == m.role && (m.name == "" || last.Name == m.name)
	}
	return m.css.Match(refSynthetic(nodes))
}

func refSynthetic(nodes []Node) *html.Node {
	root := &html.Node{Type: html.DocumentNode}
	parent := &html.Node{Type: html.ElementNode, Data: "html", DataAtom: atom.Html}
	root.AppendChild(parent)
	if nodes[0].Tag != "body" && nodes[0].Tag != "html" {
		body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
		parent.AppendChild(body)
		parent = body
	}
	var n *html.Node
	for _, nd := range nodes {
		if nd.Tag == "html" {
			continue
		}
		n = attrNode(nd)
		parent.AppendChild(n)
		parent = n
	}
	if n == nil {
		return parent
	}
	return n
}

// randomTree is a tree of n elements, parents first; deep enough for the
// ancestry window, with html and body elements, broken parents and (order)
// parents that are not the previous element's ancestors.
func randomTree(rng *rand.Rand, n int, order bool) *capture.BoxTree {
	tags := []string{"div", "span", "p", "section", "a", "html", "body", "li", "ul"}
	t := &capture.BoxTree{}
	for i := 0; i < n; i++ {
		p := -1
		switch {
		case i == 0:
		case rng.Intn(20) == 0:
			p = i + rng.Intn(3) // broken: a root
		case order && rng.Intn(5) == 0:
			p = rng.Intn(i) // any earlier element
		case rng.Intn(3) > 0:
			p = i - 1 // deeper
		default:
			p = t.Elements[i-1].Parent // a sibling
		}
		e := capture.Element{Tag: tags[rng.Intn(len(tags))], Parent: p, X: i, Y: i, Width: 10, Height: 10}
		if rng.Intn(3) == 0 {
			e.Classes = fmt.Sprintf("c%d x", rng.Intn(4))
		}
		if rng.Intn(4) == 0 {
			e.ID = fmt.Sprintf("i%d", rng.Intn(6))
		}
		if rng.Intn(6) == 0 {
			e.Role, e.Name = "button", fmt.Sprintf("n%d", rng.Intn(3))
		}
		e.Selector = fmt.Sprintf("#s%d", i)
		t.Elements = append(t.Elements, e)
	}
	return t
}

var equivalenceSelectors = []string{
	"div", "span.c1", "div > span", "body > div", "html > div", "body div p", ":root", "html", "body",
	"div:first-child", "span:last-child", "p:only-child", "div:empty", "li:nth-of-type(2)", "div:nth-child(1)",
	"div + span", "div ~ p", "section:has(> span)", "div:has(.c2)", ":not(div)", "#i3", "#i2 .x", "[role=button]",
	`role=button[name="n1"]`, "role=button", "#s7", "body > body", "html html", "ul li", "a:first-of-type",
	"*:only-of-type", "div:not(:has(*))", "section > *:last-child", "body:first-child > div",
}

// TestRuleMatchesUnchanged: the one-walk tree matcher and the per-change
// chain agree with the per-element synthetic chains on every element of
// random trees (deep ones past maxAncestry, html/body inside, broken and
// out-of-order parents), for structural selectors too.
func TestRuleMatchesUnchanged(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(7))
	var rules []*Rule
	for i, s := range equivalenceSelectors {
		rules = append(rules, &Rule{ID: fmt.Sprint(i), Kind: RuleIgnoreElement, Selector: s})
	}
	for round := 0; round < 16; round++ {
		tree := randomTree(rng, 30+rng.Intn(90), round%2 == 1)
		rs := newRuleSet(rules)
		got := rs.matches(tree)
		for r, rule := range rules {
			var want []int
			for i := range tree.Elements {
				e := tree.Elements[i]
				if e.Selector == rule.Selector || refMatchNodes(rule.Selector, ancestry(tree, i)) {
					want = append(want, i)
				}
			}
			if fmt.Sprint(want) != fmt.Sprint(got[r]) {
				t.Fatalf("round %d, %q: tree matcher %v, reference %v", round, rule.Selector, got[r], want)
			}
		}
		for i := round % 3; i < len(tree.Elements); i += 3 {
			anc := ancestry(tree, i)
			c := &chain{}
			for _, rule := range rules {
				sel, _ := compileSelector(rule.Selector)
				for j := range anc { // in the order suppresses asks: root first
					if want, got := refMatchNodes(rule.Selector, anc[:j+1]), c.match(anc, j, rule.Selector, sel); want != got {
						t.Fatalf("round %d element %d prefix %d, %q: chain %v, reference %v", round, i, j, rule.Selector, got, want)
					}
				}
			}
		}
	}
}

// bigTree is a 5,000-element page: a body, then nested sections of cards.
func bigTree(n int) *capture.BoxTree {
	t := &capture.BoxTree{Elements: []capture.Element{{Tag: "body", Parent: -1, Width: 1280, Height: 20000, Selector: "body"}}}
	for i := 1; i < n; i++ {
		p := (i - 1) / 4
		t.Elements = append(t.Elements, capture.Element{Tag: []string{"div", "section", "span", "p"}[i%4],
			Classes: fmt.Sprintf("c%d item", i%50), ID: fmt.Sprintf("e%d", i), Parent: p, Y: i * 4, Width: 100, Height: 4,
			Selector: fmt.Sprintf("#e%d", i), Text: "t"})
	}
	return t
}

func nonMatchingRules(n int) []*Rule {
	var rules []*Rule
	for i := 0; i < n; i++ {
		rules = append(rules, &Rule{ID: fmt.Sprint(i), Kind: RuleIgnoreElement, Selector: fmt.Sprintf("main .ad-%d > div", i)})
	}
	return rules
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestIgnoreRulesBoundedCost: a comparison of 10 segments with 200
// ignore_element rules that match nothing, over a 5,000-element current
// tree and baseline tree, explains every segment in well under 2 s of CPU
// (it took about 29 s per tree and per segment before: each element's
// chain was built per rule). Not parallel: the process's CPU time is this
// test's alone.
func TestIgnoreRulesBoundedCost(t *testing.T) {
	cur, base := bigTree(5000), bigTree(5000)
	rs := newRuleSet(nonMatchingRules(200))
	d := image.NewNRGBA(image.Rect(0, 0, 200, 2000))
	for y := 100; y < 140; y++ {
		for x := 10; x < 50; x++ {
			d.Set(x, y, color.NRGBA{R: 255, A: 255}) // diff red
		}
	}
	start, cpu := time.Now(), cpuTime(t)
	masked := 0
	for seg := 0; seg < 10; seg++ { // as compareSegments: one explain per segment, one rule set
		ex := &explain{base: base, cur: cur, rules: rs, scale: 1, offsetY: seg * 2000}
		_, mask := ex.explain(d)
		masked += len(mask)
		masked += len(ignoreBoxes(rs, cur)) + len(ignoreBoxes(rs, base)) // as the aligned masks
	}
	took, used := time.Since(start), cpuTime(t)-cpu
	t.Logf("200 rules × 5,000 elements, 2 trees, 10 segments: %v CPU, %v wall", used, took)
	if masked != 0 || rs.err != nil {
		t.Errorf("masked %d boxes, err %v; want none", masked, rs.err)
	}
	if used > 2*time.Second {
		t.Errorf("took %v of CPU, want ≤ 2 s", used)
	}
}

// TestRuleBudget: past MaxRuleMatches rule × element matches, the rules of
// a comparison stop and every compared segment is an error naming the cap.
func TestRuleBudget(t *testing.T) {
	t.Parallel()
	rs := newRuleSet(nonMatchingRules(200))
	trees := MaxRuleMatches/(200*5000) + 1
	for i := 0; i < trees; i++ {
		rs.matches(bigTree(5000))
	}
	if !errors.Is(rs.err, ErrRuleBudget) {
		t.Fatalf("err = %v after %d trees, want ErrRuleBudget", rs.err, trees)
	}
	cs := rulesVerdict([]*Comparison{{Status: ComparePassed}, {Status: CompareFailed}, {Status: CompareNew}}, rs)
	if cs[0].Status != CompareError || cs[1].Status != CompareError || cs[2].Status != CompareNew {
		t.Errorf("statuses = %s %s %s, want error error new", cs[0].Status, cs[1].Status, cs[2].Status)
	}
	if want := "200 rules × 5000 elements"; !strings.Contains(cs[0].Message, want) {
		t.Errorf("message %q does not say %q", cs[0].Message, want)
	}
}

// previewChangesOf is n changes of distinct, 20-deep ancestries.
func previewChangesOf(n int) []TargetChange {
	var classes [20]string
	for d := range classes {
		classes[d] = "c" + strconv.Itoa(d-1)
	}
	out := make([]TargetChange, n)
	for i := range out {
		anc := make([]Node, 20)
		anc[0] = Node{Tag: "body"}
		for d := 1; d < 20; d++ {
			anc[d] = Node{Tag: "div", Classes: classes[d], ID: "n" + strconv.Itoa(i*20+d)}
		}
		out[i] = TargetChange{Target: "home", Change: Change{Kind: ChangeText, Ancestry: anc,
			Before: &ElementState{Text: "a"}, After: &ElementState{Text: "b"}}}
	}
	return out
}

// TestPreviewBounded: a preview over the most changes it reads (50,000,
// every ancestry distinct) ends within its 1 s budget, answered or with
// ErrPreviewTooCostly; one past its deadline ends with that error at once.
func TestPreviewBounded(t *testing.T) {
	t.Parallel()
	tcs := previewChangesOf(maxPreviewChanges)
	r := &Rule{ID: "p", Kind: RuleIgnoreElement, Selector: "main .ad > div"}
	start := time.Now()
	p, err := previewChanges(context.Background(), r, tcs, time.Now().Add(PreviewBudget))
	took := time.Since(start)
	t.Logf("preview of %d changes: %+v, err %v, in %v", len(tcs), p, err, took)
	if err != nil && !errors.Is(err, ErrPreviewTooCostly) {
		t.Fatal(err)
	}
	if err == nil && (p.Changes != len(tcs) || p.WouldSuppress != 0) {
		t.Errorf("preview = %+v, want %d changes, 0 suppressed", p, len(tcs))
	}
	if took > PreviewBudget+500*time.Millisecond {
		t.Errorf("took %v, want ≤ %v and a little", took, PreviewBudget)
	}
	if _, err := previewChanges(context.Background(), r, tcs, time.Now().Add(-time.Second)); !errors.Is(err, ErrPreviewTooCostly) {
		t.Errorf("past its deadline: err = %v, want ErrPreviewTooCostly", err)
	}
	// Matches still count: an ancestor's class.
	hit := &Rule{ID: "h", Kind: RuleIgnoreElement, Selector: ".c3 .c10"}
	if p, err := previewChanges(context.Background(), hit, tcs[:100], time.Now().Add(PreviewBudget)); err != nil || p.WouldSuppress != 100 {
		t.Errorf("preview of a matching rule = %+v, %v; want 100 suppressed", p, err)
	}
}

// TestSelectorCacheLRU: the cache keeps the most recently used selectors;
// a flood of new ones evicts the least recently used, not a used one.
func TestSelectorCacheLRU(t *testing.T) {
	t.Parallel()
	c := newLRU[string, int](3)
	c.put("a", 1)
	c.put("b", 2)
	c.put("c", 3)
	c.get("a") // a is used again
	c.put("d", 4)
	if _, ok := c.get("b"); ok {
		t.Error("b, the least recently used, is still cached")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%s evicted", k)
		}
	}
	if c.len() != 3 {
		t.Errorf("len = %d, want 3", c.len())
	}
	// The process cache keeps caching past its size (it used to stop at 10,000).
	for i := 0; i < maxCachedSelectors+10; i++ {
		if _, err := compileSelector(fmt.Sprintf(".lru-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := selectorCache.get(fmt.Sprintf(".lru-%d", maxCachedSelectors+9)); !ok {
		t.Error("the newest selector is not cached")
	}
}

// BenchmarkIgnoreRules: 200 ignore_element rules matching nothing over a
// 5,000-element tree (one tree's matches, the unit a comparison pays once
// per distinct tree).
func BenchmarkIgnoreRules(b *testing.B) {
	tree := bigTree(5000)
	rules := nonMatchingRules(200)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		rs := newRuleSet(rules)
		if len(ignoreBoxes(rs, tree)) != 0 {
			b.Fatal("a rule matched")
		}
	}
}

// BenchmarkPreview: a preview over 50,000 changes of distinct ancestries.
func BenchmarkPreview(b *testing.B) {
	tcs := previewChangesOf(maxPreviewChanges)
	r := &Rule{ID: "p", Kind: RuleIgnoreElement, Selector: "main .ad > div"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := previewChanges(context.Background(), r, tcs, time.Now().Add(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
}
