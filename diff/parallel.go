package diff

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// chunkPixels is about how many canvas pixels one unit of the row-parallel
// comparison holds: enough to amortise handing it out (an atomic add), small
// enough that a 256×256 pair is four units, so a goroutine that starts late
// or loses its core for a while (a busy or virtual machine) holds back a
// quarter of the work, not half.
const chunkPixels = 1 << 14

// run compares canvas rows y0 to y1 (exclusive), in chunks of rows shared
// out to up to GOMAXPROCS goroutines, the caller's one of them (so the
// comparison is never slower than on one core by more than starting the
// others: when they start late, the caller has taken the chunks), each with
// its own counts, bounds and scratch, merged into c at the end. Counts do
// not depend on the order of rows, and every row's diff image is its own,
// so the result is the sequential one. It reports false when a row of
// unverified rasters was found translucent (c.verify).
func (c *comparer) run(y0, y1 int) bool {
	rows := max(4, chunkPixels/max(1, c.w))
	chunks := (y1 - y0 + rows - 1) / rows
	workers := min(runtime.GOMAXPROCS(0), chunks)
	if workers <= 1 {
		c.rows(y0, y1, nil)
		return !c.translucent
	}
	var next atomic.Int64
	var stop atomic.Bool
	work := func(f *comparer) {
		for {
			n := int(next.Add(1)) - 1
			if n >= chunks || stop.Load() {
				return
			}
			f.prevFaded = false // the row above belongs to another chunk
			f.rows(y0+n*rows, min(y1, y0+(n+1)*rows), &stop)
		}
	}
	forks := make([]*comparer, workers)
	var wg sync.WaitGroup
	for k := range forks {
		forks[k] = c.fork()
		if k > 0 {
			wg.Go(func() { work(forks[k]) })
		}
	}
	work(forks[0])
	wg.Wait()
	for _, f := range forks {
		c.merge(f)
	}
	return !c.translucent
}

// rows compares rows y0 to y1 in order; it stops at a translucent row,
// setting stop for the other goroutines.
func (c *comparer) rows(y0, y1 int, stop *atomic.Bool) {
	for y := y0; y < y1; y++ {
		c.compareRow(y)
		if c.translucent {
			if stop != nil {
				stop.Store(true)
			}
			return
		}
	}
}

// fork is a comparer over the same images, options and diff image, with
// counts, bounds and scratch of its own.
func (c *comparer) fork() *comparer {
	f := *c
	f.res = &Result{}
	f.minX, f.minY, f.maxX, f.maxY = c.w, c.h, -1, -1
	if c.rowMask != nil {
		f.rowMask = make([]bool, len(c.rowMask))
	}
	f.prevFaded, f.translucent = false, false
	return &f
}

// merge adds f's counts and bounds to c's.
func (c *comparer) merge(f *comparer) {
	c.res.DiffPixels += f.res.DiffPixels
	c.res.AAPixels += f.res.AAPixels
	c.res.MaskedPixels += f.res.MaskedPixels
	c.minX, c.minY = min(c.minX, f.minX), min(c.minY, f.minY)
	c.maxX, c.maxY = max(c.maxX, f.maxX), max(c.maxY, f.maxY)
	c.translucent = c.translucent || f.translucent
}
