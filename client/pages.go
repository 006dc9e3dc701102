package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"
)

// ListOptions select a page of a list. Every field is optional.
type ListOptions struct {
	// Status keeps only items in this status (batches: queued, running,
	// completed; jobs: queued, running, succeeded, failed, canceled).
	Status string
	// Limit is the page size, 1 to 1000 (the api's default is 100).
	Limit int
	// Cursor continues after the page whose NextCursor it is.
	Cursor string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Status != "" {
		q.Set("status", o.Status)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// Page is one page of a list; NextCursor is "" on the last page.
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// pages iterates over every item of every page that fetch returns, from
// opts.Cursor on. An error ends the iteration after it is yielded.
func pages[T any](ctx context.Context, opts ListOptions, fetch func(ctx context.Context, opts ListOptions) (*Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			p, err := fetch(ctx, opts)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
			if p.NextCursor == "" || p.NextCursor == opts.Cursor {
				return
			}
			opts.Cursor = p.NextCursor
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
