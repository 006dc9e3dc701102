package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/snapq/snapq/client"
)

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
)

// snapqCLI builds cmd/snapq once for the package and returns its path.
func snapqCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		cliBin = filepath.Join(binDir, "snapq")
		cmd := exec.Command("go", "build", "-o", cliBin, "./cmd/snapq")
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			cliErr = fmt.Errorf("build snapq: %v: %s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliBin
}

// cliResult is one run of the CLI.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs the snapq CLI against the stack with stdout and stderr as
// pipes. It may run on another goroutine than the test's: a CLI that could not
// be started has code -1 and the reason in stderr.
func (s *stack) runCLI(ctx context.Context, args ...string) cliResult {
	cmd := exec.CommandContext(ctx, cliBin, append([]string{"--api", s.api}, args...)...)
	cmd.Env = cliEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		code = -1
		fmt.Fprintf(&errOut, "\nrun snapq %v: %v", args, err)
	}
	return cliResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

// goCLI runs the CLI on another goroutine; receive its result from the channel.
func (s *stack) goCLI(ctx context.Context, args ...string) <-chan cliResult {
	ch := make(chan cliResult, 1)
	go func() { ch <- s.runCLI(ctx, args...) }()
	return ch
}

// cliEnv is the environment without SNAPQ_* settings and with an empty
// config directory, so only the flags configure the CLI.
func cliEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SNAPQ_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_CONFIG_HOME="+os.TempDir()+"/snapq-cli-no-config")
}

func writeLines(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "urls.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCLICapture: `snapq capture FILE --wait --out DIR` with 30 local pages
// leaves on disk exactly the artifacts the api lists, byte for byte; a
// failing URL makes it exit 1 naming the job; --json output parses.
func TestCLICapture(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	site := fixtureSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute) // generous: the suite shares the machine
	defer cancel()

	snapqCLI(t)

	// One URL the egress guard refuses, in a batch of its own running beside the big one.
	blocked := "http://127.0.0.3:8081/" // not in SNAPQ_EGRESS_ALLOW_CIDRS: the guard refuses it
	failing := s.goCLI(ctx, "capture", writeLines(t, []string{"ok-1\t" + site + "/short", "broken\t" + blocked, "ok-2\t" + site + "/short?b"}),
		"--wait", "--json", "--set", "screenshot.mode=viewport")

	lines := []string{"# thirty local pages, named"}
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("page-%02d\t%s/short?i=%d", i, site, i))
	}
	out := filepath.Join(t.TempDir(), "shots")
	res := s.runCLI(ctx, "capture", writeLines(t, lines), "--wait", "--out", out,
		"--set", "screenshot.mode=viewport", "--set", "viewport.width=640", "--set", `outputs=["screenshot","html"]`)
	if res.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	m := regexp.MustCompile(`batch ([0-9a-f-]{36}): 30 jobs submitted`).FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatalf("stdout does not name the batch:\n%s", res.stdout)
	}
	batchID := m[1]
	if !strings.Contains(res.stderr, "batch "+batchID+": 30/30 done, 30 succeeded, 0 failed") || strings.Contains(res.stderr, "\r") {
		t.Errorf("stderr is not plain progress lines ending at 30/30:\n%q", res.stderr)
	}

	// Every artifact the api lists is on disk with its sha256, and nothing else is.
	c := s.goClient()
	want := map[string]string{"manifest.json": ""}
	for j, err := range c.ListJobs(ctx, batchID, client.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		full, err := c.GetJob(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(full.Artifacts) != 2 {
			t.Errorf("job %s has %d artifacts, want screenshot and html", j.Name, len(full.Artifacts))
		}
		for _, a := range full.Artifacts {
			want[j.Name+"/"+a.Name] = a.SHA256
		}
	}
	got := map[string]string{}
	err := filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		got[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got["manifest.json"] = ""
	if len(want) != 61 {
		t.Errorf("the api lists %d files, want 60 and the manifest", len(want))
	}
	for name, sum := range want {
		if got[name] != sum {
			t.Errorf("%s: on disk sha256 %q, the api lists %q", name, got[name], sum)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is on disk but not in the api's artifact list", name)
		}
	}
	var manifest struct {
		BatchID string `json:"batch_id"`
		Via     string `json:"via"`
		Jobs    []struct {
			Name      string `json:"name"`
			Artifacts []struct {
				Path   string `json:"path"`
				Bytes  int64  `json:"bytes"`
				SHA256 string `json:"sha256"`
				URL    string `json:"url"`
			} `json:"artifacts"`
		} `json:"jobs"`
	}
	raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	files := 0
	for _, j := range manifest.Jobs {
		for _, a := range j.Artifacts {
			files++
			if want[a.Path] != a.SHA256 || a.Bytes == 0 || !strings.HasPrefix(a.URL, s.api+"/v1/artifacts/") {
				t.Errorf("manifest entry %+v does not match the api", a)
			}
		}
	}
	if manifest.BatchID != batchID || len(manifest.Jobs) != 30 || files != 60 {
		t.Errorf("manifest: batch %s, %d jobs, %d files; want %s, 30, 60", manifest.BatchID, len(manifest.Jobs), files, batchID)
	}
	// The files came in one archive request, not one request per file.
	api := scrapeMetrics(t, s.api+"/metrics")
	if manifest.Via != "archive" || !hasLine(api, `snapq_http_requests_total{method="GET",route="/v1/batches/:id/archive",status="200"} 1`) ||
		strings.Contains(api, `route="/v1/artifacts/:id"`) {
		t.Errorf("manifest via %q; want \"archive\": one GET of the batch archive and no artifact requests:\n%s",
			manifest.Via, grepLines(api, "snapq_http_requests_total{method=\"GET\""))
	}

	// The failing URL: exit 1, the job named on stderr, --json parses.
	res = <-failing
	if res.code != 1 {
		t.Fatalf("exit %d with a failing URL, want 1\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if !regexp.MustCompile(`failed job broken \([0-9a-f-]+\) `+regexp.QuoteMeta(blocked)+`: failed: blocked_address`).MatchString(res.stderr) ||
		strings.Contains(res.stderr, "ok-1") {
		t.Errorf("stderr does not name the failed job (only it):\n%s", res.stderr)
	}
	var summary struct {
		Batch struct {
			ID     string         `json:"id"`
			Status string         `json:"status"`
			Counts map[string]int `json:"counts"`
		} `json:"batch"`
		Jobs []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Error  *struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"jobs"`
		Failed []string `json:"failed"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &summary); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, res.stdout)
	}
	if summary.Batch.Status != "completed" || summary.Batch.Counts["failed"] != 1 || len(summary.Jobs) != 3 ||
		strings.Join(summary.Failed, ",") != "broken" || summary.Jobs[1].Error == nil || summary.Jobs[1].Error.Code != "blocked_address" {
		t.Errorf("--json summary %+v", summary)
	}

	// Usage errors exit 2, before anything is submitted.
	for _, args := range [][]string{{"capture"}, {"capture", "--set", "viewport.widht=3", "--url", site}, {"batches", "get"}, {"nope"}} {
		if res := s.runCLI(ctx, args...); res.code != 2 {
			t.Errorf("snapq %v: exit %d, want 2 (usage)\n%s", args, res.code, res.stderr)
		}
	}
	// An unknown batch is the api's 404: exit 1.
	if res := s.runCLI(ctx, "batches", "get", "00000000-0000-4000-8000-000000000000"); res.code != 1 || !strings.Contains(res.stderr, "not_found") {
		t.Errorf("batches get of an unknown id: exit %d, stderr %q", res.code, res.stderr)
	}
}

// TestCLIProgressPTY: on a terminal the CLI draws a progress bar redrawn in
// place; with stdout and stderr as pipes it prints plain lines instead.
func TestCLIProgressPTY(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := fixtureSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // generous: the suite shares the machine
	defer cancel()
	var lines []string
	for i := range 4 {
		lines = append(lines, fmt.Sprintf("%s/short?i=%d", site, i))
	}
	file := writeLines(t, lines)
	args := []string{"--api", s.api, "capture", file, "--wait", "--set", "screenshot.mode=viewport"}
	snapqCLI(t)
	piped := s.goCLI(ctx, args[2:]...) // the same batch with stdout and stderr as pipes, at the same time

	cmd := exec.CommandContext(ctx, snapqCLI(t), args...)
	cmd.Env = cliEnv()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatalf("start under a pseudo-terminal: %v", err)
	}
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(&screen, tty) // ends with EIO once the CLI exits
		close(copied)
	}()
	err = cmd.Wait()
	<-copied
	tty.Close()
	if err != nil {
		t.Fatalf("snapq under a pty: %v\n%q", err, screen.String())
	}
	term := screen.String()
	// A bar redraws its line: a carriage return not followed by the
	// terminal's own \r\n, the bar's block characters, and the final count.
	if !regexp.MustCompile(`\r[^\n]`).MatchString(term) || !strings.Contains(term, "█") || !strings.Contains(term, "4/4") {
		t.Errorf("no progress bar on the terminal:\n%q", term)
	}
	if strings.Contains(term, "jobs/s, ETA") {
		t.Errorf("plain progress lines on a terminal:\n%q", term)
	}

	res := <-piped
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	if strings.ContainsAny(res.stderr+res.stdout, "\r█") {
		t.Errorf("bar drawing on a pipe:\n%q", res.stderr)
	}
	if !regexp.MustCompile(`(?m)^batch [0-9a-f-]{36}: 4/4 done, 4 succeeded, 0 failed, 0 running, [0-9.]+ jobs/s, ETA 0s$`).MatchString(res.stderr) {
		t.Errorf("no final plain progress line on a pipe:\n%s", res.stderr)
	}
}
