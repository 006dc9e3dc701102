package regression

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/snapq/snapq/jobs"
)

// Branches: a run may belong to a branch of the code under test (a pull
// request's preview). It compares against the branch's own approved
// baselines where they exist, else its base branch's; approving it writes
// branch baselines only, and merging the branch promotes them to the base
// branch. Baselines of the suite's main branch are stored under the key ""
// (MainLine), so a suite's baselines from before branches existed stay its
// main branch's whatever that branch is called.

// DefaultMainBranch is a suite's main_branch when none is given.
const DefaultMainBranch = "main"

// MainLine is the baseline branch key of a suite's main branch.
const MainLine = ""

// MaxBranchLength bounds a branch name (git allows longer, no CI does).
const MaxBranchLength = 255

// RunInput is the optional body of POST /v1/suites/:id/runs.
type RunInput struct {
	Branch     string `json:"branch"`
	BaseBranch string `json:"base_branch"`
	Commit     string `json:"commit"`
	BaseURL    string `json:"base_url"`
	// PullRequest is the pull request (GitHub) or merge request iid
	// (GitLab) whose comment the run's report edits.
	PullRequest int `json:"pull_request"`
	// CompareToBaseURL makes the run an environment pair (envpair.go).
	CompareToBaseURL string `json:"compare_to_base_url"`
}

// RunOptions are a run's validated branch, commit and origin.
type RunOptions struct {
	// Branch is the run's branch; "" runs on the suite's main branch.
	Branch string
	// BaseBranch is what Branch falls back to and merges into; "" is the
	// suite's main branch.
	BaseBranch string
	Commit     string
	// BaseURL, when set, replaces the scheme, host and port of every target.
	BaseURL string
	// PullRequest numbers the pull or merge request (0: none).
	PullRequest int
	// DashboardURL is the API's base URL the run was started under; a
	// report links to the run's page below it. Not part of the body.
	DashboardURL string
	// CompareTo, when set, makes the run an environment pair: every target
	// is captured on this origin too, and the two captures are diffed
	// with each other instead of with baselines (envpair.go).
	CompareTo string
}

var commitPattern = regexp.MustCompile(`^[0-9a-fA-F]{7,64}$`)

// ParseRunOptions decodes and validates a run request's body (empty: no
// options), naming every bad field.
func ParseRunOptions(body []byte) (RunOptions, error) {
	var in RunInput
	var errs jobs.FieldErrors
	if len(strings.TrimSpace(string(body))) > 0 {
		if !jobs.DecodeStrict(body, &in, "", &errs) || len(errs) > 0 {
			return RunOptions{}, jobs.ValidationErrors(errs)
		}
	}
	out := RunOptions{Branch: strings.TrimSpace(in.Branch), BaseBranch: strings.TrimSpace(in.BaseBranch),
		Commit: strings.TrimSpace(in.Commit), PullRequest: in.PullRequest}
	if in.PullRequest < 0 {
		errs.Add("invalid_option", "pull_request", "must be a pull or merge request number")
	}
	checkBranch(out.Branch, "branch", &errs)
	checkBranch(out.BaseBranch, "base_branch", &errs)
	if out.BaseBranch != "" && out.Branch == "" {
		errs.Add("invalid_option", "base_branch", "give base_branch with branch")
	}
	if out.Commit != "" && !commitPattern.MatchString(out.Commit) {
		errs.Add("invalid_option", "commit", "must be a commit SHA of 7-64 hexadecimal digits")
	}
	out.BaseURL = parseOrigin(in.BaseURL, "base_url", &errs)
	out.CompareTo = parseOrigin(in.CompareToBaseURL, "compare_to_base_url", &errs)
	if out.CompareTo != "" && out.CompareTo == out.BaseURL {
		errs.Add("invalid_url", "compare_to_base_url", "must be another origin than base_url: the run would compare an origin with itself")
	}
	return out, jobs.ValidationErrors(errs)
}

// parseOrigin validates an origin field ("" when not given): an absolute
// http(s) URL without path, query or credentials; it returns
// scheme://host[:port].
func parseOrigin(raw, field string, errs *jobs.FieldErrors) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs.Add("invalid_url", field, "must be an absolute http or https URL such as https://pr-42.preview.example.com")
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		errs.Add("invalid_url", field, "must be an origin only (scheme, host and port): the targets keep their paths")
	default:
		return u.Scheme + "://" + u.Host
	}
	return ""
}

// CheckBranchName is the rule for a branch name in a path or a body.
func CheckBranchName(name, field string) error {
	var errs jobs.FieldErrors
	if name == "" {
		errs.Add("required", field, "give a branch name")
	}
	checkBranch(name, field, &errs)
	return jobs.ValidationErrors(errs)
}

func checkBranch(name, field string, errs *jobs.FieldErrors) {
	if name == "" {
		return
	}
	bad := len(name) > MaxBranchLength || strings.IndexFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}) >= 0
	if bad {
		errs.Add("invalid_option", field, fmt.Sprintf("must be a branch name of 1-%d characters without spaces", MaxBranchLength))
	}
}

// MainBranchOf is the suite spec's main branch, DefaultMainBranch when unset.
func (sp SuiteSpec) MainBranchOf() string {
	if sp.MainBranch == "" {
		return DefaultMainBranch
	}
	return sp.MainBranch
}

// BranchKey is the baseline key of branch in a suite whose main branch is
// main: MainLine for the main branch (or no branch), the name otherwise.
func BranchKey(branch, main string) string {
	if branch == main {
		return MainLine
	}
	return branch
}

// BaselineBranches is the order in which a run looks for a segment's
// baseline: its own branch, then its base branch, then the main branch.
// The first is where approving the run writes.
func (r *Run) BaselineBranches() []string {
	main := r.Spec.MainBranchOf()
	var out []string
	for _, b := range []string{BranchKey(r.Branch, main), BranchKey(r.BaseBranch, main), MainLine} {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// WithBaseURL returns the targets with every URL's scheme, host and port
// replaced by those of base ("" leaves them as they are).
func WithBaseURL(ts []SuiteTarget, base string) ([]SuiteTarget, error) {
	if base == "" {
		return ts, nil
	}
	b, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	out := make([]SuiteTarget, len(ts))
	for i, t := range ts {
		u, err := url.Parse(t.URL)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t.Name, err)
		}
		u.Scheme, u.Host = b.Scheme, b.Host
		t.URL = u.String()
		out[i] = t
	}
	return out, nil
}
