package regression

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"image"
	"regexp"
	"strings"
	"time"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// Rules are a reviewer's answers to recurring changes, made from a change in
// one action. An ignore_element rule masks the boxes of the elements its
// selector matches, in both captures, as the suite's ignore.selectors do. A
// dynamic_text rule suppresses a text change of a matching element when the
// text differs only where its pattern matches and the element's box kept its
// size and place: only layout changes count. A rule applies to one target or,
// without one, the whole suite, until it expires.
//
// Selectors are matched against the box trees the captures recorded (the
// element and its recorded ancestors: tag, id, classes, data-testid, role),
// so a rule also applies to captures taken before it existed. Each element
// is matched as the only child of its parent, with no children of its own:
// structural pseudo-classes (:nth-of-type, :first-child, :empty) and
// sibling combinators see no siblings; a change's own selector always
// matches it. Matching costs one walk per box tree (rulematch.go).

// Rule kinds.
const (
	RuleIgnoreElement = "ignore_element"
	RuleDynamicText   = "dynamic_text"
)

const (
	// MaxRulePattern bounds a dynamic_text pattern (RE2, linear time).
	MaxRulePattern = 200
	// MaxSuiteRules bounds the rules of one suite.
	MaxSuiteRules = 200
	// RuleStatsRuns is how many of a suite's last runs rule counts and previews cover.
	RuleStatsRuns = 10
	// dynamicPlaceholder stands for a pattern's match when texts are compared.
	dynamicPlaceholder = "\x00"
)

// Rule is one suite rule.
type Rule struct {
	ID        string     `json:"id"`
	SuiteID   string     `json:"suite_id"`
	Kind      string     `json:"kind"`
	Selector  string     `json:"selector"`
	Target    string     `json:"target,omitempty"`
	Pattern   string     `json:"pattern,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	// Suppressed counts the changes the rule suppressed in the suite's last
	// RuleStatsRuns runs (read side).
	Suppressed int `json:"suppressed"`

	re *regexp.Regexp
}

// RuleInput is the body of POST /v1/suites/:id/rules (and its preview).
type RuleInput struct {
	Kind      string     `json:"kind"`
	Selector  string     `json:"selector"`
	Target    string     `json:"target"`
	Pattern   string     `json:"pattern"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// NewRule validates in for suite s; the error is a *jobs.ValidationError
// naming each bad field.
func NewRule(s *Suite, in RuleInput, now time.Time) (*Rule, error) {
	var errs jobs.FieldErrors
	r := &Rule{ID: jobs.NewID(), SuiteID: s.ID, Kind: in.Kind, Selector: strings.TrimSpace(in.Selector),
		Target: strings.TrimSpace(in.Target), Pattern: in.Pattern, CreatedAt: now}
	switch in.Kind {
	case RuleIgnoreElement:
		if in.Pattern != "" {
			errs.Add("invalid_option", "pattern", "only a dynamic_text rule has a pattern")
		}
	case RuleDynamicText:
		if in.Pattern == "" || len(in.Pattern) > MaxRulePattern {
			errs.Add("invalid_option", "pattern", fmt.Sprintf("must be a regular expression of 1-%d characters", MaxRulePattern))
		} else if re, err := regexp.Compile(in.Pattern); err != nil {
			errs.Add("invalid_option", "pattern", "not a valid RE2 regular expression: "+err.Error())
		} else if re.MatchString("") {
			errs.Add("invalid_option", "pattern", "must not match the empty text")
		} else {
			r.re = re
		}
	default:
		errs.Add("invalid_option", "kind", "must be ignore_element or dynamic_text")
	}
	if r.Selector == "" || len(r.Selector) > jobs.MaxSelectorLength {
		errs.Add("invalid_option", "selector", fmt.Sprintf("must be a selector of 1-%d characters", jobs.MaxSelectorLength))
	} else if _, err := compileSelector(r.Selector); err != nil {
		errs.Add("invalid_option", "selector", err.Error())
	}
	if r.Target != "" && !s.hasTarget(r.Target) {
		errs.Add("invalid_option", "target", fmt.Sprintf("the suite has no target %q", r.Target))
	}
	if in.ExpiresAt != nil {
		if !in.ExpiresAt.After(now) {
			errs.Add("invalid_option", "expires_at", "must be in the future")
		}
		t := in.ExpiresAt.UTC()
		r.ExpiresAt = &t
	}
	if len(errs) > 0 {
		return nil, &jobs.ValidationError{Fields: errs}
	}
	return r, nil
}

func (s *Suite) hasTarget(name string) bool {
	for _, t := range s.Spec.Targets {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Active reports whether the rule applies to target at now.
func (r *Rule) Active(target string, now time.Time) bool {
	return (r.ExpiresAt == nil || now.Before(*r.ExpiresAt)) && (r.Target == "" || r.Target == target)
}

// pattern is the compiled dynamic_text pattern (nil when it does not compile).
func (r *Rule) pattern() *regexp.Regexp {
	if r.re == nil && r.Pattern != "" {
		r.re, _ = regexp.Compile(r.Pattern)
	}
	return r.re
}

// Suppresses reports whether the rule suppresses a change (its target apart).
func (r *Rule) Suppresses(ch Change) bool {
	return newRuleSet([]*Rule{r}).suppressor(ch, nil) != nil
}

// suppressor returns the first of the rules that suppresses ch, or nil. c,
// when not nil, holds ch's chain once built (callers reuse it per change).
func (rs *ruleSet) suppressor(ch Change, c *chain) *Rule {
	if ch.Kind == ChangeUnattributed || len(ch.Ancestry) == 0 {
		return nil
	}
	if c == nil {
		c = &chain{}
	}
	for i, r := range rs.rules {
		if rs.ok[i] && rs.suppresses(i, ch, c) {
			return r
		}
	}
	return nil
}

// suppresses reports whether rule i suppresses ch (c: ch's chain, built on first need).
func (rs *ruleSet) suppresses(i int, ch Change, c *chain) bool {
	r, sel := rs.rules[i], rs.sels[i]
	switch r.Kind {
	case RuleIgnoreElement:
		return c.matchAny(ch.Ancestry, r.Selector, sel) // the element or an ancestor is ignored
	case RuleDynamicText:
		re := r.pattern()
		if re == nil || ch.Kind != ChangeText || ch.Before == nil || ch.After == nil || !c.match(ch.Ancestry, len(ch.Ancestry)-1, r.Selector, sel) {
			return false
		}
		b, a := ch.Before, ch.After
		if !sameTextBox(b, a, ch.Box) { // its place or its container changed: a layout change counts
			return false
		}
		return b.Text != a.Text && re.ReplaceAllString(b.Text, dynamicPlaceholder) == re.ReplaceAllString(a.Text, dynamicPlaceholder)
	}
	return false
}

// sameTextBox reports whether a text change stayed within its element's own
// box and its container's layout: the same box; or, when the text's width
// changed with it ("52 seconds ago" → "1 minute ago"), the same top and
// height, the same left or right edge, a container (the parent) recorded in
// both captures with the same box, and the changed pixels (changed) inside
// the union of the two boxes.
func sameTextBox(b, a *ElementState, changed Rect) bool {
	if b.Box == a.Box {
		return true
	}
	bb, ab := b.Box, a.Box
	if bb.Y != ab.Y || bb.Height != ab.Height || (bb.X != ab.X && bb.X+bb.Width != ab.X+ab.Width) {
		return false
	}
	if b.Container == nil || a.Container == nil || *b.Container != *a.Container {
		return false
	}
	return rectImage(changed).In(rectImage(bb).Union(rectImage(ab)).Inset(-maskSlackPx))
}

// ignoreBoxes returns the boxes (page CSS px) of the tree's elements an
// ignore_element rule matches, rule by rule.
func ignoreBoxes(rs *ruleSet, t *capture.BoxTree) []Rect {
	if t == nil || rs == nil {
		return nil
	}
	var out []Rect
	for i, r := range rs.rules {
		if r.Kind != RuleIgnoreElement {
			continue
		}
		for _, b := range rs.boxes(t, i) {
			out = append(out, b)
			if len(out) >= maxMaskBoxesPerCapture {
				return out
			}
		}
	}
	return out
}

// maxMaskBoxesPerCapture bounds the boxes rules mask in one capture.
const maxMaskBoxesPerCapture = 1000

// applyRules marks the changes the rules suppress and returns the image
// rectangles their pixels occupy. base and cur are the captures' box trees
// (nil when not recorded): a text change of an element that holds
// dynamic_text elements is matched against them (dynamicContainer).
func applyRules(rs *ruleSet, changes []Change, base, cur *capture.BoxTree) []image.Rectangle {
	if rs == nil {
		return nil
	}
	var mask []image.Rectangle
	c := &chain{}
	for i := range changes {
		c.reset()
		r := rs.suppressor(changes[i], c)
		if r == nil {
			r = rs.dynamicContainer(changes[i], base, cur)
		}
		if r != nil {
			changes[i].SuppressedBy = r.ID
			b := changes[i].Box
			mask = append(mask, image.Rect(b.X, b.Y, b.X+b.Width, b.Y+b.Height))
		}
	}
	return append(mask, rs.volatile.apply(changes)...)
}

// chain is a change's ancestry as one synthetic chain (html > body > …),
// built on first use: prefix j of the ancestry is matched on the node that
// stands for its last element, with that node's children unlinked.
//
// A chain's buffers are reused by the next change (reset): a preview
// matches tens of thousands of changes.
type chain struct {
	built   bool
	seq     []*html.Node // the chain's nodes, top first
	targets []*html.Node // targets[j] stands for ancestry[:j+1]
	slab    []html.Node  // the nodes: doc, html, body, then the elements
	attrs   []html.Attribute
}

// reset makes c ready for another change, keeping its buffers.
func (c *chain) reset() { c.built = false }

func (c *chain) build(nodes []Node) {
	c.built = true
	if cap(c.slab) < len(nodes)+3 {
		c.slab = make([]html.Node, len(nodes)+3, max(len(nodes)+3, maxAncestry+3))
	}
	c.slab = c.slab[:len(nodes)+3]
	doc, top, body := &c.slab[0], &c.slab[1], &c.slab[2]
	*doc = html.Node{Type: html.DocumentNode}
	*top = html.Node{Type: html.ElementNode, Data: "html", DataAtom: atom.Html}
	*body = html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	link(doc, top)
	c.seq = append(c.seq[:0], top)
	if nodes[0].Tag != "body" && nodes[0].Tag != "html" {
		c.seq = append(c.seq, body)
	}
	c.targets = c.targets[:0]
	c.attrs = c.attrs[:0]
	for j, nd := range nodes {
		if nd.Tag != "html" {
			n := &c.slab[j+3]
			c.attrs = fillNode(n, nd, c.attrs)
			c.seq = append(c.seq, n)
		}
		c.targets = append(c.targets, c.seq[len(c.seq)-1])
	}
}

// match reports whether selector (compiled sel) matches prefix j of nodes
// (synthetic(nodes[:j+1])): the element nodes[j] and its ancestors.
func (c *chain) match(nodes []Node, j int, selector string, sel compiled) bool {
	last := nodes[j]
	if last.Selector == selector || last.Path == selector {
		return true
	}
	if sel.role != "" {
		return last.Role == sel.role && (sel.name == "" || last.Name == sel.name)
	}
	if sel.css == nil {
		return false
	}
	if !c.built {
		c.build(nodes)
	}
	c.relink()
	t := c.targets[j]
	t.FirstChild, t.LastChild = nil, nil
	return sel.css.Match(t)
}

// matchAny reports whether selector matches any prefix of nodes: the
// element or one of its ancestors. From the element up, each prefix's chain
// is the one before with its last node's children unlinked.
func (c *chain) matchAny(nodes []Node, selector string, sel compiled) bool {
	for _, nd := range nodes {
		if nd.Selector == selector || nd.Path == selector || (sel.role != "" && nd.Role == sel.role && (sel.name == "" || nd.Name == sel.name)) {
			return true
		}
	}
	if sel.css == nil {
		return false
	}
	if !c.built {
		c.build(nodes)
	}
	c.relink()
	for j := len(nodes) - 1; j >= 0; j-- {
		t := c.targets[j]
		t.FirstChild, t.LastChild = nil, nil
		if sel.css.Match(t) {
			return true
		}
	}
	return false
}

// relink links the chain's nodes again, each the only child of the one before.
func (c *chain) relink() {
	for k := 1; k < len(c.seq); k++ {
		link(c.seq[k-1], c.seq[k])
	}
}

// compiled is a parsed rule selector.
type compiled struct {
	css        cascadia.Matcher
	role, name string
}

var roleSelector = regexp.MustCompile(`^role=([a-z]+)(?:\[name="((?:[^"\\]|\\.)*)"\])?$`)

// selectorCache holds parsed selectors: the most recently used
// maxCachedSelectors of this process (an LRU, so no tenant's selectors keep
// the others' out).
var selectorCache = newLRU[string, compiled](maxCachedSelectors)

const maxCachedSelectors = 10000

func compileSelector(s string) (compiled, error) {
	if c, ok := selectorCache.get(s); ok {
		return c, nil
	}
	var c compiled
	if strings.HasPrefix(s, "role=") {
		m := roleSelector.FindStringSubmatch(s)
		if m == nil {
			return c, fmt.Errorf(`a role selector is role=<role>[name="<accessible name>"]`)
		}
		c.role, c.name = m[1], strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
	} else {
		sel, err := cascadia.ParseGroup(s)
		if err != nil {
			return c, fmt.Errorf("not a CSS selector: %v", err)
		}
		c.css = sel
	}
	selectorCache.put(s, c)
	return c, nil
}

// RuleStore is what the API needs of rules and changes. store.Store implements it.
type RuleStore interface {
	RuleSource
	CreateRule(ctx context.Context, r *Rule) error
	GetRule(ctx context.Context, id string) (*Rule, error)
	DeleteRule(ctx context.Context, id string) error
	// SuppressedCounts counts per rule id the changes suppressed in the suite's last runs.
	SuppressedCounts(ctx context.Context, suiteID string, runs int) (map[string]int, error)
	// RecentChanges returns at most limit changes of the suite's last runs.
	RecentChanges(ctx context.Context, suiteID string, runs, limit int) ([]TargetChange, error)
	// RecentRunCount is how many runs the suite's last runs are (at most runs).
	RecentRunCount(ctx context.Context, suiteID string, runs int) (int, error)
	// ComparisonChanges returns a comparison (no artifacts) with its changes.
	ComparisonChanges(ctx context.Context, id string) (*Comparison, error)
}

// TargetChange is a stored change and the target its comparison showed.
type TargetChange struct {
	Target string
	Change Change
	// RunID and Viewport are of the change's comparison (volatility.go).
	RunID    string
	Viewport string
	// Approved says a human approved the change's comparison.
	Approved bool
	// Segment is the comparison's segment (a heat map places the change).
	Segment int
}

// maxPreviewChanges bounds the changes a preview reads.
const maxPreviewChanges = 50_000

// ParseRule decodes and validates a rule's body for suite s.
func ParseRule(s *Suite, body []byte, now time.Time) (*Rule, error) {
	var in RuleInput
	var errs jobs.FieldErrors
	if !jobs.DecodeStrict(body, &in, "", &errs) || len(errs) > 0 {
		return nil, jobs.ValidationErrors(errs)
	}
	return NewRule(s, in, now)
}

// Preview is what a rule would have done over the suite's last runs.
type Preview struct {
	Runs int `json:"runs"`
	// Changes counts the changes of those runs no rule suppressed.
	Changes int `json:"changes"`
	// WouldSuppress counts those the rule would suppress.
	WouldSuppress int `json:"would_suppress"`
}

// PreviewBudget bounds the CPU time a preview spends matching: past it the
// preview ends with ErrPreviewTooCostly.
const PreviewBudget = time.Second

// ErrPreviewTooCostly ends a preview that passed PreviewBudget.
var ErrPreviewTooCostly = errors.New("the rule preview passed its time budget")

// PreviewRule counts the changes of the suite's last RuleStatsRuns runs that
// r would suppress, among those no rule suppressed. Changes with the same
// ancestry share one match; the matching stops at PreviewBudget.
func PreviewRule(ctx context.Context, st RuleStore, r *Rule) (Preview, error) {
	p := Preview{Runs: RuleStatsRuns}
	tcs, err := st.RecentChanges(ctx, r.SuiteID, RuleStatsRuns, maxPreviewChanges)
	if err != nil {
		return p, err
	}
	return previewChanges(ctx, r, tcs, time.Now().Add(PreviewBudget))
}

// previewChanges is PreviewRule over tcs, ending at deadline.
func previewChanges(ctx context.Context, r *Rule, tcs []TargetChange, deadline time.Time) (Preview, error) {
	p := Preview{Runs: RuleStatsRuns}
	rs := newRuleSet([]*Rule{r})
	memo := map[uint64]bool{} // hash of the ancestry (and texts, for dynamic_text) → suppressed
	var h maphash.Hash
	c := &chain{}
	for n, tc := range tcs {
		if n%256 == 255 && (time.Now().After(deadline) || ctx.Err() != nil) {
			return p, fmt.Errorf("%w (%s) after %d of %d changes: give the rule a target or a narrower selector",
				ErrPreviewTooCostly, PreviewBudget, n, len(tcs))
		}
		if tc.Change.SuppressedBy != "" {
			continue
		}
		p.Changes++
		if r.Target != "" && r.Target != tc.Target {
			continue
		}
		key := changeKey(&h, r.Kind, tc.Change)
		hit, ok := memo[key]
		if !ok {
			c.reset()
			hit = rs.suppressor(tc.Change, c) != nil
			memo[key] = hit
		}
		if hit {
			p.WouldSuppress++
		}
	}
	return p, nil
}

// changeKey hashes what a rule of kind sees of ch (h's seed stays: keys
// of one preview compare).
func changeKey(h *maphash.Hash, kind string, ch Change) uint64 {
	h.Reset()
	h.WriteString(ch.Kind)
	for _, n := range ch.Ancestry {
		for _, f := range [...]string{n.Tag, n.ID, n.Classes, n.TestID, n.Role, n.Name, n.Selector, n.Path} {
			h.WriteByte(0)
			h.WriteString(f)
		}
		h.WriteByte(1)
	}
	if kind == RuleDynamicText && ch.Before != nil && ch.After != nil {
		fmt.Fprintf(h, "\x02%v\x00%v\x00%s\x00%s\x00%v", ch.Before.Box, ch.After.Box, ch.Before.Text, ch.After.Text, ch.Box)
		for _, c := range []*Rect{ch.Before.Container, ch.After.Container} {
			if c != nil {
				fmt.Fprintf(h, "\x03%v", *c)
			}
		}
	}
	return h.Sum64()
}
