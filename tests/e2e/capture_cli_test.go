package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// snapq capture --sync writes a page's Markdown to stdout and a screenshot to a file, and
// prints the job view with --as json; a failed capture exits 1.
func TestCaptureSyncCLI(t *testing.T) {
	t.Parallel()
	snapqCLI(t)
	s := sharedStack(t)
	site := fixtureSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	res := s.runCLI(ctx, "capture", "--sync", site+"/", "--as", "markdown")
	if res.code != 0 || !strings.Contains(res.stdout, "#") {
		t.Fatalf("--as markdown: exit %d\nstdout:\n%.300s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}

	png := filepath.Join(t.TempDir(), "home.png")
	res = s.runCLI(ctx, "capture", "--sync", "--url", site+"/status/404", "--as", "png", "-o", png, "--set", "viewport.width=640")
	b, err := os.ReadFile(png)
	if res.code != 0 || err != nil || !strings.HasPrefix(string(b), "\x89PNG") || !strings.Contains(res.stderr, "page status 404") {
		t.Fatalf("--as png -o: exit %d, %d bytes (%v)\nstderr:\n%s", res.code, len(b), err, res.stderr)
	}

	res = s.runCLI(ctx, "capture", "--sync", site+"/")
	var job jobResp
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &job) != nil || job.Status != "succeeded" {
		t.Fatalf("--as json: exit %d\nstdout:\n%.300s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}

	res = s.runCLI(ctx, "capture", "--sync", "http://127.0.0.3:8081/", "--as", "html")
	if res.code != 1 || !strings.Contains(res.stderr, "blocked_address") {
		t.Errorf("a blocked address: exit %d, stderr %q; want 1 naming blocked_address", res.code, res.stderr)
	}
}
