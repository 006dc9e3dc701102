package ratelimit

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/snapq/snapq/internal/testenv"
)

func TestHostSemaphoreCap(t *testing.T) {
	rdb := setup(t)
	ctx := context.Background()
	sem := NewHostSemaphore(rdb)
	host := "127.0.0.1:" + testenv.RandomSuffix(3)
	r1, ok1, err1 := sem.Acquire(ctx, host, 2, 0)
	r2, ok2, err2 := sem.Acquire(ctx, host, 2, 0)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		t.Fatalf("two slots of two: %v %v %v %v", ok1, ok2, err1, err2)
	}
	start := time.Now()
	if _, ok, err := sem.Acquire(ctx, host, 2, 300*time.Millisecond); ok || err != nil {
		t.Fatalf("third slot of two: ok=%v err=%v", ok, err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("a busy host held the caller %s, want about the 300ms wait", waited)
	}
	// Another host has its own slots.
	if r, ok, _ := sem.Acquire(ctx, host+"0", 2, 0); !ok {
		t.Fatal("another host refused")
	} else {
		r()
	}
	// A slot given back is taken by a waiter.
	go func() { time.Sleep(200 * time.Millisecond); r1() }()
	r3, ok, err := sem.Acquire(ctx, host, 2, 2*time.Second)
	if !ok || err != nil {
		t.Fatalf("waiter after a release: ok=%v err=%v", ok, err)
	}
	r1() // twice is harmless
	if n := rdb.ZCard(ctx, HostKey(host)).Val(); n != 2 {
		t.Fatalf("%d leases in %s, want 2", n, HostKey(host))
	}
	r2()
	r3()
	if n := rdb.ZCard(ctx, HostKey(host)).Val(); n != 0 {
		t.Fatalf("%d leases after every release, want 0", n)
	}
	if !strings.HasPrefix(HostKey(host), "snapq:{host:") {
		t.Fatalf("key %s has no hash tag", HostKey(host))
	}
}

// TestHostSemaphoreHolderProcess is the holder that TestHostLeaseOfKilledHolderExpires
// runs as a process of its own and kills; it does nothing in a normal run.
func TestHostSemaphoreHolderProcess(t *testing.T) {
	addr, host := os.Getenv("SNAPQ_TEST_HOLDER_REDIS"), os.Getenv("SNAPQ_TEST_HOLDER_HOST")
	if addr == "" {
		return
	}
	db, _ := strconv.Atoi(os.Getenv("SNAPQ_TEST_HOLDER_DB"))
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	sem := &HostSemaphore{rdb: rdb, TTL: time.Second}
	if _, ok, err := sem.Acquire(context.Background(), host, 1, 0); !ok || err != nil {
		os.Stdout.WriteString("refused\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("held\n")
	time.Sleep(time.Minute) // renewing, until killed
	os.Exit(0)
}

func TestHostLeaseOfKilledHolderExpires(t *testing.T) {
	db := testenv.Redis(t)
	rdb := redis.NewClient(db.Options())
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	host := "127.0.0.1:" + testenv.RandomSuffix(3)

	cmd := exec.Command(os.Args[0], "-test.run=^TestHostSemaphoreHolderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SNAPQ_TEST_HOLDER_REDIS="+db.Addr, "SNAPQ_TEST_HOLDER_DB="+strconv.Itoa(db.DB),
		"SNAPQ_TEST_HOLDER_HOST="+host)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("holder said %q", line)
	}
	sem := &HostSemaphore{rdb: rdb, TTL: time.Second}
	// The live holder renews its 1 s lease: it still holds it 1.5 s later.
	time.Sleep(1500 * time.Millisecond)
	if _, ok, err := sem.Acquire(ctx, host, 1, 0); ok || err != nil {
		t.Fatalf("slot of a live holder taken: ok=%v err=%v", ok, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	release, ok, err := sem.Acquire(ctx, host, 1, 3*time.Second)
	if !ok || err != nil {
		t.Fatalf("slot of a killed holder not reclaimed within 3 s: ok=%v err=%v", ok, err)
	}
	release()
	if d := time.Since(killed); d > 1500*time.Millisecond {
		t.Fatalf("reclaimed %s after the kill, want within the 1 s TTL", d)
	}
	t.Logf("killed holder's slot reclaimed %s after the kill", time.Since(killed).Round(time.Millisecond))
}

// An AcquireFirst caller waiting for a host at its cap takes the next free
// slot ahead of Acquire's callers, within the same limit, and leaves no trace
// when it gives up.
func TestHostSemaphoreFirstGoesAhead(t *testing.T) {
	rdb := setup(t)
	ctx := context.Background()
	sem := NewHostSemaphore(rdb)
	host := "127.0.0.1:" + testenv.RandomSuffix(3)
	held, ok, err := sem.Acquire(ctx, host, 1, 0)
	if !ok || err != nil {
		t.Fatalf("the one slot: ok=%v err=%v", ok, err)
	}
	type got struct {
		release func()
		ok      bool
		err     error
	}
	first := make(chan got, 1)
	go func() {
		r, ok, err := sem.AcquireFirst(ctx, host, 1, time.Minute)
		first <- got{r, ok, err}
	}()
	for rdb.ZCard(ctx, firstKey(host)).Val() == 0 { // until it waits
		time.Sleep(5 * time.Millisecond)
	}
	held()
	if _, ok, err := sem.Acquire(ctx, host, 1, 0); ok || err != nil {
		t.Fatalf("a batch caller took the slot an interactive one waits for: ok=%v err=%v", ok, err)
	}
	f := <-first
	if !f.ok || f.err != nil {
		t.Fatalf("the interactive caller: ok=%v err=%v", f.ok, f.err)
	}
	if n := rdb.ZCard(ctx, HostKey(host)).Val(); n != 1 {
		t.Fatalf("%d leases of a limit of 1", n)
	}
	if n := rdb.ZCard(ctx, firstKey(host)).Val(); n != 0 {
		t.Fatalf("%d waiters left after the interactive caller got its slot, want 0", n)
	}
	// Given up: its wait is over and the slot still held.
	if _, ok, err := sem.AcquireFirst(ctx, host, 1, 50*time.Millisecond); ok || err != nil {
		t.Fatalf("a second interactive caller past its wait: ok=%v err=%v", ok, err)
	}
	if n := rdb.ZCard(ctx, firstKey(host)).Val(); n != 0 {
		t.Fatalf("%d waiters left by a caller that gave up, want 0", n)
	}
	f.release()
	if r, ok, err := sem.Acquire(ctx, host, 1, 0); !ok || err != nil {
		t.Fatalf("a batch caller with nobody ahead: ok=%v err=%v", ok, err)
	} else {
		r()
	}
}

// An AcquireFirst caller with a higher limit than Acquire's (an interactive
// job's headroom above the host's cap) takes a slot above the cap at once,
// which Acquire's callers never take; its own limit still holds.
func TestHostSemaphoreFirstHeadroom(t *testing.T) {
	rdb := setup(t)
	ctx := context.Background()
	sem := NewHostSemaphore(rdb)
	host := "127.0.0.1:" + testenv.RandomSuffix(3)
	var held []func()
	for range 2 { // the batch fills the cap of 2
		r, ok, err := sem.Acquire(ctx, host, 2, 0)
		if !ok || err != nil {
			t.Fatalf("a batch slot: ok=%v err=%v", ok, err)
		}
		held = append(held, r)
	}
	over, ok, err := sem.AcquireFirst(ctx, host, 3, 0)
	if !ok || err != nil {
		t.Fatalf("the interactive caller at the batch's cap with headroom 1: ok=%v err=%v; want the slot at once", ok, err)
	}
	if _, ok, _ := sem.AcquireFirst(ctx, host, 3, 0); ok {
		t.Fatal("a second interactive caller took a fourth slot of a limit of 3")
	}
	// A batch page done: the freed slot is under the batch's cap again, but the
	// interactive lease counts against it.
	held[0]()
	if _, ok, _ := sem.Acquire(ctx, host, 2, 0); ok {
		t.Fatal("a batch caller took a slot while the batch's 1 and the interactive lease fill its cap of 2")
	}
	over()
	if r, ok, err := sem.Acquire(ctx, host, 2, 0); !ok || err != nil {
		t.Fatalf("a batch caller under its cap: ok=%v err=%v", ok, err)
	} else {
		r()
	}
	held[1]()
	if n := rdb.ZCard(ctx, HostKey(host)).Val(); n != 0 {
		t.Fatalf("%d leases left, want 0", n)
	}
}
