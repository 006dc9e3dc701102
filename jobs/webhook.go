package jobs

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// A batch may carry a webhook {url, secret}: where its completion is
// announced. This file holds what a batch needs of it (the stored target and
// its validation); the webhook package builds, signs and delivers the events.

// EventBatchCompleted is the event a batch's webhook receives when the batch
// completes. It is part of the public API.
const EventBatchCompleted = "batch.completed"

// Webhook secret limits. They are part of the public API.
const (
	MinWebhookSecret = 16
	MaxWebhookSecret = 256
	// WebhookSecretPrefix marks a Standard Webhooks secret: the rest is the
	// base64 key. Any other secret is used as raw bytes.
	WebhookSecretPrefix = "whsec_"
)

// Webhook is where a batch's completion is announced.
type Webhook struct {
	URL    string
	Secret string
	// Event is what it announces: EventBatchCompleted ("" means that) or,
	// on a run's batch, the regression package's run.completed.
	Event string
}

// WebhookInput is the wire form of a batch's (or a suite's) webhook.
type WebhookInput struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// ValidateWebhook checks the webhook of a request and normalizes its URL in place.
func ValidateWebhook(w *WebhookInput, errs *FieldErrors) {
	if w == nil {
		return
	}
	u, err := NormalizeURL(w.URL)
	if err != nil {
		errs.Add("invalid_url", "webhook.url", err.Error())
	} else {
		w.URL = u
	}
	if n := utf8.RuneCountInString(w.Secret); n < MinWebhookSecret || n > MaxWebhookSecret {
		errs.Add("invalid_secret", "webhook.secret", fmt.Sprintf("must be %d-%d characters, got %d", MinWebhookSecret, MaxWebhookSecret, n))
		return
	}
	if _, err := WebhookKey(w.Secret); err != nil {
		errs.Add("invalid_secret", "webhook.secret", err.Error())
	}
}

// BatchWebhook returns the request's validated webhook, or nil.
func (r *BatchRequest) BatchWebhook() *Webhook {
	if r == nil || r.Webhook == nil {
		return nil
	}
	return &Webhook{URL: r.Webhook.URL, Secret: r.Webhook.Secret}
}

// WebhookKey returns the HMAC key of a secret: a Standard Webhooks secret
// "whsec_<base64>" is base64-decoded; any other secret is used as its bytes.
func WebhookKey(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, WebhookSecretPrefix)
	if !ok {
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) == 0 {
		return nil, errors.New("starts with whsec_ but the rest is not standard base64; use whsec_<base64 key> or a secret without that prefix")
	}
	return key, nil
}

// BatchView is the public JSON of a batch, as GET /v1/batches/:id shows it
// and as webhook events carry it in "data".
type BatchView struct {
	ID         string            `json:"id"`
	Status     BatchStatus       `json:"status"`
	Total      int               `json:"total"`
	Counts     Counts            `json:"counts"`
	Labels     map[string]string `json:"labels"`
	CreatedAt  time.Time         `json:"created_at"`
	FinishedAt *time.Time        `json:"finished_at"`
	// Crawl is a crawl batch's settings (absent for other batches) and the pages it
	// skipped; total counts the pages it has added so far.
	Crawl *CrawlView `json:"crawl,omitempty"`
}

// CrawlView is a crawl batch's settings and Skipped: the pages (each URL once, at most
// MaxCrawlSkipped) its pages linked to but that were not added because the batch had
// max_pages jobs or its owner was at the in-flight cap.
type CrawlView struct {
	Crawl
	Skipped int `json:"skipped"`
}

// View returns the batch's public JSON form.
func (b *Batch) View() BatchView {
	return BatchView{ID: b.ID, Status: b.Status(), Total: b.Total, Counts: b.Counts, Labels: b.Labels,
		CreatedAt: b.CreatedAt, FinishedAt: b.FinishedAt, Crawl: b.crawlView()}
}

func (b *Batch) crawlView() *CrawlView {
	if b.Crawl == nil {
		return nil
	}
	return &CrawlView{Crawl: *b.Crawl, Skipped: b.CrawlSkipped}
}
