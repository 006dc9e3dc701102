package env

import (
	"fmt"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/ratelimit"
)

// Default caps of the per-key work budget (jobs.WorkBudget): pieces of each kind of work
// running at once per API key (across replicas) and per api replica (all keys).
var budgetDefaults = []struct {
	kind, name      string
	perKey, replica int
	retry           time.Duration
}{
	{jobs.WorkDiscover, "DISCOVER", 2, 8, 10 * time.Second},
	{jobs.WorkPreview, "PREVIEW", 1, 4, 5 * time.Second},
	{jobs.WorkAuthTest, "AUTH_TEST", 1, 16, 15 * time.Second},
	{jobs.WorkArchive, "ARCHIVE", 2, 16, 10 * time.Second},
	{jobs.WorkMCPSession, "MCP_SESSION", 4, 256, 10 * time.Second},
	{jobs.WorkSession, "SESSION", 4, 64, 2 * time.Second},
}

// DefaultStreamsPerKey is SNAPQ_SSE_MAX_STREAMS_PER_KEY's default.
const DefaultStreamsPerKey = 20

// Budget reads the work budget's caps: SNAPQ_BUDGET_<KIND>_PER_KEY and
// SNAPQ_BUDGET_<KIND>_PER_REPLICA for DISCOVER (sitemap reads and discovery crawls),
// PREVIEW (rule previews), AUTH_TEST, ARCHIVE and MCP_SESSION (open MCP sessions on
// /mcp), and SNAPQ_SSE_MAX_STREAMS_PER_KEY for event streams (their replica cap is
// SNAPQ_SSE_MAX_STREAMS, web.SSEConfig). 0: no cap.
func Budget(r *Reader) map[string]ratelimit.Cap {
	caps := map[string]ratelimit.Cap{}
	for _, d := range budgetDefaults {
		c := ratelimit.Cap{PerKey: r.Int("SNAPQ_BUDGET_"+d.name+"_PER_KEY", d.perKey),
			PerReplica: r.Int("SNAPQ_BUDGET_"+d.name+"_PER_REPLICA", d.replica), RetryAfter: d.retry}
		r.nonNegative("SNAPQ_BUDGET_"+d.name+"_PER_KEY", c.PerKey)
		r.nonNegative("SNAPQ_BUDGET_"+d.name+"_PER_REPLICA", c.PerReplica)
		caps[d.kind] = c
	}
	streams := r.Int("SNAPQ_SSE_MAX_STREAMS_PER_KEY", DefaultStreamsPerKey)
	r.nonNegative("SNAPQ_SSE_MAX_STREAMS_PER_KEY", streams)
	caps[jobs.WorkStream] = ratelimit.Cap{PerKey: streams, RetryAfter: 10 * time.Second}
	return caps
}

// BudgetVariables names every variable Budget reads (for the docs' check).
func BudgetVariables() []string {
	var out []string
	for _, d := range budgetDefaults {
		out = append(out, "SNAPQ_BUDGET_"+d.name+"_PER_KEY", "SNAPQ_BUDGET_"+d.name+"_PER_REPLICA")
	}
	return append(out, "SNAPQ_SSE_MAX_STREAMS_PER_KEY")
}

func (r *Reader) nonNegative(name string, n int) {
	if n < 0 {
		r.errs = append(r.errs, fmt.Errorf("%s=%d: want 0 (no cap) or more", name, n))
	}
}
