package regression

import (
	"strings"
	"testing"

	"github.com/snapq/snapq/vcs"
)

func TestCheckOf(t *testing.T) {
	counts := RunCounts{Total: 3, Passed: 2, Failed: 1}
	tests := []struct {
		name, link           string
		status               RunStatus
		wantStatus, wantConc string
	}{
		{name: "running", status: RunRunning, link: "l", wantStatus: vcs.CheckInProgress},
		{name: "passed", status: RunPassed, link: "l", wantStatus: vcs.CheckCompleted, wantConc: vcs.ConclusionSuccess},
		{name: "approved", status: RunApproved, link: "l", wantStatus: vcs.CheckCompleted, wantConc: vcs.ConclusionSuccess},
		{name: "failed", status: RunFailed, link: "l", wantStatus: vcs.CheckCompleted, wantConc: vcs.ConclusionFailure},
		{name: "needs review", status: RunNeedsReview, link: "l", wantStatus: vcs.CheckCompleted, wantConc: vcs.ConclusionActionRequired},
		{name: "needs review without a link", status: RunNeedsReview, wantStatus: vcs.CheckCompleted, wantConc: vcs.ConclusionFailure},
		{name: "error", status: RunError, link: "l", wantStatus: vcs.CheckCompleted, wantConc: vcs.ConclusionFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := CheckOf(&Run{ID: "r1", Status: tt.status, Commit: "abc1234", Counts: counts}, "site", tt.link)
			if ch.Status != tt.wantStatus || ch.Conclusion != tt.wantConc || ch.SHA != "abc1234" || ch.ExternalID != "r1" {
				t.Fatalf("check %+v; want %s/%s", ch, tt.wantStatus, tt.wantConc)
			}
			if tt.status != RunRunning && !strings.Contains(ch.Title, "1 changed, 0 new, 2 passed") {
				t.Fatalf("title %q", ch.Title)
			}
		})
	}
}

func TestVCSGitHubMode(t *testing.T) {
	for _, tt := range []struct {
		v  VCS
		ok bool
	}{
		{VCS{Provider: "github", Repo: "a/b", Token: "t"}, true},
		{VCS{Provider: "github", Repo: "a/b", Token: "t", GitHubMode: "check"}, true},
		{VCS{Provider: "github", Repo: "a/b", Token: "t", GitHubMode: "status"}, true},
		{VCS{Provider: "github", Repo: "a/b", Token: "t", GitHubMode: "checks"}, false},
		{VCS{Provider: "gitlab", Repo: "1", Token: "t", GitHubMode: "check"}, false},
	} {
		if err := tt.v.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: %v", tt.v, err)
		}
	}
}
