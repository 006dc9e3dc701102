package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

var _ jobs.CrawlStore = (*Store)(nil)

// CompleteCrawlJob implements jobs.CrawlStore in two round trips, as
// CompleteAttempt does (settle.go): one pipelined batch (BEGIN, the job's
// success, its artifacts, the key of the URL it landed on, the owner's and
// the batch's locks, the pages its links add, the batch's finish and counts)
// and the COMMIT. The job's success and the pages it adds are one
// transaction: the batch never looks complete between the page's completion
// and its children's insert. The batch row's lock (taken after the owner's,
// as CreateBatchLimited takes them) makes the count against max_pages and
// the insert one step; the unique (batch_id, url_key) index holds each URL
// once regardless. The frontier is computed from the batch's settings read
// with the job (jobs.CrawlPos.Batch): they never change.
func (s *Store) CompleteCrawlJob(ctx context.Context, job *jobs.Job, result *jobs.Result, arts []*jobs.Artifact,
	links []string, maxInFlight int) (jobs.Settled, int, error) {
	res, err := json.Marshal(result)
	if err != nil {
		return jobs.Settled{}, 0, err
	}
	id, attempt := job.ID, job.Attempts
	o := &outcome{}
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(`UPDATE jobs SET status = 'succeeded', result = $3, error_code = NULL,
		error_message = NULL, finished_at = now(), updated_at = now()
		WHERE id = $1 AND status = 'running' AND attempts = $2 RETURNING batch_id, name, url`, id, attempt, res).
		QueryRow(o.scanJob)
	queueReplaceArtifacts(b, id, arts)
	queueFinalKey(b, id, result)
	var added []jobChanged
	queueCrawlPages(b, id, job.Crawl.Pages(links), maxInFlight, &added)
	o.queueSettle(b, id, true)
	if err := s.sendOutcome(ctx, b, o, true); err != nil {
		return jobs.Settled{}, 0, fmt.Errorf("complete crawl job %s: %w", id, unavailable(err))
	}
	if !o.Current {
		return o.Settled, 0, nil
	}
	s.publishBatch(ctx, o.batchID, o.batch, append([]jobChanged{{id: id, name: o.name, url: o.url,
		status: string(jobs.StatusSucceeded), attempt: attempt}}, added...)...)
	return o.Settled, len(added), nil
}

// queueCrawlPages queues the insert of the pages (jobs.CrawlPos.Pages) that
// parent's batch does not hold yet, within its max_pages and the owner's
// in-flight cap, as held queued jobs (the dispatcher enqueues them), after
// the owner's (with maxInFlight > 0) and the batch's locks; *added gets the
// jobs added, in the pages' order. A batch that is no crawl, or has a
// canceled job (it was canceled), adds nothing.
func queueCrawlPages(b *pgx.Batch, parent string, pages []jobs.CrawlPage, maxInFlight int, added *[]jobChanged) {
	if len(pages) == 0 {
		return
	}
	if maxInFlight > 0 {
		onErr(b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext(api_key_id::text)) FROM batches
			WHERE id = (SELECT batch_id FROM jobs WHERE id = $2) AND api_key_id IS NOT NULL`, ownerLockSpace, parent), "lock owner")
	}
	onErr(b.Queue(`SELECT 1 FROM batches WHERE id = (SELECT batch_id FROM jobs WHERE id = $1) FOR UPDATE`, parent), "lock batch")
	cs := make([]jobChanged, len(pages))
	urls, keys, ids, names := make([]string, len(pages)), make([]string, len(pages)), make([]string, len(pages)), make([]string, len(pages))
	for i, p := range pages {
		cs[i] = jobChanged{id: jobs.NewID(), name: jobs.NameFromURL(p.URL), url: p.URL, status: string(jobs.StatusQueued)}
		urls[i], keys[i], ids[i], names[i] = p.URL, p.Key, cs[i].id, cs[i].name
	}
	b.Queue(addCrawlPagesSQL, parent, urls, keys, ids, names, maxInFlight, jobs.MaxCrawlSkipped).QueryRow(func(row pgx.Row) error {
		var got []string
		if err := row.Scan(&got); err != nil {
			return fmt.Errorf("add crawl pages: %w", err)
		}
		in := make(map[string]bool, len(got))
		for _, id := range got {
			in[id] = true
		}
		*added = nil
		for _, c := range cs {
			if in[c.id] {
				*added = append(*added, c)
			}
		}
		return nil
	})
}

// addCrawlPagesSQL adds the pages ($2 urls, $3 keys, $4 new job ids, $5
// names, in the links' order) under parent job $1 that its batch holds
// neither by the URL a job asked for nor by the one it landed on: the first
// of them as jobs one level below the parent, with the parent's options (a
// crawl batch's jobs have no overrides), at the next seqs, as many as the
// batch's max_pages leaves room for and, with $6 (the in-flight cap) > 0 and
// an owner, the owner's unfinished jobs and sessions; the rest it records as
// skipped, each URL once per batch and at most $7 (jobs.MaxCrawlSkipped) in
// all. It counts both on the batch and answers the ids of the jobs it added.
// Run it under the batch row's lock: its snapshot then sees every job.
const addCrawlPagesSQL = `WITH p AS (SELECT id, batch_id, options, options_hash, depth, url FROM jobs WHERE id = $1),
g AS (SELECT b.id, b.crawl_skipped, h.next_seq, greatest(least((b.crawl->>'max_pages')::int - h.held,
		CASE WHEN $6::int > 0 AND b.api_key_id IS NOT NULL THEN $6::int - ` + unfinishedOwnerSQL + ` END), 0) AS room
	FROM p JOIN batches b ON b.id = p.batch_id,
	LATERAL (SELECT count(*) AS held, coalesce(max(seq), -1) + 1 AS next_seq, bool_or(status = 'canceled') AS canceled
		FROM jobs WHERE batch_id = b.id) h
	WHERE b.crawl IS NOT NULL AND h.canceled IS NOT TRUE),
c AS (SELECT u.url, u.key, u.id, u.name, row_number() OVER (ORDER BY u.ord) AS n
	FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u(url, key, id, name, ord), p
	WHERE NOT EXISTS (SELECT 1 FROM jobs k WHERE k.batch_id = p.batch_id AND k.url_key = u.key)
		AND NOT EXISTS (SELECT 1 FROM jobs k WHERE k.batch_id = p.batch_id AND k.final_key = u.key)),
ins AS (INSERT INTO jobs (id, batch_id, seq, url, name, options, status, created_at, updated_at,
		options_hash, depth, parent_id, found_on, url_key)
	SELECT c.id::uuid, p.batch_id, g.next_seq + c.n - 1, c.url, c.name, p.options, 'queued', now(), now(),
		p.options_hash, p.depth + 1, p.id, p.url, c.key
	FROM c, p, g WHERE c.n <= g.room ORDER BY c.n
	ON CONFLICT (batch_id, url_key) WHERE url_key IS NOT NULL DO NOTHING RETURNING id::text),
sk AS (INSERT INTO crawl_skipped (batch_id, url_key)
	SELECT g.id, c.key FROM c, g WHERE c.n > g.room AND c.n - g.room <= $7::int - g.crawl_skipped ORDER BY c.n
	ON CONFLICT DO NOTHING RETURNING 1),
up AS (UPDATE batches SET total = total + (SELECT count(*) FROM ins), crawl_skipped = crawl_skipped + (SELECT count(*) FROM sk)
	WHERE id = (SELECT id FROM g) AND EXISTS (SELECT 1 FROM ins UNION ALL SELECT 1 FROM sk))
SELECT coalesce(array_agg(id), '{}') FROM ins`

// queueFinalKey queues the record of the identity of the URL a crawl page
// landed on when a redirect took it elsewhere: the frontier then holds that
// page too.
func queueFinalKey(b *pgx.Batch, id string, result *jobs.Result) {
	if result == nil || result.FinalURL == "" {
		return
	}
	norm, err := jobs.NormalizeURL(result.FinalURL)
	if err != nil {
		return // not a URL the crawl could add either
	}
	onErr(b.Queue(`UPDATE jobs SET final_key = $2 WHERE id = $1 AND url_key IS DISTINCT FROM $2`,
		id, jobs.CrawlKey(norm)), "record final URL")
}
