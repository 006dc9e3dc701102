package cli

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/snapq/snapq/client"
)

// Reports a CI job keeps next to a gated run: JUnit XML for the CI's test
// view and Markdown for a job summary or a pull-request comment.

// comparisonName is one comparison's name in a report:
// "viewport 1280x720, segment 2".
func comparisonName(c client.Comparison) string {
	return fmt.Sprintf("viewport %s, segment %d", c.Viewport, c.Segment)
}

// comparisonOutcome is how a gate reads a comparison: "pass", "fail" (a
// reviewer must look) or "error" (the capture or comparison broke).
func comparisonOutcome(c client.Comparison) string {
	switch {
	case c.Status == "error":
		return "error"
	case c.Approved || c.Status == "passed":
		return "pass"
	default: // failed, new, missing
		return "fail"
	}
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Props     []junitProp `xml:"properties>property,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitReport is a finished run as JUnit XML: one test suite per run, one
// test case per comparison (class: the target), a failure for a comparison
// a reviewer must look at, an error for one that broke.
func junitReport(r *client.Run) ([]byte, error) {
	s := junitSuite{Name: "snapq run " + r.ID, Timestamp: r.CreatedAt.UTC().Format(time.RFC3339)}
	s.Props = append(s.Props, junitProp{"status", r.Status}, junitProp{"review_url", r.ReviewURL})
	for _, p := range []struct {
		name string
		v    *string
	}{{"branch", r.Branch}, {"base_branch", r.BaseBranch}, {"commit", r.Commit}, {"base_url", r.BaseURL},
		{"compare_to_base_url", r.CompareToBaseURL}} {
		if p.v != nil && *p.v != "" {
			s.Props = append(s.Props, junitProp{p.name, *p.v})
		}
	}
	for _, c := range r.Comparisons {
		tc := junitCase{Name: comparisonName(c), Classname: c.Target}
		detail := fmt.Sprintf("status %s, diff ratio %.4f (threshold %.4f)", c.Status, c.DiffRatio, c.Threshold)
		if c.Message != "" {
			detail += ": " + c.Message
		}
		if c.Diff != nil && c.Diff.URL != "" {
			detail += "\ndiff: " + c.Diff.URL
		}
		switch comparisonOutcome(c) {
		case "fail":
			tc.Failure = &junitProblem{Message: c.Status, Type: c.Status, Text: detail}
			s.Failures++
		case "error":
			tc.Error = &junitProblem{Message: firstNonEmpty(c.Message, c.Status), Type: c.Status, Text: detail}
			s.Errors++
		default:
			tc.SystemOut = detail
		}
		s.Cases = append(s.Cases, tc)
	}
	s.Tests = len(s.Cases)
	dur := ""
	if r.FinishedAt != nil {
		dur = fmt.Sprintf("%.3f", r.FinishedAt.Sub(r.CreatedAt).Seconds())
	}
	doc := junitSuites{Name: "snapq", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: dur, Suites: []junitSuite{s}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// markdownReport is a finished run as Markdown: the verdict and counts, the
// review link, then a table of every comparison a reviewer must look at
// (passed ones are counted, not listed).
func markdownReport(r *client.Run) []byte {
	var b bytes.Buffer
	icon := map[string]string{client.RunPassed: "✅", client.RunApproved: "✅", client.RunFailed: "❌",
		client.RunNeedsReview: "🟡", client.RunError: "⚠️"}[r.Status]
	fmt.Fprintf(&b, "### %s snapq visual regression: %s\n\n", strings.TrimSpace(icon+" "), r.Status)
	fmt.Fprintf(&b, "%s. [Review the run](%s)\n\n", gateSummary(r.Counts), r.ReviewURL)
	if r.Branch != nil && *r.Branch != "" {
		base := "main"
		if r.BaseBranch != nil && *r.BaseBranch != "" {
			base = *r.BaseBranch
		}
		fmt.Fprintf(&b, "Branch `%s` against `%s`", mdCode(*r.Branch), mdCode(base))
		if r.Commit != nil && *r.Commit != "" {
			fmt.Fprintf(&b, " at `%s`", mdCode(*r.Commit))
		}
		b.WriteString(".\n\n")
	}
	var rows []client.Comparison
	for _, c := range r.Comparisons {
		if comparisonOutcome(c) != "pass" {
			rows = append(rows, c)
		}
	}
	if len(rows) == 0 {
		return b.Bytes()
	}
	b.WriteString("| Target | Viewport | Segment | Status | Diff | Message |\n|---|---|---:|---|---:|---|\n")
	for _, c := range rows {
		diff := fmt.Sprintf("%.2f %%", c.DiffRatio*100)
		if c.Diff != nil && c.Diff.URL != "" {
			diff = fmt.Sprintf("[%s](%s)", diff, c.Diff.URL)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", mdCell(c.Target), mdCell(c.Viewport), c.Segment,
			c.Status, diff, mdCell(c.Message))
	}
	return b.Bytes()
}

// mdCell keeps a page- or user-controlled string inside one table cell.
func mdCell(s string) string {
	s = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", "&lt;", ">", "&gt;").Replace(s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// mdCode keeps a string inside one inline code span.
func mdCode(s string) string { return strings.NewReplacer("`", "'", "\n", " ").Replace(s) }

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// writeReports writes the run's reports to the files the flags name (none
// when both are empty), creating their directories.
func writeReports(r *client.Run, junitPath, markdownPath string) error {
	if junitPath != "" {
		out, err := junitReport(r)
		if err != nil {
			return err
		}
		if err := writeFileDirs(junitPath, out); err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	if markdownPath != "" {
		if err := writeFileDirs(markdownPath, markdownReport(r)); err != nil {
			return fmt.Errorf("--markdown: %w", err)
		}
	}
	return nil
}

func writeFileDirs(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
