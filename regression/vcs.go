package regression

import (
	"errors"
	"fmt"
	"strings"

	"github.com/snapq/snapq/vcs"
)

// VCS is a suite's code host: runs started with a commit are reported
// there as a commit status, and with a pull_request as one comment edited
// in place (the vcs package speaks the hosts' APIs). The token is
// write-only: the API never shows it.
type VCS struct {
	// Provider is "github" or "gitlab".
	Provider string `json:"provider"`
	// APIURL is the API's base URL ("": https://api.github.com or
	// https://gitlab.com/api/v4).
	APIURL string `json:"api_url,omitempty"`
	// Repo is "owner/name" on GitHub, the project id or path on GitLab.
	Repo  string `json:"repo"`
	Token string `json:"token,omitempty"`
	// Context names the status ("": snapq).
	Context string `json:"context,omitempty"`
	// GitHubMode is how a GitHub suite reports: "status" (a commit status,
	// the default) or "check" (a check run, created when the run starts
	// and updated as it settles and when it is approved; it needs a
	// GitHub App's token).
	GitHubMode string `json:"github_mode,omitempty"`
}

// Validate names what is wrong with the configuration.
func (v VCS) Validate() error {
	var problems []string
	switch v.Provider {
	case "github":
		if owner, name, ok := strings.Cut(v.Repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			problems = append(problems, `repo must be "owner/name" on GitHub`)
		}
	case "gitlab":
		if v.Repo == "" {
			problems = append(problems, "repo must be the GitLab project's id or group/name path")
		}
	default:
		problems = append(problems, `provider must be "github" or "gitlab"`)
	}
	if v.Token == "" {
		problems = append(problems, "give a token (it is never shown again)")
	}
	switch v.GitHubMode {
	case "", vcs.ModeStatus:
	case vcs.ModeCheck:
		if v.Provider != "github" {
			problems = append(problems, `github_mode "check" is for provider "github" only`)
		}
	default:
		problems = append(problems, `github_mode must be "status" or "check"`)
	}
	if len(v.Context) > 100 {
		problems = append(problems, "context must be at most 100 characters")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Public is the configuration without its token.
func (v VCS) Public() VCS {
	v.Token = ""
	return v
}

// ReviewURL is the run's page in the dashboard under base.
func ReviewURL(base, runID string) string {
	if base == "" {
		return ""
	}
	return fmt.Sprintf("%s/#/runs/%s", strings.TrimRight(base, "/"), runID)
}
