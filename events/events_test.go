package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/internal/testenv"
)

func TestAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scenario string
		a, b     string
		want     bool
	}{
		{"later millisecond", "1700000000001-0", "1700000000000-5", true},
		{"same millisecond, later sequence", "1700000000000-10", "1700000000000-9", true},
		{"equal", "1700000000000-1", "1700000000000-1", false},
		{"earlier", "1700000000000-0", "1700000000000-1", false},
		{"anything after the start", "1-0", "0-0", true},
	}
	for _, tt := range tests {
		if got := events.After(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: After(%q, %q) = %v, want %v", tt.scenario, tt.a, tt.b, got, tt.want)
		}
	}
	for id, want := range map[string]bool{"1-0": true, "1700000000000-12": true, "": false, "1": false, "a-1": false, "1-": false} {
		if events.ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v", id, !want)
		}
	}
}

// Published events reach a subscriber through the hub in order; a
// subscriber that catches up with Range from an older id and then follows
// the subscription sees each entry once; the stream gets a TTL.
func TestPublishSubscribe(t *testing.T) {
	t.Parallel()
	db := testenv.Redis(t)
	rdb := redis.NewClient(db.Options())
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	pub := &events.Publisher{Redis: rdb}
	hub := &events.Hub{Redis: rdb, Block: 200 * time.Millisecond}
	stream := events.BatchStream("b1")

	pub.Publish(ctx, stream, false, events.Event{Type: events.TypeJob, Data: events.Job{JobID: "j1", Status: "running"}})
	start, err := hub.Tail(ctx, stream)
	if err != nil || start == "0-0" {
		t.Fatalf("tail: %q %v", start, err)
	}
	sub, err := hub.Subscribe(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	pub.Publish(ctx, stream, true,
		events.Event{Type: events.TypeJob, Data: events.Job{JobID: "j1", Status: "succeeded"}},
		events.Event{Type: events.TypeBatch, Data: events.Batch{BatchID: "b1", Status: "completed"}})

	// Catch up from the start, then follow: three entries, each once.
	got, err := hub.Range(ctx, stream, "0-0", 100)
	if err != nil {
		t.Fatal(err)
	}
	last := got[len(got)-1].ID
	deadline := time.After(5 * time.Second)
	for len(got) < 3 {
		select {
		case e := <-sub.C:
			if events.After(e.ID, last) {
				got = append(got, e)
				last = e.ID
			}
		case <-deadline:
			t.Fatalf("got %d entries", len(got))
		}
	}
	types := []string{got[0].Type, got[1].Type, got[2].Type}
	if types[0] != "job" || types[1] != "job" || types[2] != "batch" || len(got) != 3 {
		t.Fatalf("entries: %v", types)
	}
	if ttl := rdb.TTL(ctx, stream).Val(); ttl <= 0 || ttl > events.DefaultDoneTTL {
		t.Fatalf("TTL after the final event: %s", ttl)
	}
	if ok, err := hub.Resumable(ctx, stream, got[0].ID); !ok || err != nil {
		t.Fatalf("resumable: %v %v", ok, err)
	}
	if ok, _ := hub.Resumable(ctx, events.BatchStream("gone"), "1-0"); ok {
		t.Fatal("a missing stream is resumable")
	}
	if pub.Published() != 3 || pub.Failures() != 0 {
		t.Fatalf("published %d, failures %d", pub.Published(), pub.Failures())
	}
}

// A publish to an unreachable Redis is counted and logged, never returned.
func TestPublishBestEffort(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	pub := &events.Publisher{Redis: rdb, Timeout: 200 * time.Millisecond}
	pub.Publish(context.Background(), events.BatchStream("b"), false, events.Event{Type: events.TypeJob, Data: events.Job{}})
	if pub.Failures() != 1 {
		t.Fatalf("failures %d", pub.Failures())
	}
	var nilPub *events.Publisher
	nilPub.Publish(context.Background(), "x", false, events.Event{Type: events.TypeJob}) // a nil publisher publishes nothing
}
