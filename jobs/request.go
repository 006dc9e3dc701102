package jobs

import (
	"fmt"
	"sort"
	"strings"
)

// CodeTooManyTargets is the field error of an oversized batch (HTTP 413).
const CodeTooManyTargets = "too_many_targets"

// Batch request limits.
const (
	MaxTargets    = 1000 // default; the api's SNAPQ_MAX_TARGETS
	MaxURLLength  = 2048
	MaxNameLength = 200
	MaxLabels     = 50
	MaxLabelKey   = 64
	MaxLabelValue = 256
)

// BatchRequest is the body of POST /v1/batches.
type BatchRequest struct {
	Targets []TargetInput     `json:"targets"`
	URLs    []string          `json:"urls"`
	Options *OptionsInput     `json:"options"`
	Labels  map[string]string `json:"labels"`
	Webhook *WebhookInput     `json:"webhook"`
	// A sitemap instead of targets (sitemap.go): Service.Submit replaces these fields with
	// "urls" before validation.
	Sitemap string   `json:"sitemap,omitempty"`
	Limit   *float64 `json:"limit,omitempty"`
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// A crawl instead of targets (crawl.go): Service.Submit replaces it with "urls": [start].
	Crawl *CrawlInput `json:"crawl,omitempty"`
}

// TargetInput is one page to capture.
type TargetInput struct {
	URL     string        `json:"url"`
	Name    string        `json:"name"`
	Options *OptionsInput `json:"options"`
}

// NewJob is a validated target ready to be stored.
type NewJob struct {
	URL     string
	Name    string
	Options Options
}

// ParseBatchRequest decodes and validates a batch body. Any problem rejects
// the whole request with a *ValidationError naming every bad field.
func ParseBatchRequest(body []byte, maxTargets int) ([]NewJob, *BatchRequest, error) {
	var req BatchRequest
	var errs FieldErrors
	ok := DecodeStrict(body, &req, "", &errs)
	jobs, err := validateBatch(&req, errs, ok, maxTargets)
	if err != nil {
		return nil, nil, err
	}
	return jobs, &req, nil
}

// validateBatch validates a decoded batch body (DecodeStrict's errs and ok).
func validateBatch(req *BatchRequest, errs FieldErrors, ok bool, maxTargets int) ([]NewJob, error) {
	if maxTargets <= 0 {
		maxTargets = MaxTargets
	}
	if !ok {
		return nil, ValidationErrors(errs)
	}
	jobs := req.validate(maxTargets, &errs)
	if err := ValidationErrors(errs); err != nil {
		return nil, err
	}
	return jobs, nil
}

func (r *BatchRequest) validate(maxTargets int, errs *FieldErrors) []NewJob {
	targets, prefixes := r.allTargets()
	switch {
	case len(targets) == 0:
		errs.Add("required", "targets", "give at least one target (targets[].url or urls[])")
	case len(targets) > maxTargets:
		errs.Add(CodeTooManyTargets, "targets", fmt.Sprintf("a batch holds at most %d targets, got %d", maxTargets, len(targets)))
		return nil
	}
	if r.sitemapGiven() {
		errs.Add("invalid_field", "sitemap", "this server does not read sitemaps")
	}
	if r.crawlGiven() {
		errs.Add("invalid_field", "crawl", "a crawl is a batch of its own")
	}
	validateLabels(r.Labels, errs)
	ValidateWebhook(r.Webhook, errs)
	// Batch options are validated once on their own, so their errors are not
	// repeated for every target.
	n := len(*errs)
	ResolveOptions(r.Options, "options", nil, "", errs)
	batchOK := len(*errs) == n

	out := make([]NewJob, 0, len(targets))
	for i, t := range targets {
		if nj, ok := r.target(t, prefixes[i], batchOK, errs); ok {
			out = append(out, nj)
		}
	}
	return out
}

// allTargets is targets[] then urls[] as targets, each with its field prefix.
func (r *BatchRequest) allTargets() ([]TargetInput, []string) {
	targets := make([]TargetInput, 0, len(r.Targets)+len(r.URLs))
	prefixes := make([]string, 0, cap(targets))
	for i, t := range r.Targets {
		targets = append(targets, t)
		prefixes = append(prefixes, fmt.Sprintf("targets[%d]", i))
	}
	for i, u := range r.URLs {
		targets = append(targets, TargetInput{URL: u})
		prefixes = append(prefixes, fmt.Sprintf("urls[%d]", i))
	}
	return targets, prefixes
}

// target validates one target at prefix p (its options only when the batch's are valid)
// and is its job when no error was found so far.
func (r *BatchRequest) target(t TargetInput, p string, batchOK bool, errs *FieldErrors) (NewJob, bool) {
	urlField := p + ".url"
	if strings.HasPrefix(p, "urls[") {
		urlField = p
	}
	u, code, err := CheckBrowserURL(t.URL)
	if err != nil {
		errs.Add(code, urlField, err.Error())
	}
	if len(t.Name) > MaxNameLength {
		errs.Add("invalid_name", p+".name", fmt.Sprintf("must be at most %d characters", MaxNameLength))
	}
	var opts Options
	if batchOK {
		opts = ResolveOptions(r.Options, "options", t.Options, p+".options", errs)
	}
	if len(*errs) > 0 {
		return NewJob{}, false
	}
	name := SanitizeName(t.Name)
	if name == "" {
		name = NameFromURL(u)
	}
	return NewJob{URL: u, Name: name, Options: opts}, true
}

// SharedOptions are the options of a target of the validated request that gives none
// of its own: the batch's options over the defaults. Jobs store only how their options
// differ from them (Batch.JobOptions).
func (r *BatchRequest) SharedOptions() Options {
	var ignored FieldErrors // the request was validated
	return ResolveOptions(r.Options, "options", nil, "", &ignored)
}

func validateLabels(labels map[string]string, errs *FieldErrors) {
	if len(labels) > MaxLabels {
		errs.Add("invalid_labels", "labels", fmt.Sprintf("at most %d labels", MaxLabels))
		return
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" || len(k) > MaxLabelKey || len(labels[k]) > MaxLabelValue {
			errs.Add("invalid_labels", "labels."+k, fmt.Sprintf("keys must be 1-%d characters and values at most %d", MaxLabelKey, MaxLabelValue))
		}
	}
}
