package house

import (
	"os/exec"
	"strings"
	"testing"
)

// forbiddenDeps is, by package, what must not be among its dependencies (`go list -deps`):
// the domain core speaks of captures and queues only through its own types and
// interfaces (CONTRIBUTING.md: only queue knows asynq; jobs never imports the features
// built on it; capture's HTML codec is injected, capture/markup).
var forbiddenDeps = []struct {
	pkg       string
	forbidden []string // import paths; a dependency under one of them is refused
}{
	{"./jobs", []string{
		"github.com/hibiken/asynq",
		"github.com/robfig/cron",
		"github.com/snapq/snapq/egress",
		"github.com/snapq/snapq/queue",
		"github.com/snapq/snapq/sitemap",
		"github.com/snapq/snapq/discover", // sitemaps and crawls live there
		"golang.org/x/net/html",
	}},
	{"./regression", []string{"github.com/hibiken/asynq", "github.com/snapq/snapq/queue"}},
}

// TestDomainDependencies fails naming each forbidden package a domain package depends on,
// directly or not.
func TestDomainDependencies(t *testing.T) {
	t.Parallel()
	for _, tt := range forbiddenDeps {
		cmd := exec.Command("go", "list", "-deps", tt.pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tt.pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed %d packages: %q", tt.pkg, len(deps), deps)
		}
		for _, dep := range deps {
			for _, f := range tt.forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s (go mod why -m or go list -deps shows the path); it must not", tt.pkg, dep)
				}
			}
		}
	}
}
