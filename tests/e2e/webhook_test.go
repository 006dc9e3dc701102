package e2e

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// verifyWebhook is the receiver-side check from docs/api/webhooks.md, kept independent
// of snapq's own code so the two are tested against each other.
func verifyWebhook(secret string, h http.Header, body []byte) error {
	key := []byte(secret)
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		var err error
		if key, err = base64.StdEncoding.DecodeString(rest); err != nil {
			return err
		}
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" {
		return errors.New("missing webhook-id or webhook-timestamp")
	}
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp outside the tolerance")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

type webhooksResp struct {
	Webhook *struct {
		URL string `json:"url"`
	} `json:"webhook"`
	Deliveries []struct {
		ID          string     `json:"id"`
		Event       string     `json:"event"`
		Status      string     `json:"status"`
		Attempts    int        `json:"attempts"`
		LastStatus  *int       `json:"last_status"`
		LastError   *string    `json:"last_error"`
		DeliveredAt *time.Time `json:"delivered_at"`
	} `json:"deliveries"`
}

// waitDelivery polls the batch's webhooks until its delivery is final.
func (s *stack) waitDelivery(batchID string, timeout time.Duration) (webhooksResp, string) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var w webhooksResp
		if code := s.do("GET", "/v1/batches/"+batchID+"/webhooks", nil, &w); code != http.StatusOK {
			s.t.Fatalf("GET webhooks: status %d", code)
		}
		if len(w.Deliveries) == 1 && w.Deliveries[0].Status != "pending" {
			raw, _ := json.Marshal(w)
			return w, string(raw)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("webhook delivery of batch %s not final after %s: %+v", batchID, timeout, w)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type webhookCall struct {
	id   string
	body []byte
}

// A completed batch is announced once, signed, retried after a 500 with the
// same webhook-id, and recorded as delivered.
func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	raw := make([]byte, 24)
	rand.Read(raw)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(raw)
	var mu sync.Mutex
	var calls []webhookCall
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifyWebhook(secret, r.Header, body); err != nil {
			t.Errorf("receiver: the delivery does not verify: %v", err)
		}
		if err := verifyWebhook("whsec_"+base64.StdEncoding.EncodeToString([]byte("another key, 24 bytes..")), r.Header, body); err == nil {
			t.Error("receiver: the delivery verifies with another secret")
		}
		mu.Lock()
		calls = append(calls, webhookCall{id: r.Header.Get("webhook-id"), body: body})
		n := len(calls)
		mu.Unlock()
		if n == 1 {
			http.Error(w, "try again", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	site := fixtureSite(t)
	s := startStack(t, "SNAPQ_AUTH=off")

	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{
		"urls":    []string{site + "/short"},
		"labels":  map[string]string{"suite": "webhooks"},
		"webhook": map[string]any{"url": recv.URL + "/hooks/snapq", "secret": secret},
	}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	s.waitBatch(b.ID, 2*time.Minute)
	w, raw2 := s.waitDelivery(b.ID, 30*time.Second)
	if strings.Contains(raw2, secret) {
		t.Fatalf("GET webhooks shows the secret: %s", raw2)
	}
	d := w.Deliveries[0]
	if w.Webhook == nil || w.Webhook.URL != recv.URL+"/hooks/snapq" || d.Event != "batch.completed" || d.Status != "delivered" ||
		d.Attempts != 2 || d.LastStatus == nil || *d.LastStatus != 204 || d.LastError != nil || d.DeliveredAt == nil {
		t.Fatalf("delivery = %s; want delivered after 2 attempts, last status 204", raw2)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || calls[0].id != d.ID || calls[1].id != d.ID {
		t.Fatalf("receiver saw %d calls with webhook-ids %v; want 2, both %s", len(calls), calls, d.ID)
	}
	var ev struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			ID         string            `json:"id"`
			Status     string            `json:"status"`
			Total      int               `json:"total"`
			Counts     map[string]int    `json:"counts"`
			Labels     map[string]string `json:"labels"`
			FinishedAt *time.Time        `json:"finished_at"`
		} `json:"data"`
	}
	if err := json.Unmarshal(calls[1].body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "batch.completed" || ev.Timestamp.IsZero() || ev.Data.ID != b.ID || ev.Data.Status != "completed" ||
		ev.Data.Total != 1 || ev.Data.Counts["succeeded"] != 1 || ev.Data.Labels["suite"] != "webhooks" || ev.Data.FinishedAt == nil {
		t.Fatalf("event body = %s", calls[1].body)
	}
}

// A webhook to an address the egress policy denies is refused without a
// connection and fails at once, saying why.
func TestWebhookBlockedAddress(t *testing.T) {
	t.Parallel()
	c := startCanary(t)
	canaryURL := "http://127.0.0.1:" + c.port
	site := guardSite(t, canaryURL)
	s := startStack(t, "SNAPQ_AUTH=off", "SNAPQ_EGRESS_ALLOW_CIDRS=127.0.0.2/32")

	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{
		"urls":    []string{site + "/short"},
		"webhook": map[string]any{"url": canaryURL + "/hook", "secret": "a raw secret of 24 bytes"},
	}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	s.waitBatch(b.ID, 2*time.Minute)
	w, raw := s.waitDelivery(b.ID, 30*time.Second)
	d := w.Deliveries[0]
	if d.Status != "failed" || d.Attempts != 1 || d.LastStatus != nil || d.LastError == nil ||
		!strings.Contains(*d.LastError, "blocked") || d.DeliveredAt != nil {
		t.Fatalf("delivery = %s; want failed on the first attempt with a blocked address", raw)
	}
	t.Logf("last_error: %s", *d.LastError)
	if n := c.conns.Load(); n != 0 {
		t.Fatalf("the canary on 127.0.0.1 accepted %d connections; the webhook went around the egress policy", n)
	}
}
