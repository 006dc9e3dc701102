package regression

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strings"

	"github.com/snapq/snapq/jobs"
)

// A suite with "discover" finds pages on every run: today from a sitemap, read through
// the egress guard like a sitemap batch's. The discovered pages join the suite's static
// targets, named from their URL path so a page keeps its baselines from run to run. A page
// that appears has no baseline: its comparisons are new. A page that disappeared keeps its
// baselines but has no capture: the run gets a missing comparison per baseline segment
// (no job), which approving removes.

// DefaultDiscoverLimit is discover.limit's default.
const DefaultDiscoverLimit = 50

// Discover is a suite's discovery, as validated.
type Discover struct {
	Sitemap string   `json:"sitemap"`
	Limit   int      `json:"limit"`
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// Options are the discovered targets' options over the suite's.
	Options *jobs.OptionsInput `json:"options,omitempty"`
}

// DiscoverInput is the wire form of Discover.
type DiscoverInput struct {
	Sitemap string             `json:"sitemap"`
	Limit   *float64           `json:"limit"`
	Include []string           `json:"include"`
	Exclude []string           `json:"exclude"`
	Options *jobs.OptionsInput `json:"options"`
}

func validateDiscover(in *DiscoverInput, suiteOpts *jobs.OptionsInput, errs *jobs.FieldErrors) *Discover {
	if in == nil {
		return nil
	}
	d := &Discover{Limit: DefaultDiscoverLimit, Include: in.Include, Exclude: in.Exclude, Options: in.Options}
	if in.Sitemap == "" {
		errs.Add("required", "discover.sitemap", "give the URL of the sitemap (or robots.txt) the pages are read from on every run")
	} else if u, err := jobs.NormalizeURL(in.Sitemap); err != nil {
		errs.Add("invalid_url", "discover.sitemap", err.Error())
	} else {
		d.Sitemap = u
	}
	if in.Limit != nil {
		if l := *in.Limit; l != math.Trunc(l) || l < 1 || l > MaxSuiteTargets {
			errs.Add("invalid_option", "discover.limit", fmt.Sprintf("must be a whole number from 1 to %d", MaxSuiteTargets))
		} else {
			d.Limit = int(l)
		}
	}
	jobs.CompilePatterns(in.Include, "discover.include", errs)
	jobs.CompilePatterns(in.Exclude, "discover.exclude", errs)
	if _, oerrs := jobs.ResolveOptions(suiteOpts, "options", in.Options, "discover.options"); len(oerrs) > 0 {
		*errs = append(*errs, oerrs...)
	}
	return d
}

// DiscoveredName is a discovered page's target name: "page-" and its path (and query),
// sanitised; "page-home" for the site's root. It does not depend on the host, so a run
// against another base URL keeps the names.
func DiscoveredName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "page"
	}
	p := strings.Trim(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		p += "-" + u.RawQuery
	}
	if p == "" {
		p = "home"
	}
	if n := jobs.SanitizeName("page-" + p); n != "" {
		return n
	}
	return "page"
}

// discover reads the suite's sitemap and returns spec's targets with the discovered pages
// after the static ones: a page whose URL or name a static target has is skipped.
func (g *Service) discover(ctx context.Context, spec SuiteSpec) ([]SuiteTarget, error) {
	d := spec.Discover
	if g.Sitemaps == nil {
		return nil, jobs.ValidationErrors(jobs.FieldErrors{{Code: "invalid_field", Field: "discover", Message: "this server does not read sitemaps"}})
	}
	var errs jobs.FieldErrors
	include := jobs.CompilePatterns(d.Include, "discover.include", &errs)
	exclude := jobs.CompilePatterns(d.Exclude, "discover.exclude", &errs)
	urls, err := jobs.ReadSitemap(ctx, g.Sitemaps, d.Sitemap, d.Limit, include, exclude)
	if ve, ok := err.(*jobs.ValidationError); ok {
		for i := range ve.Fields {
			ve.Fields[i].Field = "discover." + ve.Fields[i].Field
		}
		return nil, ve
	} else if err != nil {
		return nil, err
	}
	out := append([]SuiteTarget(nil), spec.Targets...)
	names, seen := map[string]bool{}, map[string]bool{}
	for _, t := range spec.Targets {
		names[t.Name], seen[t.URL] = true, true
	}
	for _, u := range urls {
		name := DiscoveredName(u)
		if names[name] || seen[u] {
			continue
		}
		names[name], seen[u] = true, true
		out = append(out, SuiteTarget{URL: u, Name: name, Options: d.Options})
	}
	return out, nil
}

// baselineLister reads active baselines (store.Store).
type baselineLister interface {
	ListBaselines(ctx context.Context, suiteID, branch string, history bool) ([]*Baseline, error)
}

// removedComparisons are the missing comparisons of the pages a discovering suite has
// baselines for (on the run's baseline branches, the nearest first) but no target in this
// run: one per active baseline segment.
func (g *Service) removedComparisons(ctx context.Context, r *Run, suiteID string, keys []CaptureKey) ([]*Comparison, error) {
	bl, ok := g.Repo.(baselineLister)
	if !ok {
		return nil, nil
	}
	have := map[string]bool{}
	for _, k := range keys {
		have[k.Target] = true
	}
	taken := map[string]string{} // target → the branch its baselines come from
	var out []*Comparison
	for _, branch := range r.BaselineBranches() {
		bases, err := bl.ListBaselines(ctx, suiteID, branch, false)
		if err != nil {
			return nil, fmt.Errorf("baselines of %s: %w", branch, err)
		}
		for _, b := range bases {
			if have[b.Target] || b.Artifact == nil {
				continue
			}
			if from, ok := taken[b.Target]; ok && from != branch {
				continue
			}
			taken[b.Target] = branch
			out = append(out, &Comparison{ID: jobs.NewID(), RunID: r.ID, Target: b.Target, Viewport: b.Viewport,
				Segment: b.Segment, Checkpoint: b.Checkpoint, Status: CompareMissing, DiffMode: DiffPixel,
				Message: "the page is no longer discovered", BaselineID: b.ID, BaselineArtifact: b.Artifact})
		}
	}
	return out, nil
}
