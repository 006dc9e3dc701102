package regression

import (
	"errors"
	"fmt"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/snapq/snapq/capture"
)

// Rule matching at bounded cost. A selector is matched against an element
// and its recorded ancestors (synthetic): each element is the only child of
// its parent, and has no children of its own. Built naively, that chain is
// rebuilt per element per rule, which made 200 rules over a 5,000-element
// tree cost half a minute. A ruleSet compiles its selectors once and matches
// a whole tree in one walk, reusing one chain: the walk keeps the path from
// the root to the current element linked (each node's only child is the next
// node of the path), so an element is matched where it stands, its chain
// costs nothing, and each tree's matches are kept for every segment and
// explanation of the comparison.

// MaxRuleMatches bounds the rule × element matches of one comparison: past
// it, the comparison is an error saying so (the suite's rules cost more
// than a comparison may spend).
const MaxRuleMatches = 4_000_000

// ErrRuleBudget is the error of a comparison whose rules × elements pass MaxRuleMatches.
var ErrRuleBudget = errors.New("rules × elements over the comparison's budget")

// ruleSet is the active rules of one comparison, compiled once, with the
// matches of each box tree it has seen.
type ruleSet struct {
	rules []*Rule
	sels  []compiled // sels[i] is rules[i]'s selector; zero when it does not compile
	ok    []bool
	trees map[*capture.BoxTree][][]int // per tree, per rule, the matched elements
	spent int                          // rule × element matches so far
	err   error                        // ErrRuleBudget, once passed
	// volatile is the learned-volatile regions a suite in mask mode
	// masks (volatilitymask.go); nil: none.
	volatile *volatileMask
}

func newRuleSet(rules []*Rule) *ruleSet {
	rs := &ruleSet{rules: rules, sels: make([]compiled, len(rules)), ok: make([]bool, len(rules)),
		trees: map[*capture.BoxTree][][]int{}}
	for i, r := range rules {
		c, err := compileSelector(r.Selector)
		rs.sels[i], rs.ok[i] = c, err == nil
	}
	return rs
}

// maskedRegions lists the learned regions that masked some of changes.
func (rs *ruleSet) maskedRegions(changes []Change) []MaskedRegion {
	if rs == nil {
		return nil
	}
	return rs.volatile.regionsOf(changes)
}

// list is the rules (none for a nil set).
func (rs *ruleSet) list() []*Rule {
	if rs == nil {
		return nil
	}
	return rs.rules
}

// matches returns, per rule, the elements of t an ignore_element or a
// dynamic_text rule matches, computed once per tree. Past the budget it
// returns nil and sets rs.err.
func (rs *ruleSet) matches(t *capture.BoxTree) [][]int {
	if t == nil || rs == nil {
		return nil
	}
	if m, ok := rs.trees[t]; ok {
		return m
	}
	var ign []int
	for i, r := range rs.rules {
		if r.Kind == RuleIgnoreElement || r.Kind == RuleDynamicText {
			ign = append(ign, i)
		}
	}
	if cost := len(ign) * len(t.Elements); cost > 0 && rs.spent+cost > MaxRuleMatches {
		rs.err = fmt.Errorf("%w: %d rules × %d elements passes %d; remove rules or give them a target",
			ErrRuleBudget, len(ign), len(t.Elements), MaxRuleMatches)
		rs.trees[t] = nil
		return nil
	} else {
		rs.spent += cost
	}
	out := make([][]int, len(rs.rules))
	if len(ign) > 0 {
		walkChains(t, func(i int, target *html.Node) {
			e := &t.Elements[i]
			for _, r := range ign {
				if rs.ok[r] && matchOne(rs.rules[r].Selector, rs.sels[r], e.Selector, e.Path, e.Role, e.Name, target) {
					out[r] = append(out[r], i)
				}
			}
		})
	}
	rs.trees[t] = out
	return out
}

// matchOne reports whether selector (compiled c) matches an element of
// stable selector sel, path, role and name whose synthetic chain ends at target.
func matchOne(selector string, c compiled, sel, path, role, name string, target *html.Node) bool {
	if sel == selector || path == selector {
		return true
	}
	if c.role != "" {
		return role == c.role && (c.name == "" || name == c.name)
	}
	return c.css != nil && c.css.Match(target)
}

// boxes returns the boxes (page CSS px) of t's elements rule i matched.
func (rs *ruleSet) boxes(t *capture.BoxTree, i int) []Rect {
	m := rs.matches(t)
	if m == nil {
		return nil
	}
	out := make([]Rect, 0, len(m[i]))
	for _, n := range m[i] {
		e := t.Elements[n]
		out = append(out, Rect{X: e.X, Y: e.Y, Width: e.Width, Height: e.Height})
	}
	return out
}

// walkChains calls fn for every element of t, in order, with the node that
// stands for it in its synthetic chain (synthetic(ancestry(t, i)), built
// once for the whole tree): the last of the chain's elements that is not
// html, or the chain's top when there is none. Only the last maxAncestry
// elements of the path count, as ancestry records them.
func walkChains(t *capture.BoxTree, fn func(i int, target *html.Node)) {
	doc := &html.Node{Type: html.DocumentNode}
	top := &html.Node{Type: html.ElementNode, Data: "html", DataAtom: atom.Html}
	body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	link(doc, top)
	link(top, body)
	nodes := make([]*html.Node, len(t.Elements)) // nil for an html element (skipped in chains)
	var path []int                               // the current element's recorded ancestors and itself, root first
	for i := range t.Elements {
		e := &t.Elements[i]
		p := e.Parent
		if p < 0 || p >= i {
			p = -1
		}
		for len(path) > 0 && path[len(path)-1] != p {
			path = path[:len(path)-1]
		}
		if p >= 0 && len(path) == 0 { // the tree is not in document order: relink p's path
			path = relinkPath(t, nodes, p)
		}
		if e.Tag != "html" {
			nodes[i] = elementNode(e)
			if up := lastNode(nodes, path); up != nil {
				link(up, nodes[i])
			}
		}
		path = append(path, i)
		matchWindow(t, nodes, path, top, body, fn)
	}
}

// matchWindow calls fn for the last element of path with its chain: the
// last maxAncestry elements of path under html (and body unless the first
// of them is body or html), as synthetic builds it.
func matchWindow(t *capture.BoxTree, nodes []*html.Node, path []int, top, body *html.Node, fn func(int, *html.Node)) {
	win := path[max(0, len(path)-maxAncestry):]
	tail := body
	if tag := t.Elements[win[0]].Tag; tag == "body" || tag == "html" {
		tail = top
	} else {
		link(top, body) // a window under html alone may have taken top's child
	}
	var first, target *html.Node
	for _, n := range win {
		if nodes[n] != nil {
			if first == nil {
				first = nodes[n]
			}
			target = nodes[n]
		}
	}
	if first == nil {
		tail.FirstChild, tail.LastChild = nil, nil
		fn(path[len(path)-1], tail)
		return
	}
	saved := first.Parent
	link(tail, first)
	target.FirstChild, target.LastChild = nil, nil
	fn(path[len(path)-1], target)
	first.Parent = saved
}

// relinkPath links the chain of p's recorded ancestors (and p) again and returns it.
func relinkPath(t *capture.BoxTree, nodes []*html.Node, p int) []int {
	var path []int
	for i := p; i >= 0; {
		path = append(path, i)
		if q := t.Elements[i].Parent; q >= 0 && q < i {
			i = q
		} else {
			i = -1
		}
	}
	for l, r := 0, len(path)-1; l < r; l, r = l+1, r-1 {
		path[l], path[r] = path[r], path[l]
	}
	var up *html.Node
	for _, n := range path {
		if nodes[n] == nil {
			continue
		}
		if up != nil {
			link(up, nodes[n])
		}
		up = nodes[n]
	}
	return path
}

// lastNode is the node of path's last element that is not html, or nil.
func lastNode(nodes []*html.Node, path []int) *html.Node {
	for k := len(path) - 1; k >= 0; k-- {
		if nodes[path[k]] != nil {
			return nodes[path[k]]
		}
	}
	return nil
}

// link makes child the only child of parent.
func link(parent, child *html.Node) {
	parent.FirstChild, parent.LastChild = child, child
	child.Parent, child.PrevSibling, child.NextSibling = parent, nil, nil
}

// elementNode is the element's node: its tag and recorded attributes.
func elementNode(e *capture.Element) *html.Node {
	return attrNode(Node{Tag: e.Tag, ID: e.ID, Classes: e.Classes, TestID: e.TestID, Role: e.Role, Name: e.Name})
}

func attrNode(nd Node) *html.Node {
	n := &html.Node{}
	fillNode(n, nd, nil)
	return n
}

// fillNode makes n the element nd, its attributes appended to buf (which it returns).
func fillNode(n *html.Node, nd Node, buf []html.Attribute) []html.Attribute {
	*n = html.Node{Type: html.ElementNode, Data: nd.Tag, DataAtom: atom.Lookup([]byte(nd.Tag))}
	start := len(buf)
	for _, kv := range [...][2]string{{"id", nd.ID}, {"class", nd.Classes}, {"data-testid", nd.TestID}, {"role", nd.Role}, {"aria-label", nd.Name}} {
		if kv[1] != "" {
			buf = append(buf, html.Attribute{Key: kv[0], Val: kv[1]})
		}
	}
	if len(buf) > start {
		n.Attr = buf[start:len(buf):len(buf)]
	}
	return buf
}
