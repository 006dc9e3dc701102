package capture

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The DevTools URL is found among Chromium's other stderr lines, and what follows is
// drained (a full pipe would block Chromium).
func TestStderrReaderFindsURL(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := newStderrReader(r)
	const u = "ws://127.0.0.1:40123/devtools/browser/8d6f0c1e-3b2a-4c5d-9e8f-0a1b2c3d4e5f"
	go func() {
		_, _ = w.WriteString("[1201/123456.789:ERROR:bus.cc(407)] Failed to connect to the bus\n")
		_, _ = w.WriteString("\nDevTools listening on " + u + "\n")
		_, _ = w.WriteString(strings.Repeat("after the URL\n", 100000)) // 1.4 MB, past the pipe's buffer
		_ = w.Close()
	}()
	select {
	case got := <-s.url:
		if got != u {
			t.Errorf("url = %q, want %q", got, u)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no URL")
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("stderr after the URL was not drained to EOF")
	}
}

// Without a URL the search ends at the byte limit, keeping only the last bytes for the
// error message.
func TestStderrReaderBounded(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() }) // open until the end: the limit must end the search
	s := newStderrReader(r)
	go func() {
		line := strings.Repeat("x", 9000) + "\n" // longer than the line buffer
		for range launchStderrLimit/len(line) + 10 {
			if _, err := w.WriteString(line); err != nil {
				break
			}
		}
	}()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the search did not end at the byte limit")
	}
	select {
	case u := <-s.url:
		t.Fatalf("found a URL in noise: %q", u)
	default:
	}
	if tail := s.tail(); len(tail) > launchStderrTail || len(tail) == 0 {
		t.Errorf("tail is %d bytes, want 1 to %d", len(tail), launchStderrTail)
	}
}
