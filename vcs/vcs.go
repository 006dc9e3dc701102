package vcs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Providers.
const (
	GitHub = "github"
	GitLab = "gitlab"
)

// Default API base URLs (Config.APIURL): GitHub Enterprise is
// https://HOST/api/v3, a self-managed GitLab https://HOST/api/v4.
const (
	DefaultGitHubAPI = "https://api.github.com"
	DefaultGitLabAPI = "https://gitlab.com/api/v4"
)

// DefaultContext names the status among a commit's other checks.
const DefaultContext = "snapq"

// States of a commit status, as snapq names them; each provider has its own
// word for them (GitLab's failure is "failed").
const (
	Pending = "pending"
	Success = "success"
	Failure = "failure"
	Error   = "error"
)

// ErrRejected wraps an answer a retry cannot change (4xx but 408 and 429).
var ErrRejected = errors.New("rejected by the code host")

// Config says where and how to report.
type Config struct {
	Provider string
	// APIURL is the API's base URL; "" is the provider's public one.
	APIURL string
	// Repo is "owner/name" on GitHub, the project's id or "group/name" path on GitLab.
	Repo  string
	Token string
	// Context is the status's name (GitHub context, GitLab name); "" is DefaultContext.
	Context string
}

// Validate names what is missing or wrong.
func (c Config) Validate() error {
	switch c.Provider {
	case GitHub:
		if owner, name, ok := strings.Cut(c.Repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("repo must be owner/name on GitHub, got %q", c.Repo)
		}
	case GitLab:
		if c.Repo == "" {
			return errors.New("repo must be the GitLab project's id or group/name path")
		}
	default:
		return fmt.Errorf("provider must be %q or %q, got %q", GitHub, GitLab, c.Provider)
	}
	if c.Token == "" {
		return errors.New("give a token")
	}
	return CheckAPIURL(c.APIURL)
}

// CheckAPIURL accepts "" (the provider's public API) or an absolute https
// URL without user info. Plain http would send the token in the clear, so it
// is accepted only for a loopback host (localhost, 127.0.0.0/8, ::1): a code
// host's proxy on the same machine, or a test's fake. The egress guard still
// decides at delivery whether the address may be reached.
func CheckAPIURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return errors.New("api_url must be an absolute https URL")
	case u.User != nil:
		return errors.New("api_url must not carry user info")
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return errors.New("api_url must be https (http is accepted only for a loopback host such as 127.0.0.1): the token would travel in the clear")
	}
	return nil
}

// loopbackHost reports whether host is localhost or a loopback IP literal.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// Status is one commit status.
type Status struct {
	SHA         string
	State       string // Pending, Success, Failure or Error
	Description string // cut to 140 characters (GitHub's limit)
	TargetURL   string
}

// Client reports to one repository.
type Client struct {
	Config Config
	HTTP   *http.Client
}

func (c *Client) api() string {
	def := DefaultGitHubAPI
	if c.Config.Provider == GitLab {
		def = DefaultGitLabAPI
	}
	return strings.TrimRight(cmp.Or(c.Config.APIURL, def), "/")
}

// repoPath is "/repos/owner/name" (GitHub) or "/projects/<escaped id>" (GitLab).
func (c *Client) repoPath() string {
	if c.Config.Provider == GitLab {
		return "/projects/" + url.PathEscape(c.Config.Repo)
	}
	owner, name, _ := strings.Cut(c.Config.Repo, "/")
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name)
}

// SetStatus creates a commit status: GitHub's
// POST /repos/{owner}/{repo}/statuses/{sha} {state, target_url, description, context};
// GitLab's POST /projects/{id}/statuses/{sha} {state, name, target_url, description}.
func (c *Client) SetStatus(ctx context.Context, s Status) error {
	desc := s.Description
	if utf8.RuneCountInString(desc) > 140 {
		desc = string([]rune(desc)[:139]) + "…"
	}
	name := cmp.Or(c.Config.Context, DefaultContext)
	path := c.repoPath() + "/statuses/" + url.PathEscape(s.SHA)
	var body map[string]string
	if c.Config.Provider == GitLab {
		state := s.State
		if state == Failure || state == Error {
			state = "failed"
		}
		body = map[string]string{"state": state, "name": name, "target_url": s.TargetURL, "description": desc}
	} else {
		body = map[string]string{"state": s.State, "context": name, "target_url": s.TargetURL, "description": desc}
	}
	return c.send(ctx, http.MethodPost, path, body, nil)
}

// UpsertComment writes the run's comment on pull request (GitHub) or merge
// request iid (GitLab) number: a new one when commentID is "", else an edit
// of that one. It returns the comment's id. GitHub: POST
// /repos/{owner}/{repo}/issues/{number}/comments, PATCH
// /repos/{owner}/{repo}/issues/comments/{comment_id}; GitLab: POST
// /projects/{id}/merge_requests/{iid}/notes, PUT
// /projects/{id}/merge_requests/{iid}/notes/{note_id}.
func (c *Client) UpsertComment(ctx context.Context, number int, commentID, body string) (string, error) {
	var method, path string
	n := strconv.Itoa(number)
	switch {
	case c.Config.Provider == GitLab && commentID == "":
		method, path = http.MethodPost, c.repoPath()+"/merge_requests/"+n+"/notes"
	case c.Config.Provider == GitLab:
		method, path = http.MethodPut, c.repoPath()+"/merge_requests/"+n+"/notes/"+url.PathEscape(commentID)
	case commentID == "":
		method, path = http.MethodPost, c.repoPath()+"/issues/"+n+"/comments"
	default:
		method, path = http.MethodPatch, c.repoPath()+"/issues/comments/"+url.PathEscape(commentID)
	}
	var out struct {
		ID json.Number `json:"id"`
	}
	if err := c.send(ctx, method, path, map[string]string{"body": body}, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("%s %s: the answer has no comment id", method, path)
	}
	return out.ID.String(), nil
}

func (c *Client) send(ctx context.Context, method, path string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.api()+path, bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "snapq")
	if c.Config.Provider == GitLab {
		req.Header.Set("PRIVATE-TOKEN", c.Config.Token)
	} else {
		req.Header.Set("Authorization", "Bearer "+c.Config.Token)
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		err := fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg[:min(len(msg), 300)]))
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout &&
			resp.StatusCode != http.StatusTooManyRequests {
			return fmt.Errorf("%w: %w", ErrRejected, err)
		}
		return err
	}
	if out != nil {
		if err := json.Unmarshal(msg, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// Summary is a run's counts as a status shows them: "3 changed, 1 new, 120
// passed", with missing and errors only when there are some.
func Summary(changed, added, passed, missing, errs int) string {
	out := fmt.Sprintf("%d changed, %d new, %d passed", changed, added, passed)
	if missing > 0 {
		out += fmt.Sprintf(", %d missing", missing)
	}
	if errs > 0 {
		out += fmt.Sprintf(", %d error", errs)
	}
	return out
}
