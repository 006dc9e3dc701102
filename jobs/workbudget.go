package jobs

import "context"

// Work outside the capture queue. A key's request can make the api itself fetch, parse,
// compute or hold a connection: read a sitemap, crawl a site for a suite's discovery,
// preview a rule, run an auth test, build an archive, follow an event stream. Each such
// door passes one per-key budget (WorkBudget) before the work starts, and answers 429
// when the key (or the replica) already runs its share of that kind of work.

// Kinds of budgeted work (the keys of the budget's caps).
const (
	WorkDiscover = "discover"  // a sitemap read or a discovery crawl (batches, suite runs)
	WorkPreview  = "preview"   // POST /v1/suites/:id/rules/preview
	WorkAuthTest = "auth_test" // POST /v1/auth-profiles/:id/test
	WorkArchive  = "archive"   // GET /v1/batches/:id/archive, /v1/runs/:id/archive
	WorkStream   = "stream"    // GET …/events (Server-Sent Events)
	// WorkMCPSession is an open MCP session on /mcp, held from its initialize to its end.
	WorkMCPSession = "mcp_session"
	WorkSession    = "session" // POST /v1/sessions/:id/commands, while the command runs
)

// WorkBudget admits one piece of work of a kind for an owner (API key id, "" without
// auth), or refuses it with an error the api answers 429 (ratelimit.Budget implements it;
// its refusals have a BudgetRefusal method). release gives the slot back.
type WorkBudget interface {
	Acquire(ctx context.Context, owner, kind string) (release func(), err error)
}

// acquireWork takes a slot of kind for owner from b; a nil budget admits everything.
func acquireWork(ctx context.Context, b WorkBudget, owner, kind string) (func(), error) {
	if b == nil {
		return func() {}, nil
	}
	return b.Acquire(ctx, owner, kind)
}

// AcquireWork is acquireWork for the packages built on jobs (regression, authprofile).
func AcquireWork(ctx context.Context, b WorkBudget, owner, kind string) (func(), error) {
	return acquireWork(ctx, b, owner, kind)
}

// CheckInFlight refuses, before any work, a request that would add at least add jobs for
// owner when its unfinished jobs already reach max (0 or less, or no owner: no cap).
// The transaction that writes the jobs checks again, exactly; this early check keeps a
// key at its cap from making the api read sitemaps or crawl for nothing.
func CheckInFlight(ctx context.Context, counter interface {
	CountUnfinished(ctx context.Context, owner string) (int, error)
}, owner string, add, max int) error {
	if max <= 0 || owner == "" || counter == nil {
		return nil
	}
	n, err := counter.CountUnfinished(ctx, owner)
	if err != nil {
		return err
	}
	if n+add > max {
		return TooManyInFlight(n, add, max)
	}
	return nil
}
