package jobs

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Webhooks: a batch may carry {url, secret}; when it completes, snapq POSTs a
// signed summary there (Standard Webhooks headers, https://www.standardwebhooks.com/).
// The delivery row is written in the same transaction that completes the
// batch; the task that sends it is enqueued after commit by the worker that
// completed the batch, or by the api's reconciler (outbox).

// Webhook event types, delivery statuses and limits. They are part of the
// public API.
const (
	EventBatchCompleted = "batch.completed"

	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"

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
	// on a run's batch, EventRunCompleted.
	Event string
}

// WebhookDelivery is one event to send to a batch's webhook, with the
// outcome of its attempts so far.
type WebhookDelivery struct {
	ID          string
	BatchID     string
	Event       string
	Status      string // DeliveryPending, DeliveryDelivered or DeliveryFailed
	Attempts    int
	LastStatus  int    // HTTP status of the last attempt; 0 when there was no response
	LastError   string // "" after a success
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DeliveredAt *time.Time
}

// WebhookAttempt is the outcome of one attempt, as recorded.
type WebhookAttempt struct {
	Status     string // the delivery's status after this attempt
	HTTPStatus int    // 0 when no response came back
	Error      string
}

// WebhookRepository keeps webhooks and their deliveries. It is part of
// Repository; store.Store implements it. Delivery rows are created by the
// store itself when a batch completes (one per batch and event).
type WebhookRepository interface {
	// GetBatchWebhook returns the batch's webhook, or ErrNotFound when it has none.
	GetBatchWebhook(ctx context.Context, batchID string) (*Webhook, error)
	GetWebhookDelivery(ctx context.Context, id string) (*WebhookDelivery, error)
	// ListWebhookDeliveries returns a batch's deliveries, oldest first.
	ListWebhookDeliveries(ctx context.Context, batchID string) ([]*WebhookDelivery, error)
	// PendingWebhookDeliveries lists pending deliveries not updated since before.
	PendingWebhookDeliveries(ctx context.Context, before time.Time, limit int) ([]*WebhookDelivery, error)
	// RecordWebhookAttempt counts one attempt of a pending delivery and sets its
	// status, last HTTP status and last error. ok=false: it was not pending.
	RecordWebhookAttempt(ctx context.Context, id string, a WebhookAttempt) (ok bool, err error)
	// FailWebhookDelivery marks a pending delivery failed without counting an
	// attempt (the queue gave up on it).
	FailWebhookDelivery(ctx context.Context, id, reason string) (ok bool, err error)
}

// WebhookInput is the wire form of a batch's webhook.
type WebhookInput struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

var webhookSchema = schema{"url": nil, "secret": nil}

// validateWebhook checks the webhook of a request and normalizes its URL in place.
func validateWebhook(w *WebhookInput, errs *[]FieldError) {
	if w == nil {
		return
	}
	u, err := NormalizeURL(w.URL)
	if err != nil {
		*errs = append(*errs, FieldError{Code: "invalid_url", Field: "webhook.url", Message: err.Error()})
	} else {
		w.URL = u
	}
	if n := utf8.RuneCountInString(w.Secret); n < MinWebhookSecret || n > MaxWebhookSecret {
		*errs = append(*errs, FieldError{Code: "invalid_secret", Field: "webhook.secret",
			Message: fmt.Sprintf("must be %d-%d characters, got %d", MinWebhookSecret, MaxWebhookSecret, n)})
		return
	}
	if _, err := WebhookKey(w.Secret); err != nil {
		*errs = append(*errs, FieldError{Code: "invalid_secret", Field: "webhook.secret", Message: err.Error()})
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

// Standard Webhooks header names.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// SignWebhook returns the webhook-signature value "v1,<base64 HMAC-SHA256 of
// "<msgID>.<timestamp>.<body>">".
func SignWebhook(key []byte, msgID string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ErrWebhookSignature means a delivery did not verify.
var ErrWebhookSignature = errors.New("webhook signature does not verify")

// VerifyWebhook checks a delivery as a receiver would: the timestamp must be
// within tolerance of now and one of the space-separated v1 signatures must
// match (compared in constant time).
func VerifyWebhook(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, tsRaw := h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp)
	ts, err := strconv.ParseInt(tsRaw, 10, 64)
	if id == "" || err != nil {
		return fmt.Errorf("%w: missing webhook-id or webhook-timestamp", ErrWebhookSignature)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp %d is outside the %s tolerance", ErrWebhookSignature, ts, tolerance)
	}
	want := []byte(SignWebhook(key, id, ts, body))
	for _, sig := range strings.Fields(h.Get(HeaderWebhookSignature)) {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrWebhookSignature
}

// BatchView is the public JSON of a batch, as GET /v1/batches/:id shows it
// and as webhook events carry it in "data".
type BatchView struct {
	ID         string            `json:"id"`
	Status     string            `json:"status"`
	Total      int               `json:"total"`
	Counts     Counts            `json:"counts"`
	Labels     map[string]string `json:"labels"`
	CreatedAt  time.Time         `json:"created_at"`
	FinishedAt *time.Time        `json:"finished_at"`
}

// View returns the batch's public JSON form.
func (b *Batch) View() BatchView {
	return BatchView{ID: b.ID, Status: b.Status(), Total: b.Total, Counts: b.Counts, Labels: b.Labels,
		CreatedAt: b.CreatedAt, FinishedAt: b.FinishedAt}
}

// WebhookEvent is the body of a delivery.
type WebhookEvent struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"` // when the event happened (the batch's or run's finished_at)
	// Data is a BatchView for batch.completed, a RunSummary for run.completed.
	Data any `json:"data"`
}

// WebhookConfig configures deliveries. The worker fills it from
// SNAPQ_WEBHOOK_MAX_RETRY and SNAPQ_WEBHOOK_TIMEOUT.
type WebhookConfig struct {
	// MaxRetry is how many retries follow a failed first attempt (default 8).
	MaxRetry int
	// Timeout bounds one attempt: connect, send, response (default 10s, at most 2m).
	Timeout time.Duration
}

// Defaults for WebhookConfig.
const (
	DefaultWebhookMaxRetry = 8
	DefaultWebhookTimeout  = 10 * time.Second
	maxWebhookTimeout      = 2 * time.Minute
	maxWebhookMaxRetry     = 25
)

// DefaultWebhookConfig returns the documented defaults.
func DefaultWebhookConfig() WebhookConfig {
	return WebhookConfig{MaxRetry: DefaultWebhookMaxRetry, Timeout: DefaultWebhookTimeout}
}

// Validate reports out-of-range settings.
func (c WebhookConfig) Validate() error {
	var errs []error
	if c.MaxRetry < 0 || c.MaxRetry > maxWebhookMaxRetry {
		errs = append(errs, fmt.Errorf("SNAPQ_WEBHOOK_MAX_RETRY=%d: want 0 to %d", c.MaxRetry, maxWebhookMaxRetry))
	}
	if c.Timeout < time.Second || c.Timeout > maxWebhookTimeout {
		errs = append(errs, fmt.Errorf("SNAPQ_WEBHOOK_TIMEOUT=%s: want 1s to %s", c.Timeout, maxWebhookTimeout))
	}
	return errors.Join(errs...)
}
