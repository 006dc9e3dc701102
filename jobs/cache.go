package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// The result cache: a job with options.max_age_s > 0 reuses a succeeded
// capture of the same URL with the same options by the same API key,
// finished at most max_age_s seconds ago, instead of rendering again. The
// lookup is the worker's, after the job started and before it takes a
// browser: the api answers a submission as fast either way, and a hit costs
// one indexed query. The reused job's artifact rows name the source's
// objects (content-addressed or not: a row may name any object), so a hit
// stores no byte; the job's result says cached_from. Only rendered jobs are
// sources (never a hit of a hit), so max_age_s bounds the age of the render
// itself.

// MaxCacheAgeS is the largest options.max_age_s: 30 days.
const MaxCacheAgeS = 30 * 24 * 3600

// OptionsHash is the hash of the options that shape a capture's outputs:
// the resolved options without max_age_s (how old a capture may be), the
// host cap and the timeout (how it is scheduled). Two jobs of one URL with
// the same hash make the same outputs of an unchanged page. The JSON
// encoding of Options is canonical: struct fields in a fixed order, map keys
// sorted.
func OptionsHash(o Options) string {
	o.MaxAgeS, o.HostConcurrency, o.TimeoutMS = 0, 0, 0
	data, err := json.Marshal(o)
	if err != nil {
		// Options hold only JSON-encodable values; a failure here is a bug.
		panic(fmt.Sprintf("encode options: %v", err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// CachedCapture is a source job's capture a cache hit reuses.
type CachedCapture struct {
	JobID     string
	Result    *Result
	Artifacts []*Artifact // with their thumbnails
}

// ResultCache finds cached captures. store.Store implements it.
type ResultCache interface {
	// CachedCapture returns the newest rendered (not itself cached),
	// succeeded job other than job, of job's owner, URL and options hash,
	// finished within maxAge, or nil when there is none.
	CachedCapture(ctx context.Context, job *Job, maxAge time.Duration) (*CachedCapture, error)
}

// fromCache returns job's result and artifacts from the cache, or nils on a
// miss (or when the cache cannot be read: the job renders then).
func (h *Handler) fromCache(ctx context.Context, job *Job) (*Result, []*Artifact) {
	if h.Cache == nil || job.Options.MaxAgeS <= 0 || job.Options.AuthProfile != "" {
		return nil, nil // a logged-in page is the login's: never shared
	}
	src, err := h.Cache.CachedCapture(ctx, job, time.Duration(job.Options.MaxAgeS)*time.Second)
	if err != nil {
		h.logger().Warn("result cache lookup failed; rendering", "job_id", job.ID, "err", err)
		return nil, nil
	}
	if src == nil || src.Result == nil {
		return nil, nil
	}
	res := *src.Result
	res.CachedFrom = src.JobID
	res.TimingsMS = map[string]int64{}
	arts := make([]*Artifact, len(src.Artifacts))
	for i, a := range src.Artifacts {
		c := *a
		c.ID, c.JobID, c.CreatedAt = NewID(), job.ID, time.Time{}
		c.Reused = true // the source's objects: refused if they are being deleted
		if a.Thumbnail != nil {
			th := *a.Thumbnail
			th.Reused = true
			c.Thumbnail = &th
		}
		arts[i] = &c
	}
	return &res, arts
}
