package hotcopy

import (
	"bytes"
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/snapq/snapq/internal/testenv"
)

func TestKeepWithinBytesThenGet(t *testing.T) {
	rdb := redis.NewClient(testenv.Redis(t).Options())
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := &Store{Redis: rdb, MaxBytes: 10}
	a, b, c := bytes.Repeat([]byte("a"), 6), bytes.Repeat([]byte("b"), 6), bytes.Repeat([]byte("c"), 4)
	if err := s.Keep(ctx, []Object{{"k/a", a}, {"k/b", b}, {"k/c", c}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		key    string
		size   int64
		want   []byte
		wantOK bool
	}{
		{name: "first, within the bound", key: "k/a", size: 6, want: a, wantOK: true},
		{name: "past the bound: not copied", key: "k/b", size: 6},
		{name: "still within the bound after a skipped one", key: "k/c", size: 4, want: c, wantOK: true},
		{name: "another size than the row's: not served", key: "k/a", size: 7},
		{name: "never kept", key: "k/none", size: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := s.Get(ctx, tt.key, tt.size)
			if err != nil || ok != tt.wantOK || (ok && !bytes.Equal(got, tt.want)) {
				t.Fatalf("Get(%s, %d) = %q, %v, %v; want %q, %v", tt.key, tt.size, got, ok, err, tt.want, tt.wantOK)
			}
		})
	}
	if ttl := rdb.PTTL(ctx, copyKey("k/a")).Val(); ttl <= 0 || ttl > DefaultTTL {
		t.Fatalf("a copy lives %s, want at most %s", ttl, DefaultTTL)
	}
	off := &Store{Redis: rdb}
	if err := off.Keep(ctx, []Object{{"k/off", a}}); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, copyKey("k/off")).Val(); n != 0 {
		t.Fatal("MaxBytes 0 kept a copy")
	}
}
