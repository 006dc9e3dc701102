package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// Suite rules and comparison changes (regression/rules.go, changes.go).

var (
	_ regression.RuleSource = (*Store)(nil)
	_ regression.RuleStore  = (*Store)(nil)
)

// changesOf is the comparison's changes as stored: NULL for none.
func changesOf(c *regression.Comparison) []regression.Change {
	if len(c.Changes) == 0 {
		return nil
	}
	return c.Changes
}

// maskedOf is the comparison's masked regions as stored: NULL for none.
func maskedOf(c *regression.Comparison) []regression.MaskedRegion {
	if len(c.MaskedRegions) == 0 {
		return nil
	}
	return c.MaskedRegions
}

const ruleColumns = `id, suite_id, kind, selector, target, pattern, expires_at, created_at`

func scanRule(r pgx.CollectableRow) (*regression.Rule, error) {
	var ru regression.Rule
	err := r.Scan(&ru.ID, &ru.SuiteID, &ru.Kind, &ru.Selector, &ru.Target, &ru.Pattern, &ru.ExpiresAt, &ru.CreatedAt)
	return &ru, err
}

// CreateRule stores a rule; a suite holds at most regression.MaxSuiteRules.
func (s *Store) CreateRule(ctx context.Context, r *regression.Rule) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM suite_rules WHERE suite_id = $1`, r.SuiteID).Scan(&n); err != nil {
			return fmt.Errorf("count rules: %w", err)
		}
		if n >= regression.MaxSuiteRules {
			return fmt.Errorf("the suite has %d rules, the most it may: %w", n, jobs.ErrConflict)
		}
		_, err := tx.Exec(ctx, `INSERT INTO suite_rules (`+ruleColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			r.ID, r.SuiteID, r.Kind, r.Selector, r.Target, r.Pattern, r.ExpiresAt, r.CreatedAt)
		if err != nil {
			return fmt.Errorf("insert rule: %w", err)
		}
		return nil
	})
}

// ListRules returns a suite's rules, oldest first, expired ones included.
func (s *Store) ListRules(ctx context.Context, suiteID string) ([]*regression.Rule, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+ruleColumns+` FROM suite_rules WHERE suite_id = $1 ORDER BY created_at, id`, suiteID)
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	return pgx.CollectRows(rows, scanRule)
}

// GetRule returns one rule, or jobs.ErrNotFound.
func (s *Store) GetRule(ctx context.Context, id string) (*regression.Rule, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+ruleColumns+` FROM suite_rules WHERE id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("get rule: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRule)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	return r, err
}

// DeleteRule removes a rule; later comparisons no longer apply it.
func (s *Store) DeleteRule(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM suite_rules WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete rule: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return jobs.ErrNotFound
	}
	return nil
}

// lastRuns selects the ids of a suite's last $2 runs.
const lastRuns = `SELECT id FROM runs WHERE suite_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`

// SuppressedCounts counts, per rule id, the changes rules suppressed in the
// suite's last runs.
func (s *Store) SuppressedCounts(ctx context.Context, suiteID string, runs int) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT ch->>'suppressed_by', count(*) FROM comparisons c
		CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(c.changes) = 'array' THEN c.changes ELSE '[]'::jsonb END) ch
		WHERE c.run_id IN (`+lastRuns+`) AND ch ? 'suppressed_by'
		GROUP BY 1`, suiteID, runs)
	if err != nil {
		return nil, fmt.Errorf("count suppressed changes: %w", err)
	}
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	if err != nil {
		return nil, fmt.Errorf("count suppressed changes: %w", err)
	}
	return out, nil
}

// RecentChanges returns the changes of the suite's last runs, with their
// comparisons' targets, at most limit.
func (s *Store) RecentChanges(ctx context.Context, suiteID string, runs, limit int) ([]regression.TargetChange, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.target, ch, c.run_id, c.viewport, c.approved_at IS NOT NULL, c.segment FROM comparisons c
		CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(c.changes) = 'array' THEN c.changes ELSE '[]'::jsonb END) ch
		WHERE c.run_id IN (`+lastRuns+`) LIMIT $3`, suiteID, runs, limit)
	if err != nil {
		return nil, fmt.Errorf("list recent changes: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (regression.TargetChange, error) {
		var tc regression.TargetChange
		err := r.Scan(&tc.Target, &tc.Change, &tc.RunID, &tc.Viewport, &tc.Approved, &tc.Segment)
		return tc, err
	})
}

// RecentRunCount counts the suite's last runs, at most runs.
func (s *Store) RecentRunCount(ctx context.Context, suiteID string, runs int) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (`+lastRuns+`) r`, suiteID, runs).Scan(&n); err != nil {
		return 0, fmt.Errorf("count recent runs: %w", err)
	}
	return n, nil
}

// ComparisonChanges returns a comparison (without artifacts) and its changes.
func (s *Store) ComparisonChanges(ctx context.Context, id string) (*regression.Comparison, error) {
	var c regression.Comparison
	err := s.pool.QueryRow(ctx, `SELECT id, run_id, target, viewport, segment, status, checkpoint, coalesce(changes, '[]'::jsonb)
		FROM comparisons WHERE id = $1`, id).Scan(&c.ID, &c.RunID, &c.Target, &c.Viewport, &c.Segment, &c.Status, &c.Checkpoint, &c.Changes)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get comparison %s: %w", id, err)
	}
	return &c, nil
}

var _ regression.VolatilityReader = (*Store)(nil)

// runsBefore selects the ids of the suite's ($1) last $3 runs created before
// run $2, that compared target $4 at viewport $5.
const runsBefore = `SELECT r.id FROM runs r WHERE r.suite_id = $1 AND r.id <> $2
	AND r.created_at <= coalesce((SELECT created_at FROM runs WHERE id = $2), now())
	AND EXISTS (SELECT 1 FROM comparisons c WHERE c.run_id = r.id AND c.target = $4 AND c.viewport = $5 AND c.checkpoint = '')
	ORDER BY r.created_at DESC, r.id DESC LIMIT $3`

// VolatilityHistory reads what a learned mask is made from
// (regression/volatilitymask.go): how many of the suite's last runs before
// beforeRunID compared target at viewport, and at most limit of the changes
// of their final screenshots, with whether their comparisons were approved.
// Only what the learning reads of a change is read (its kind, selector,
// suppression and boxes), not its ancestry.
func (s *Store) VolatilityHistory(ctx context.Context, suiteID, beforeRunID, target, viewport string, runs, limit int) (regression.VolatilityHistory, error) {
	var h regression.VolatilityHistory
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (`+runsBefore+`) r`, suiteID, beforeRunID, runs, target, viewport).Scan(&h.Runs); err != nil {
		return h, fmt.Errorf("count the runs before %s: %w", beforeRunID, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT c.run_id, c.approved_at IS NOT NULL,
		jsonb_build_object('kind', ch->'kind', 'selector', ch->'selector', 'suppressed_by', ch->'suppressed_by',
			'box', ch->'box', 'before', ch->'before'->'box', 'after', ch->'after'->'box')
		FROM comparisons c
		CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(c.changes) = 'array' THEN c.changes ELSE '[]'::jsonb END) ch
		WHERE c.run_id IN (`+runsBefore+`) AND c.target = $4 AND c.viewport = $5 AND c.checkpoint = ''
		AND ch ? 'selector' LIMIT $6`, suiteID, beforeRunID, runs, target, viewport, limit)
	if err != nil {
		return h, fmt.Errorf("read the volatility history: %w", err)
	}
	h.Changes, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (regression.TargetChange, error) {
		tc := regression.TargetChange{Target: target, Viewport: viewport}
		var ch historyChange
		err := r.Scan(&tc.RunID, &tc.Approved, &ch)
		tc.Change = ch.change()
		return tc, err
	})
	if err != nil {
		return h, fmt.Errorf("read the volatility history: %w", err)
	}
	return h, nil
}

// historyChange is what VolatilityHistory reads of a stored change.
type historyChange struct {
	Kind         string           `json:"kind"`
	Selector     string           `json:"selector"`
	SuppressedBy string           `json:"suppressed_by"`
	Box          regression.Rect  `json:"box"`
	Before       *regression.Rect `json:"before"`
	After        *regression.Rect `json:"after"`
}

func (h historyChange) change() regression.Change {
	ch := regression.Change{Kind: h.Kind, Selector: h.Selector, SuppressedBy: h.SuppressedBy, Box: h.Box}
	if h.Before != nil {
		ch.Before = &regression.ElementState{Box: *h.Before}
	}
	if h.After != nil {
		ch.After = &regression.ElementState{Box: *h.After}
	}
	return ch
}
