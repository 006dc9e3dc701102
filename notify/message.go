package notify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/vcs"
)

// MaxChanges is how many changed comparisons a message lists.
const MaxChanges = 5

// Message is what every channel says about a run, before its provider's
// format. It is also the data of a webhook channel's run.notification event.
type Message struct {
	Suite   string               `json:"suite"`
	SuiteID string               `json:"suite_id"`
	RunID   string               `json:"run_id"`
	Status  regression.RunStatus `json:"status"` // the run's
	Reason  string               `json:"reason"` // failed, needs_review, error or recovered
	Branch  string               `json:"branch,omitempty"`
	Commit  string               `json:"commit,omitempty"`
	Counts  regression.RunCounts `json:"counts"`
	Summary string               `json:"summary"` // "3 changed, 1 new, 120 passed"
	// RunURL is the run in the dashboard ("" when no base URL is known).
	RunURL string `json:"run_url,omitempty"`
	// Changes are the most changed comparisons, largest change first; More
	// counts the changed ones left out.
	Changes    []Change   `json:"changes"`
	More       int        `json:"more"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// Change is one changed comparison.
type Change struct {
	Target   string                   `json:"target"`
	Viewport string                   `json:"viewport"`
	Segment  int                      `json:"segment"`
	Status   regression.CompareStatus `json:"status"` // failed, new, missing or error
	Ratio    float64                  `json:"diff_ratio"`
	// ThumbnailURL previews the diff image (the current image for a new
	// segment); DiffURL is the full image. "" when there is none.
	ThumbnailURL string `json:"thumbnail_url,omitempty"`
	DiffURL      string `json:"diff_url,omitempty"`
}

// Label names the change: "home 1280x720 #2".
func (c Change) Label() string {
	out := c.Target + " " + c.Viewport
	if c.Segment > 1 {
		out += fmt.Sprintf(" #%d", c.Segment)
	}
	return out
}

// Detail is the change's status and ratio: "4.21% changed", "new".
func (c Change) Detail() string {
	if c.Status == regression.CompareFailed {
		return fmt.Sprintf("%.2f%% changed", c.Ratio*100)
	}
	return string(c.Status)
}

// NewMessage builds the message of run r of suite s, with links under base
// (the api's public URL; "" leaves links out).
func NewMessage(s *regression.Suite, r *regression.Run, reason, base string) Message {
	base = strings.TrimRight(base, "/")
	c := r.Counts
	m := Message{Suite: s.Name, SuiteID: s.ID, RunID: r.ID, Status: r.Status, Reason: reason, Branch: r.Branch,
		Commit: r.Commit, Counts: c, Summary: vcs.Summary(c.Failed, c.New, c.Passed, c.Missing, c.Error),
		RunURL: regression.ReviewURL(base, r.ID), Changes: []Change{}, FinishedAt: r.FinishedAt}
	var changed []*regression.Comparison
	for _, cmp := range r.Comparisons {
		if cmp.Status != regression.ComparePassed {
			changed = append(changed, cmp)
		}
	}
	rank := map[regression.CompareStatus]int{regression.CompareFailed: 0, regression.CompareError: 1, regression.CompareNew: 2, regression.CompareMissing: 3}
	slices.SortStableFunc(changed, func(a, b *regression.Comparison) int {
		return cmp.Or(cmp.Compare(rank[a.Status], rank[b.Status]), cmp.Compare(b.DiffRatio, a.DiffRatio))
	})
	for i, x := range changed {
		if i == MaxChanges {
			m.More = len(changed) - MaxChanges
			break
		}
		ch := Change{Target: x.Target, Viewport: x.Viewport, Segment: x.Segment, Status: x.Status, Ratio: x.DiffRatio}
		img := x.DiffArtifact
		if img == nil {
			img = x.CurrentArtifact
		}
		if img != nil && base != "" {
			ch.DiffURL = base + "/v1/artifacts/" + img.ID
			ch.ThumbnailURL = ch.DiffURL + "/thumbnail"
		}
		m.Changes = append(m.Changes, ch)
	}
	return m
}

// Title is the message's first line: "snapq · marketing: failed".
func (m Message) Title() string {
	what := strings.ReplaceAll(string(m.Status), "_", " ")
	if m.Reason == regression.NotifyRecovered {
		what = "recovered (passed after a run that did not)"
	}
	out := fmt.Sprintf("snapq · %s: %s", m.Suite, what)
	if m.Branch != "" {
		out += " on " + m.Branch
	}
	return out
}

// Text is the plain-text body (email, and the fallback text of chat
// messages).
func (m Message) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n", m.Title(), m.Summary)
	if m.Commit != "" {
		fmt.Fprintf(&b, "Commit %s\n", m.Commit)
	}
	if len(m.Changes) > 0 {
		b.WriteString("\nMost changed:\n")
		for _, c := range m.Changes {
			fmt.Fprintf(&b, "- %s: %s", c.Label(), c.Detail())
			if c.ThumbnailURL != "" {
				fmt.Fprintf(&b, " %s", c.ThumbnailURL)
			}
			b.WriteString("\n")
		}
		if m.More > 0 {
			fmt.Fprintf(&b, "… and %d more\n", m.More)
		}
	}
	if m.RunURL != "" {
		fmt.Fprintf(&b, "\nReview the run: %s\n", m.RunURL)
	}
	return b.String()
}

// color is the side colour of Discord embeds: red, amber, green.
func (m Message) color() int {
	switch m.Reason {
	case regression.NotifyRecovered:
		return 0x2EB67D
	case regression.NotifyNeedsReview:
		return 0xECB22E
	default:
		return 0xE01E5A
	}
}

// Slack is an incoming webhook's payload: text (the notification's
// fallback) and Block Kit blocks (header, summary, changes, link).
func (m Message) Slack() map[string]any {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace
	blocks := []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": cut(m.Title(), 150), "emoji": false}},
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": "*" + esc(m.Summary) + "*" + commitLine(m, "`")}},
	}
	if len(m.Changes) > 0 {
		var lines []string
		for _, c := range m.Changes {
			label := esc(c.Label())
			if c.ThumbnailURL != "" {
				label = "<" + c.ThumbnailURL + "|" + label + ">"
			}
			lines = append(lines, "• "+label+": "+c.Detail())
		}
		if m.More > 0 {
			lines = append(lines, fmt.Sprintf("… and %d more", m.More))
		}
		blocks = append(blocks, map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": cut(strings.Join(lines, "\n"), 3000)}})
	}
	if m.RunURL != "" {
		blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{map[string]any{"type": "button",
			"text": map[string]any{"type": "plain_text", "text": "Review the run"}, "url": m.RunURL}}})
	}
	return map[string]any{"text": cut(m.Title()+": "+m.Summary, 3000), "blocks": blocks}
}

// Discord is an execute-webhook payload: content and one embed (title
// linking to the run, description with the changes, count fields).
func (m Message) Discord() map[string]any {
	var lines []string
	for _, c := range m.Changes {
		label := c.Label()
		if c.ThumbnailURL != "" {
			label = "[" + label + "](" + c.ThumbnailURL + ")"
		}
		lines = append(lines, "• "+label+": "+c.Detail())
	}
	if m.More > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more", m.More))
	}
	embed := map[string]any{"title": cut(m.Title(), 256), "description": cut(m.Summary+commitLine(m, "`")+"\n\n"+strings.Join(lines, "\n"), 4096),
		"color": m.color(), "fields": []any{
			map[string]any{"name": "Changed", "value": fmt.Sprint(m.Counts.Failed), "inline": true},
			map[string]any{"name": "New", "value": fmt.Sprint(m.Counts.New), "inline": true},
			map[string]any{"name": "Passed", "value": fmt.Sprint(m.Counts.Passed), "inline": true},
		}}
	if m.RunURL != "" {
		embed["url"] = m.RunURL
	}
	if m.FinishedAt != nil {
		embed["timestamp"] = m.FinishedAt.UTC().Format(time.RFC3339)
	}
	return map[string]any{"content": cut(m.Title()+": "+m.Summary, 2000), "embeds": []any{embed},
		"allowed_mentions": map[string]any{"parse": []any{}}}
}

// Teams is a workflow webhook's payload: a message with one Adaptive Card
// attachment (title, summary, counts, changes, a button to the run).
func (m Message) Teams() map[string]any {
	body := []any{
		map[string]any{"type": "TextBlock", "text": m.Title(), "weight": "Bolder", "size": "Medium", "wrap": true},
		map[string]any{"type": "TextBlock", "text": m.Summary + commitLine(m, ""), "wrap": true},
		map[string]any{"type": "FactSet", "facts": []any{
			map[string]any{"title": "Changed", "value": fmt.Sprint(m.Counts.Failed)},
			map[string]any{"title": "New", "value": fmt.Sprint(m.Counts.New)},
			map[string]any{"title": "Missing", "value": fmt.Sprint(m.Counts.Missing)},
			map[string]any{"title": "Errors", "value": fmt.Sprint(m.Counts.Error)},
			map[string]any{"title": "Passed", "value": fmt.Sprint(m.Counts.Passed)},
		}},
	}
	for _, c := range m.Changes {
		label := c.Label()
		if c.ThumbnailURL != "" {
			label = "[" + label + "](" + c.ThumbnailURL + ")"
		}
		body = append(body, map[string]any{"type": "TextBlock", "text": "- " + label + ": " + c.Detail(), "wrap": true, "spacing": "None"})
	}
	if m.More > 0 {
		body = append(body, map[string]any{"type": "TextBlock", "text": fmt.Sprintf("… and %d more", m.More), "wrap": true, "isSubtle": true})
	}
	card := map[string]any{"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
		"version": "1.4", "body": body}
	if m.RunURL != "" {
		card["actions"] = []any{map[string]any{"type": "Action.OpenUrl", "title": "Review the run", "url": m.RunURL}}
	}
	return map[string]any{"type": "message", "attachments": []any{map[string]any{
		"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": nil, "content": card}}}
}

// Subject is an email's subject line.
func (m Message) Subject() string {
	return cut(m.Title()+" — "+m.Summary, 200)
}

func commitLine(m Message, quote string) string {
	if m.Commit == "" {
		return ""
	}
	return "\nCommit " + quote + m.Commit + quote
}

// cut shortens s to at most n runes.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
