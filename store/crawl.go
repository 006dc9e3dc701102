package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

var _ jobs.CrawlStore = (*Store)(nil)

// CompleteCrawlJob implements jobs.CrawlStore. The job's success, its artifacts and the
// pages its links add are one transaction: the batch never looks complete between the
// page's completion and its children's insert. The batch row's lock (taken after the
// owner's, as CreateBatchLimited takes it) makes the count against max_pages and the
// insert one step; the unique (batch_id, url_key) index holds each URL once regardless.
func (s *Store) CompleteCrawlJob(ctx context.Context, id string, attempt int, result *jobs.Result, arts []*jobs.Artifact,
	links []string, maxInFlight int) (bool, int, error) {
	res, err := json.Marshal(result)
	if err != nil {
		return false, 0, err
	}
	var ok bool
	var batchID, name, url string
	var added []jobChanged
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ok, added = false, nil
		var depth *int32
		err := tx.QueryRow(ctx, `UPDATE jobs SET status = 'succeeded', result = $3, error_code = NULL,
			error_message = NULL, finished_at = now(), updated_at = now()
			WHERE id = $1 AND status = 'running' AND attempts = $2 RETURNING batch_id, name, url, depth`, id, attempt, res).
			Scan(&batchID, &name, &url, &depth)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := replaceArtifacts(ctx, tx, id, arts); err != nil {
			return err
		}
		ok = true
		if depth != nil {
			if err := recordFinalKey(ctx, tx, id, result); err != nil {
				return err
			}
			if added, err = addCrawlPages(ctx, tx, batchID, id, int(*depth), links, maxInFlight); err != nil {
				return err
			}
		}
		return finishBatch(ctx, tx, batchID)
	})
	if err != nil {
		return false, 0, fmt.Errorf("complete crawl job %s: %w", id, unavailable(err))
	}
	if ok {
		s.publishJobs(ctx, batchID, append([]jobChanged{{id: id, name: name, url: url, status: string(jobs.StatusSucceeded), attempt: attempt}}, added...)...)
	}
	return ok, len(added), nil
}

// addCrawlPages adds the pages parent's links lead to (jobs.Crawl.Frontier) that batchID
// does not hold yet, within its max_pages and the owner's in-flight cap, as held queued
// jobs (the dispatcher enqueues them). A batch with a canceled job was canceled: it adds
// nothing.
func addCrawlPages(ctx context.Context, tx pgx.Tx, batchID, parent string, depth int, links []string, maxInFlight int) ([]jobChanged, error) {
	c, owner, err := lockCrawl(ctx, tx, batchID, maxInFlight)
	if c == nil || err != nil {
		return nil, err
	}
	pages := c.Frontier(depth, links)
	if len(pages) == 0 {
		return nil, nil
	}
	room, nextSeq, canceled, err := crawlRoom(ctx, tx, batchID, owner, c.MaxPages, maxInFlight)
	if canceled || err != nil {
		return nil, err
	}
	have, err := knownCrawlPages(ctx, tx, batchID, pages)
	if err != nil {
		return nil, err
	}
	var out []jobChanged
	var skipped []string
	for _, p := range pages {
		if have[p.Key] {
			continue
		}
		if len(out) >= room {
			skipped = append(skipped, p.Key)
			continue
		}
		c, added, err := insertCrawlPage(ctx, tx, parent, nextSeq, p)
		if err != nil {
			return nil, err
		}
		if added {
			nextSeq++
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE batches SET total = total + $2 WHERE id = $1`, batchID, len(out)); err != nil {
			return nil, fmt.Errorf("count added pages: %w", err)
		}
	}
	if err := recordCrawlSkipped(ctx, tx, batchID, skipped); err != nil {
		return nil, err
	}
	return out, nil
}

// lockCrawl locks the batch's owner (when its in-flight cap applies: owner is then
// returned) and the batch, and returns the batch's crawl; nil for a batch that is not a
// crawl.
func lockCrawl(ctx context.Context, tx pgx.Tx, batchID string, maxInFlight int) (*jobs.Crawl, string, error) {
	var owner string
	if err := tx.QueryRow(ctx, `SELECT coalesce(api_key_id::text, '') FROM batches WHERE id = $1`, batchID).Scan(&owner); err != nil {
		return nil, "", fmt.Errorf("read batch %s: %w", batchID, err)
	}
	if maxInFlight > 0 && owner != "" {
		if err := lockOwner(ctx, tx, owner); err != nil {
			return nil, "", err
		}
	} else {
		owner = "" // no cap to count against
	}
	var raw []byte
	if err := tx.QueryRow(ctx, `SELECT crawl FROM batches WHERE id = $1 FOR UPDATE`, batchID).Scan(&raw); err != nil {
		return nil, "", fmt.Errorf("lock batch %s: %w", batchID, err)
	}
	if raw == nil {
		return nil, "", nil
	}
	var c jobs.Crawl
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, "", fmt.Errorf("batch %s crawl: %w", batchID, err)
	}
	return &c, owner, nil
}

// crawlRoom is how many jobs the batch may still add (within maxPages and, when owner is
// set, the owner's in-flight cap; it may be negative), the next job's seq, and whether the
// batch has a canceled job.
func crawlRoom(ctx context.Context, tx pgx.Tx, batchID, owner string, maxPages, maxInFlight int) (room, nextSeq int, canceled bool, err error) {
	var held int
	if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(max(seq), -1) + 1, bool_or(status = 'canceled')
		FROM jobs WHERE batch_id = $1`, batchID).Scan(&held, &nextSeq, &canceled); err != nil {
		return 0, 0, false, fmt.Errorf("count batch %s: %w", batchID, err)
	}
	room = maxPages - held
	if owner != "" {
		n, err := countUnfinished(ctx, tx, owner)
		if err != nil {
			return 0, 0, false, err
		}
		room = min(room, maxInFlight-n)
	}
	return room, nextSeq, canceled, nil
}

// knownCrawlPages returns which of pages the batch holds: by the URL its job asked for
// or the one it landed on.
func knownCrawlPages(ctx context.Context, tx pgx.Tx, batchID string, pages []jobs.CrawlPage) (map[string]bool, error) {
	keys := make([]string, len(pages))
	for i, p := range pages {
		keys[i] = p.Key
	}
	rows, err := tx.Query(ctx, `SELECT url_key FROM jobs WHERE batch_id = $1 AND url_key = ANY($2)
		UNION SELECT final_key FROM jobs WHERE batch_id = $1 AND final_key = ANY($2)`, batchID, keys)
	if err != nil {
		return nil, fmt.Errorf("known crawl pages: %w", err)
	}
	known, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("known crawl pages: %w", err)
	}
	have := make(map[string]bool, len(known))
	for _, k := range known {
		have[k] = true
	}
	return have, nil
}

// insertCrawlPage adds page p as a queued job under parent at seq; added is false when
// the batch already held its URL.
func insertCrawlPage(ctx context.Context, tx pgx.Tx, parent string, seq int, p jobs.CrawlPage) (jobChanged, bool, error) {
	c := jobChanged{id: jobs.NewID(), name: jobs.NameFromURL(p.URL), url: p.URL, status: string(jobs.StatusQueued)}
	// The child shares its parent's options (a crawl batch's jobs have no overrides).
	tag, err := tx.Exec(ctx, `INSERT INTO jobs (id, batch_id, seq, url, name, options, status, created_at, updated_at,
		options_hash, depth, parent_id, found_on, url_key)
		SELECT $1, batch_id, $2, $3, $4, options, 'queued', now(), now(), options_hash, depth + 1, id, url, $5
		FROM jobs WHERE id = $6
		ON CONFLICT (batch_id, url_key) WHERE url_key IS NOT NULL DO NOTHING`,
		c.id, seq, c.url, c.name, p.Key, parent)
	if err != nil {
		return c, false, fmt.Errorf("add crawl page %s: %w", p.URL, err)
	}
	return c, tag.RowsAffected() == 1, nil
}

// recordFinalKey records the identity of the URL a crawl page landed on when
// a redirect took it elsewhere: the frontier then holds that page too.
func recordFinalKey(ctx context.Context, tx pgx.Tx, id string, result *jobs.Result) error {
	if result == nil || result.FinalURL == "" {
		return nil
	}
	norm, err := jobs.NormalizeURL(result.FinalURL)
	if err != nil {
		return nil // not a URL the crawl could add either
	}
	if _, err := tx.Exec(ctx, `UPDATE jobs SET final_key = $2 WHERE id = $1 AND url_key IS DISTINCT FROM $2`,
		id, jobs.CrawlKey(norm)); err != nil {
		return fmt.Errorf("record final URL: %w", err)
	}
	return nil
}

// recordCrawlSkipped counts the pages a full crawl batch did not add, each URL once per
// batch, recording at most jobs.MaxCrawlSkipped of them (the batch's lock is held).
func recordCrawlSkipped(ctx context.Context, tx pgx.Tx, batchID string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT crawl_skipped FROM batches WHERE id = $1`, batchID).Scan(&n); err != nil {
		return fmt.Errorf("read skipped pages: %w", err)
	}
	if room := jobs.MaxCrawlSkipped - n; room <= 0 {
		return nil
	} else if len(keys) > room {
		keys = keys[:room]
	}
	tag, err := tx.Exec(ctx, `INSERT INTO crawl_skipped (batch_id, url_key) SELECT $1, unnest($2::text[])
		ON CONFLICT DO NOTHING`, batchID, keys)
	if err != nil {
		return fmt.Errorf("record skipped pages: %w", err)
	}
	if tag.RowsAffected() > 0 {
		if _, err := tx.Exec(ctx, `UPDATE batches SET crawl_skipped = crawl_skipped + $2 WHERE id = $1`, batchID, tag.RowsAffected()); err != nil {
			return fmt.Errorf("count skipped pages: %w", err)
		}
	}
	return nil
}
