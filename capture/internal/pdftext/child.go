package pdftext

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"time"
)

// The reader is third-party code on untrusted bytes that can loop for ever, overflow its
// stack (a fatal error recover cannot catch) or inflate a small file into gigabytes. So the
// worker never runs it in its own process: ReadInChild re-executes the running executable
// with childArg (and childEnv set), the child applies its own CPU and address-space limits
// before it reads a byte, reads the PDF from stdin and answers one JSON childResult on
// stdout. The child is served by this package's init, before main runs, so every binary
// that links capture (the worker, test binaries, bench) can be re-executed as one without a
// hook of its own and without a separate executable to install.
const (
	childArg = "__snapq-pdftext"
	childEnv = "SNAPQ_PDFTEXT_CHILD"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == childArg && os.Getenv(childEnv) == "1" {
		os.Exit(serveChild(os.Args[2:], os.Stdin, os.Stdout))
	}
}

// Limits bound one ReadInChild.
type Limits struct {
	// Timeout is the wall clock the child gets; the caller's context may end it sooner.
	// Required.
	Timeout time.Duration
	// Memory is how much address space the child may map beyond what it has when it starts
	// (RLIMIT_AS, where there is one); 0 means no limit.
	Memory int64
	// Output caps the JSON the child answers (the text of all pages); past it the read
	// fails with ErrTooLarge. 0 means 64 MiB.
	Output int64

	goReader bool // tests: read with the Go reader even when poppler is installed
}

// readerDir is the folder of poppler's tools the child reads with, "" for the Go reader.
func (lim Limits) readerDir() string {
	if lim.goReader {
		return ""
	}
	return popplerDir()
}

// DefaultOutput is Limits.Output when it is zero.
const DefaultOutput = 64 << 20

// childResult is the child's answer on stdout.
type childResult struct {
	Doc   Doc         `json:"doc"`
	Error *childError `json:"error,omitempty"`
}

type childError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Detail  string `json:"detail,omitempty"` // the reader's own error, when there was one
}

// kinds names the Kinds on the wire between parent and child.
var kinds = map[string]error{
	"encrypted":      ErrEncrypted,
	"invalid":        ErrInvalid,
	"too_many_pages": ErrTooManyPages,
	"no_text":        ErrNoText,
	"too_large":      ErrTooLarge,
}

// ReadInChild is Read run in a child process under lim: a hang, a crash or a memory blow-up
// of the reader ends the child, not the caller. A child that runs out of time (wall clock or
// CPU) fails with ErrTimeout, one that dies otherwise (a stack overflow, out of memory) with
// ErrInvalid, one whose answer is over lim.Output with ErrTooLarge. When ctx is canceled the
// child is killed and ctx's error returned, not an *Error; when its deadline passes first,
// that is ErrTimeout like lim.Timeout.
func ReadInChild(ctx context.Context, data []byte, maxPages int, withText bool, lim Limits) (Doc, error) {
	if lim.Output <= 0 {
		lim.Output = DefaultOutput
	}
	exe, err := os.Executable()
	if err != nil {
		return Doc{}, fmt.Errorf("find the executable to run the PDF reader: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	cpu := int64(lim.Timeout/time.Second) + 1 // the wall clock is the tighter bound; this one outlives a dead parent
	cmd := exec.CommandContext(rctx, exe, childArg, strconv.Itoa(maxPages), strconv.FormatBool(withText),
		strconv.FormatInt(cpu, 10), strconv.FormatInt(lim.Memory, 10), lim.readerDir())
	cmd.Env = []string{childEnv + "=1", "GOMAXPROCS=1", "GOTRACEBACK=single"}
	cmd.Stdin = bytes.NewReader(data)
	stdout := &capped{max: lim.Output}
	stderr := &capped{max: 4 << 10, keepTail: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { killGroup(cmd.Process.Pid); return nil }
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	if cmd.Process != nil {
		killGroup(cmd.Process.Pid) // nothing the child started outlives it
	}
	took := time.Since(start).Round(time.Millisecond)
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return Doc{}, fmt.Errorf("read the PDF: %w", ctx.Err())
	case rctx.Err() != nil:
		return Doc{}, newError(ErrTimeout, rctx.Err(), "the PDF could not be read within %s", took)
	case err != nil && cmd.ProcessState == nil:
		return Doc{}, fmt.Errorf("start the PDF reader: %w", err)
	case err != nil && cpuSpent(cmd.ProcessState) >= time.Duration(cpu)*time.Second:
		return Doc{}, newError(ErrTimeout, err, "the PDF could not be read within %ds of CPU time", cpu)
	case err != nil:
		return Doc{}, newError(ErrInvalid, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes())),
			"the PDF reader failed on the PDF (a crash or out of memory)")
	case stdout.over:
		return Doc{}, newError(ErrTooLarge, nil, "the PDF's text is over the %d MiB limit", lim.Output>>20)
	}
	var res childResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return Doc{}, newError(ErrInvalid, err, "the PDF reader gave no answer")
	}
	if e := res.Error; e != nil {
		kind, ok := kinds[e.Kind]
		if !ok {
			kind = ErrInvalid
		}
		var detail error
		if e.Detail != "" {
			detail = errors.New(e.Detail)
		}
		return Doc{}, &Error{Kind: kind, Message: e.Message, Err: detail}
	}
	return res.Doc, nil
}

func cpuSpent(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

// serveChild is the child: args are maxPages, withText, CPU seconds, address-space bytes
// (0: none) and the folder of poppler's tools ("": the Go reader). It limits itself (the
// limits pass on to the tools it runs), reads the PDF from in and writes one childResult to
// out. The exit status is 0 whenever an answer was written.
func serveChild(args []string, in io.Reader, out io.Writer) int {
	if len(args) != 5 {
		fmt.Fprintln(os.Stderr, "pdftext child: want 5 arguments, got", len(args))
		return 2
	}
	maxPages, err1 := strconv.Atoi(args[0])
	withText, err2 := strconv.ParseBool(args[1])
	cpu, err3 := strconv.ParseInt(args[2], 10, 64)
	mem, err4 := strconv.ParseInt(args[3], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		fmt.Fprintln(os.Stderr, "pdftext child:", err)
		return 2
	}
	if err := limitSelf(cpu, mem); err != nil {
		fmt.Fprintln(os.Stderr, "pdftext child: limit:", err)
		return 2
	}
	// A nesting bomb then dies at 64 MiB of stack rather than the default 1 GB.
	debug.SetMaxStack(64 << 20)
	if mem > 0 {
		debug.SetMemoryLimit(mem / 2) // collect hard before the address space runs out
	}
	data, err := io.ReadAll(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pdftext child: read stdin:", err)
		return 2
	}
	var res childResult
	res.Doc, err = readWith(args[4], data, maxPages, withText)
	if err != nil {
		res.Doc = Doc{}
		var pe *Error
		if !errors.As(err, &pe) {
			pe = newError(ErrInvalid, err, "the PDF could not be parsed")
		}
		res.Error = &childError{Kind: kindName(pe.Kind), Message: pe.Message}
		if pe.Err != nil {
			res.Error.Detail = pe.Err.Error()
		}
	}
	if err := json.NewEncoder(out).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "pdftext child: write:", err)
		return 2
	}
	return 0
}

func kindName(kind error) string {
	for name, k := range kinds {
		if k == kind {
			return name
		}
	}
	return "invalid"
}

// capped keeps at most max bytes written to it (the first ones, or with keepTail the last
// ones) and notes whether more came. It never fails a write, so the child is never blocked
// on a full pipe.
type capped struct {
	max      int64
	keepTail bool
	buf      []byte
	over     bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	if int64(len(c.buf)) > c.max {
		c.over = true
		if c.keepTail {
			c.buf = append(c.buf[:0], c.buf[int64(len(c.buf))-c.max:]...)
		} else {
			c.buf = c.buf[:c.max]
		}
	}
	return len(p), nil
}

func (c *capped) Bytes() []byte { return c.buf }
