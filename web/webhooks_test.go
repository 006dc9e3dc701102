package web

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/webhook"
)

const (
	hookBatch    = "01a22b19-0000-7000-8000-000000000001"
	plainBatch   = "01a22b19-0000-7000-8000-000000000002"
	hookSecret   = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	hookURL      = "https://hooks.example/snapq"
	deliveryID   = "01a22b19-0000-7000-8000-0000000000d1"
	missingBatch = "01a22b19-0000-7000-8000-0000000000ff"
)

// webhookRepo knows two batches, one of them with a webhook and a delivery.
type webhookRepo struct {
	fakeRepo
}

var (
	_ BatchReader   = (*webhookRepo)(nil)
	_ WebhookReader = (*webhookRepo)(nil)
)

func (*webhookRepo) GetBatch(_ context.Context, id string) (*jobs.Batch, error) {
	if id != hookBatch && id != plainBatch {
		return nil, jobs.ErrNotFound
	}
	return &jobs.Batch{ID: id, Total: 1, Counts: jobs.Counts{Succeeded: 1}}, nil
}

func (*webhookRepo) GetBatchWebhook(_ context.Context, id string) (*jobs.Webhook, error) {
	if id != hookBatch {
		return nil, jobs.ErrNotFound
	}
	return &jobs.Webhook{URL: hookURL, Secret: hookSecret}, nil
}

func (*webhookRepo) ListWebhookDeliveries(_ context.Context, id string) ([]*webhook.Delivery, error) {
	if id != hookBatch {
		return nil, nil
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	return []*webhook.Delivery{{ID: deliveryID, BatchID: id, Event: jobs.EventBatchCompleted, Status: webhook.DeliveryPending,
		Attempts: 1, LastError: "send: connection refused", CreatedAt: at, UpdatedAt: at}}, nil
}

func TestWebhookListEndpoint(t *testing.T) {
	t.Parallel()
	repo := &webhookRepo{}
	s := &Server{Batches: repo, Webhooks: repo, Config: Config{AllowedHosts: testHosts}}
	h := s.Handler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}

	code, body := get("/v1/batches/" + hookBatch + "/webhooks")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	if strings.Contains(body, "whsec_") || strings.Contains(body, "secret") {
		t.Fatalf("the response shows the secret: %s", body)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"webhook": map[string]any{"url": hookURL},
		"deliveries": []any{map[string]any{"id": deliveryID, "event": "batch.completed", "status": "pending",
			"attempts": float64(1), "last_status": nil, "last_error": "send: connection refused",
			"created_at": "2026-05-01T12:00:00Z", "delivered_at": nil}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}

	if code, body := get("/v1/batches/" + plainBatch + "/webhooks"); code != http.StatusOK ||
		!strings.Contains(body, `"webhook":null`) || !strings.Contains(body, `"deliveries":[]`) {
		t.Errorf("batch without webhook: %d %s", code, body)
	}
	if code, _ := get("/v1/batches/" + missingBatch + "/webhooks"); code != http.StatusNotFound {
		t.Errorf("unknown batch: %d, want 404", code)
	}
	if code, _ := get("/v1/batches/nope/webhooks"); code != http.StatusNotFound {
		t.Errorf("junk id: %d, want 404", code)
	}
}

// Webhook events carry jobs.BatchView as "data"; GET /v1/batches/:id must
// answer exactly that JSON.
func TestBatchJSONIsBatchView(t *testing.T) {
	t.Parallel()
	repo := &webhookRepo{}
	s := &Server{Batches: repo, Webhooks: repo, Config: Config{AllowedHosts: testHosts}}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/batches/"+hookBatch, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	b, err := repo.GetBatch(context.Background(), hookBatch)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	raw, err := json.Marshal(b.View())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"counts", "created_at", "finished_at", "id", "labels", "status", "total"}
	gotKeys := slices.Sorted(maps.Keys(got))
	if diff := cmp.Diff(wantKeys, gotKeys); diff != "" {
		t.Errorf("GET /v1/batches/:id fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /v1/batches/:id differs from jobs.BatchView (-BatchView +response):\n%s", diff)
	}
}
