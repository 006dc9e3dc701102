package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

// dispatchLockSpace is the first key of the advisory lock that makes
// dispatch passes of every api and worker replica take turns: each pass
// counts the dispatched jobs after the previous one committed, so replicas
// together never go past the depth. The second key is a hash of the schema,
// so deployments (or tests) sharing a database in their own schemas do not
// wait for each other.
// The interactive lane's passes take a lock of their own
// (dispatchLockSpace+1): the two lanes count and mark disjoint jobs, so a
// synchronous capture's pass never waits behind a long pass over a
// 20,000-job backlog.
const dispatchLockSpace = 7_353_003

// DispatchHeld implements jobs.DispatchStore. In one transaction, under
// the dispatch lock, it counts the dispatched unfinished jobs, and if fewer than
// depth, marks up to the difference held jobs dispatched, fair across owners
// (see dispatchSQL), and returns them in the order to enqueue them.
func (s *Store) DispatchHeld(ctx context.Context, depth int) ([]jobs.Dispatch, error) {
	return s.dispatchLane(ctx, depth, false)
}

// DispatchInteractive implements jobs.LaneStore: DispatchHeld for the jobs
// of the interactive lane, counted against their own depth.
func (s *Store) DispatchInteractive(ctx context.Context, depth int) ([]jobs.Dispatch, error) {
	return s.dispatchLane(ctx, depth, true)
}

var _ jobs.LaneStore = (*Store)(nil)

// dispatchLane dispatches the held jobs of one lane (interactive or not).
func (s *Store) dispatchLane(ctx context.Context, depth int, interactive bool) ([]jobs.Dispatch, error) {
	var out []jobs.Dispatch
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		lock := dispatchLockSpace
		if interactive {
			lock++
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, lock); err != nil {
			return fmt.Errorf("dispatch lock: %w", err)
		}
		var inFlight int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs
			WHERE status IN ('queued', 'running') AND dispatched_at IS NOT NULL AND interactive = $1`, interactive).Scan(&inFlight); err != nil {
			return fmt.Errorf("count dispatched jobs: %w", err)
		}
		room := depth - inFlight
		if room <= 0 {
			return nil
		}
		rows, err := tx.Query(ctx, dispatchSQL, room, interactive)
		if err != nil {
			return fmt.Errorf("dispatch held jobs: %w", err)
		}
		type picked struct {
			d     jobs.Dispatch
			share int64
		}
		ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (picked, error) {
			var p picked
			var opts, shared []byte
			if err := r.Scan(&p.d.ID, &p.d.URL, &p.d.Owner, &opts, &shared, &p.share); err != nil {
				return p, err
			}
			p.d.Interactive = interactive
			var err error
			if shared != nil { // the batch's options, stored once (migration 0006)
				p.d.Options, err = jobs.NewSharedOptions(shared).Resolve(opts)
			} else {
				err = json.Unmarshal(opts, &p.d.Options)
			}
			if err != nil {
				err = fmt.Errorf("job %s options: %w", p.d.ID, err)
			}
			return p, err
		})
		if err != nil {
			return fmt.Errorf("dispatch held jobs: %w", err)
		}
		sort.SliceStable(ps, func(i, j int) bool { return lessShare(ps[i].share, ps[j].share, ps[i].d.Owner, ps[j].d.Owner) })
		out = make([]jobs.Dispatch, len(ps))
		for i, p := range ps {
			out[i] = p.d
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// dispatchSQL picks $1 held jobs by water-filling: every owner with held jobs
// offers its first $1 in its own order (oldest batch first, then target
// order); an owner's i-th candidate gets the share "dispatched unfinished
// jobs of the owner + i", and the $1 lowest shares win (ties: by owner).
// An owner with nothing in flight therefore takes the free room ahead of one
// that holds most of the depth, until their shares are level; with equal
// shares it is plain round-robin. Owners are found by a loose index scan of
// jobs_held_idx (one probe per owner, however many jobs each holds).
// $2 picks the lane: interactive jobs (POST /v1/capture and the doors built
// on it) share their own depth fair across owners the same way.
// Candidates are locked FOR UPDATE SKIP LOCKED: a job a cancel or another
// writer holds is skipped, not waited for.
const dispatchSQL = `
WITH RECURSIVE owners AS (
    (SELECT owner FROM jobs WHERE status = 'queued' AND dispatched_at IS NULL AND interactive = $2 ORDER BY owner LIMIT 1)
    UNION ALL
    SELECT (SELECT j.owner FROM jobs j WHERE j.status = 'queued' AND j.dispatched_at IS NULL AND j.interactive = $2 AND j.owner > o.owner
            ORDER BY j.owner LIMIT 1)
    FROM owners o WHERE o.owner IS NOT NULL
), inflight AS (
    SELECT owner, count(*) AS n FROM jobs
    WHERE status IN ('queued', 'running') AND dispatched_at IS NOT NULL AND interactive = $2 GROUP BY owner
), candidates AS (
    SELECT c.id, c.owner, c.created_at, c.batch_id, c.seq, coalesce(i.n, 0) AS base
    FROM owners o
    LEFT JOIN inflight i ON i.owner = o.owner
    CROSS JOIN LATERAL (
        SELECT j.id, j.owner, j.created_at, j.batch_id, j.seq FROM jobs j
        WHERE j.owner = o.owner AND j.status = 'queued' AND j.dispatched_at IS NULL AND j.interactive = $2
        ORDER BY j.created_at, j.batch_id, j.seq
        LIMIT $1
        FOR UPDATE OF j SKIP LOCKED
    ) c
    WHERE o.owner IS NOT NULL
), picked AS (
    SELECT id, share FROM (
        SELECT id, owner, base + row_number() OVER (PARTITION BY owner ORDER BY created_at, batch_id, seq) AS share
        FROM candidates
    ) ranked
    ORDER BY share, owner
    LIMIT $1
)
UPDATE jobs j SET dispatched_at = now(), updated_at = now()
FROM picked p WHERE j.id = p.id
RETURNING j.id, j.url, j.owner, j.options, (SELECT b.job_options FROM batches b WHERE b.id = j.batch_id), p.share`

// lessShare orders dispatched jobs by share, then owner.
func lessShare(a, b int64, ownerA, ownerB string) bool {
	if a != b {
		return a < b
	}
	return ownerA < ownerB
}
