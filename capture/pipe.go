package capture

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/go-rod/rod/lib/cdp"
)

// A launched Chromium is driven over --remote-debugging-pipe, not a DevTools port: Chromium
// reads CDP commands from its file descriptor 3 and writes answers and events to its file
// descriptor 4, each message a JSON text ended by a NUL byte. A TCP port on loopback would let
// any local process, of any user, drive the browser (open pages as the jobs' logins, read
// their cookies); a pipe is held by the worker alone. SNAPQ_CHROME_URL endpoints stay
// WebSockets (remote.go).

// maxPipeMessage bounds one message read from Chromium: far above the largest a capture asks
// for (a base64 screenshot of Chromium's 16,384 px texture limit), so only a broken or hostile
// browser reaches it, and the connection fails instead of the worker's memory.
const maxPipeMessage = 512 << 20

// errPipeMessageTooLarge is the error of a message past maxPipeMessage.
var errPipeMessageTooLarge = fmt.Errorf("chromium sent a DevTools message over %d MiB", maxPipeMessage>>20)

// transport is a CDP connection: rod's WebSocket (remote browsers) or a pipeConn.
type transport interface {
	cdp.WebSocketable
	Close() error
}

var (
	_ transport = (*pipeConn)(nil)
	_ transport = (*cdp.WebSocket)(nil)
)

// pipeConn is the worker's side of Chromium's DevTools pipe. Send is safe for concurrent use;
// Read has one caller at a time (rod's reading goroutine). Close unblocks both.
type pipeConn struct {
	wmu sync.Mutex
	w   *os.File // to Chromium's fd 3
	rf  *os.File // from Chromium's fd 4
	r   *bufio.Reader

	closeOnce sync.Once
	closeErr  error
}

// devtoolsPipes are the two pipes of a Chromium about to start: child holds the ends it
// inherits (as fds 3 and 4, through exec.Cmd.ExtraFiles), conn the worker's.
type devtoolsPipes struct {
	child []*os.File
	conn  *pipeConn
}

// newDevtoolsPipes creates the pipes. The caller closes child once Chromium has started (or
// failed to), and conn when done with the browser.
func newDevtoolsPipes() (*devtoolsPipes, error) {
	cmdR, cmdW, err := os.Pipe() // commands: worker writes, Chromium reads (its fd 3)
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe() // answers and events: Chromium writes (its fd 4), worker reads
	if err != nil {
		_ = cmdR.Close()
		_ = cmdW.Close()
		return nil, err
	}
	conn := &pipeConn{w: cmdW, rf: outR, r: bufio.NewReaderSize(outR, 256<<10)}
	return &devtoolsPipes{child: []*os.File{cmdR, outW}, conn: conn}, nil
}

// closeChild closes the worker's copies of Chromium's ends, so that Read sees EOF when
// Chromium exits.
func (p *devtoolsPipes) closeChild() {
	for _, f := range p.child {
		_ = f.Close()
	}
}

// Send writes one message.
func (c *pipeConn) Send(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// One write per message: the NUL is appended to a copy, not after a second write that a
	// Close between the two could split.
	msg := make([]byte, len(data)+1)
	copy(msg, data)
	_, err := c.w.Write(msg)
	return err
}

// Read returns the next message, without its NUL.
func (c *pipeConn) Read() ([]byte, error) {
	var msg []byte
	for {
		chunk, err := c.r.ReadSlice(0)
		if len(msg)+len(chunk) > maxPipeMessage {
			return nil, errPipeMessageTooLarge
		}
		msg = append(msg, chunk...)
		switch {
		case err == nil:
			return msg[:len(msg)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

// Close closes both pipes: Chromium reads EOF on its fd 3 and exits.
func (c *pipeConn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = errors.Join(c.w.Close(), c.rf.Close()) })
	return c.closeErr
}

// handshake sends Browser.getVersion and reads until its answer: Chromium's DevTools pipe
// works. It runs before rod's client takes the pipe, so the id cannot clash with rod's.
func (c *pipeConn) handshake() error {
	if err := c.Send([]byte(`{"id":1,"method":"Browser.getVersion"}`)); err != nil {
		return fmt.Errorf("write to chromium's DevTools pipe: %w", err)
	}
	for {
		b, err := c.Read()
		if err != nil {
			return fmt.Errorf("read chromium's DevTools pipe: %w", err)
		}
		var m struct {
			ID    int             `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(b, &m) != nil || m.ID != 1 {
			continue // an event
		}
		if m.Error != nil {
			return fmt.Errorf("chromium's DevTools pipe: Browser.getVersion: %s", m.Error)
		}
		return nil
	}
}
