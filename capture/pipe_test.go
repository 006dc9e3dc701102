package capture

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// pipePair returns a pipeConn and the other ends of its pipes, as Chromium sees them: what the
// conn sends is read from cmd, what is written to out the conn reads.
func pipePair(t *testing.T) (c *pipeConn, cmd, out *os.File) {
	t.Helper()
	p, err := newDevtoolsPipes()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.conn.Close(); p.closeChild() })
	return p.conn, p.child[0], p.child[1]
}

// Messages are NUL-terminated both ways, however they are split into reads.
func TestPipeFraming(t *testing.T) {
	t.Parallel()
	c, cmd, out := pipePair(t)
	if err := c.Send([]byte(`{"id":1}`)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 9)
	if _, err := cmd.Read(got); err != nil || string(got) != "{\"id\":1}\x00" {
		t.Fatalf("Chromium read %q, %v; want the message and a NUL", got, err)
	}
	big := `{"data":"` + strings.Repeat("A", 3<<20) + `"}` // several reader buffers
	go func() {
		_, _ = out.WriteString(`{"method":"a"}` + "\x00" + big[:10])
		_, _ = out.WriteString(big[10:] + "\x00")
		_, _ = out.WriteString(`{"id":2}` + "\x00")
		_ = out.Close()
	}()
	for _, want := range []string{`{"method":"a"}`, big, `{"id":2}`} {
		msg, err := c.Read()
		if err != nil || !bytes.Equal(msg, []byte(want)) {
			t.Fatalf("Read = %d bytes (%.40q), %v; want %d bytes", len(msg), msg, err, len(want))
		}
	}
	if _, err := c.Read(); err == nil {
		t.Fatal("Read after Chromium closed its end: no error")
	}
}

// A message past maxPipeMessage fails the connection before it is held whole in memory.
func TestPipeMessageBounded(t *testing.T) {
	t.Parallel()
	c, _, out := pipePair(t)
	go func() {
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range maxPipeMessage>>20 + 2 {
			if _, err := out.Write(chunk); err != nil {
				return
			}
		}
	}()
	if _, err := c.Read(); !errors.Is(err, errPipeMessageTooLarge) {
		t.Fatalf("Read of an endless message: %v, want errPipeMessageTooLarge", err)
	}
}
