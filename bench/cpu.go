package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// cpuSnapshot maps pid → (command, CPU ticks) for every process.
type cpuSnapshot map[int]procCPU

type procCPU struct {
	comm  string
	ticks int64
}

func takeCPU() cpuSnapshot {
	snap := cpuSnapshot{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndex(s, ") ")
		if open < 0 || end < 0 {
			continue
		}
		f := strings.Fields(s[end+2:])
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		snap[pid] = procCPU{comm: s[open+1 : end], ticks: ut + st}
	}
	return snap
}

// cpuReport prints CPU seconds per command name between two snapshots,
// per page, largest first (USER_HZ is 100 on Linux).
func cpuReport(label string, before, after cpuSnapshot, pages int) {
	by := map[string]int64{}
	var total int64
	for pid, a := range after {
		d := a.ticks - before[pid].ticks
		if d > 0 {
			by[a.comm] += d
			total += d
		}
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return by[names[i]] > by[names[j]] })
	parts := []string{}
	for _, n := range names[:min(7, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %.0f", n, float64(by[n])*10/float64(pages)))
	}
	fmt.Printf("bench: %s CPU ms per page: total %.0f (%s)\n", label, float64(total)*10/float64(pages), strings.Join(parts, ", "))
}
