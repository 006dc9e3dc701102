package webhook

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
)

// Delivery statuses. They are part of the public API.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Delivery is one event to send to a batch's webhook, with the outcome of
// its attempts so far.
type Delivery struct {
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
	// Data is the event's data when it was fixed as the event happened
	// (auth_profile.failed); nil: built at delivery.
	Data []byte
}

// Attempt is the outcome of one attempt, as recorded.
type Attempt struct {
	Status     string // the delivery's status after this attempt
	HTTPStatus int    // 0 when no response came back
	Error      string
}

// Deliveries reads a batch's deliveries (the api's GET /v1/batches/:id/webhooks
// and the hooks that enqueue them). store.Store implements it. Delivery rows
// are created by the store itself when a batch completes (one per batch and
// event).
type Deliveries interface {
	// ListWebhookDeliveries returns a batch's deliveries, oldest first.
	ListWebhookDeliveries(ctx context.Context, batchID string) ([]*Delivery, error)
}

// Standard Webhooks header names.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Sign returns the webhook-signature value "v1,<base64 HMAC-SHA256 of
// "<msgID>.<timestamp>.<body>">".
func Sign(key []byte, msgID string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ErrSignature means a delivery did not verify.
var ErrSignature = errors.New("webhook signature does not verify")

// Verify checks a delivery as a receiver would: the timestamp must be within
// tolerance of now and one of the space-separated v1 signatures must match
// (compared in constant time).
func Verify(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, tsRaw := h.Get(HeaderID), h.Get(HeaderTimestamp)
	ts, err := strconv.ParseInt(tsRaw, 10, 64)
	if id == "" || err != nil {
		return fmt.Errorf("%w: missing webhook-id or webhook-timestamp", ErrSignature)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp %d is outside the %s tolerance", ErrSignature, ts, tolerance)
	}
	want := []byte(Sign(key, id, ts, body))
	for _, sig := range strings.Fields(h.Get(HeaderSignature)) {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrSignature
}

// Event is the body of a delivery.
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"` // when the event happened (the batch's or run's finished_at)
	// Data is a jobs.BatchView for batch.completed, what the event's EventData
	// builds otherwise (a regression.RunSummary for run.completed).
	Data any `json:"data"`
}

// Config configures deliveries. The worker fills it from
// SNAPQ_WEBHOOK_MAX_RETRY and SNAPQ_WEBHOOK_TIMEOUT.
type Config struct {
	// MaxRetry is how many retries follow a failed first attempt (default 8).
	MaxRetry int
	// Timeout bounds one attempt: connect, send, response (default 10s, at most 2m).
	Timeout time.Duration
}

// Defaults for Config.
const (
	DefaultMaxRetry = 8
	DefaultTimeout  = 10 * time.Second
	maxTimeout      = 2 * time.Minute
	maxMaxRetry     = 25
)

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{MaxRetry: DefaultMaxRetry, Timeout: DefaultTimeout}
}

// Validate reports out-of-range settings.
func (c Config) Validate() error {
	var errs []error
	if c.MaxRetry < 0 || c.MaxRetry > maxMaxRetry {
		errs = append(errs, fmt.Errorf("SNAPQ_WEBHOOK_MAX_RETRY=%d: want 0 to %d", c.MaxRetry, maxMaxRetry))
	}
	if c.Timeout < time.Second || c.Timeout > maxTimeout {
		errs = append(errs, fmt.Errorf("SNAPQ_WEBHOOK_TIMEOUT=%s: want 1s to %s", c.Timeout, maxTimeout))
	}
	return errors.Join(errs...)
}
