package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/jobs"
)

// DefaultMissingCheck is the object keys one pass checks for a missing object.
const DefaultMissingCheck = 5000

// MissingCheck is the service that looks for rows whose object is missing:
// each check stats the next MaxKeys keys rows name, from where the last one
// stopped, so a large bucket is covered over several passes.
type MissingCheck struct {
	Rows    ObjectKeyLister
	Objects ObjectStatter
	MaxKeys int // keys checked per pass (default DefaultMissingCheck)
	Logger  *slog.Logger

	mu     sync.Mutex
	cursor string
}

// ObjectStatter reads one object's description (artifacts.Store).
type ObjectStatter interface {
	Stat(ctx context.Context, key string) (artifacts.Object, error)
}

// ObjectKeyLister pages through the object keys rows name (artifacts and
// thumbnails), in byte order.
type ObjectKeyLister interface {
	// ObjectKeysAfter returns at most limit distinct keys after after.
	ObjectKeysAfter(ctx context.Context, after string, limit int) ([]string, error)
}

// MissingReport is what one check for rows without an object found.
type MissingReport struct {
	Checked int `json:"checked"`
	Missing int `json:"missing"`
	// Keys are the missing objects' keys, at most MaxReportKeys.
	Keys []string `json:"keys"`
	// Wrapped: the check reached the last key, the next starts again.
	Wrapped bool `json:"wrapped"`
}

// Check stats the next MaxKeys keys rows name, from where the last check
// stopped, and logs each whose object is gone.
func (m *MissingCheck) Check(ctx context.Context) (MissingReport, error) {
	rep := MissingReport{Keys: []string{}}
	limit := m.MaxKeys
	if limit <= 0 {
		limit = DefaultMissingCheck
	}
	m.mu.Lock()
	cursor := m.cursor
	m.mu.Unlock()
	var errs []error
	for rep.Checked < limit {
		want := min(500, limit-rep.Checked)
		keys, err := m.Rows.ObjectKeysAfter(ctx, cursor, want)
		if err != nil {
			errs = append(errs, fmt.Errorf("object keys after %q: %w", cursor, err))
			break
		}
		missing, err := m.statAll(ctx, keys)
		if err != nil {
			errs = append(errs, err)
			break // keep the cursor: check these keys again next time
		}
		rep.Checked += len(keys)
		for _, k := range missing {
			rep.Missing++
			jobs.Log(m.Logger).Warn("object missing: a row names a key the bucket does not hold", "key", k)
			if len(rep.Keys) < MaxReportKeys {
				rep.Keys = append(rep.Keys, k)
			}
		}
		if len(keys) > 0 {
			cursor = keys[len(keys)-1]
		}
		if len(keys) < want {
			rep.Wrapped, cursor = true, ""
			break
		}
	}
	m.mu.Lock()
	m.cursor = cursor
	m.mu.Unlock()
	jobs.Log(m.Logger).Info("missing-object check", "checked", rep.Checked, "missing", rep.Missing, "wrapped", rep.Wrapped)
	return rep, errors.Join(errs...)
}

// statAll returns which of keys have no object, eight stats at a time; any
// other failure than not-found is returned (nothing is called missing then).
func (m *MissingCheck) statAll(ctx context.Context, keys []string) ([]string, error) {
	gone := make([]bool, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := m.Objects.Stat(ctx, k)
			switch {
			case errors.Is(err, artifacts.ErrNotFound):
				gone[i] = true
			case err != nil:
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("stat objects: %w", err)
	}
	var out []string
	for i, g := range gone {
		if g {
			out = append(out, keys[i])
		}
	}
	return out, nil
}
