package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// procGroups names the processes a measurement cares about: roots and their
// descendants (Chromium by its --type), Chromium processes carrying marker in
// their environment (sandboxed children re-parented away from the tree), and
// the shared services by command. Everything else on the machine (other
// engineers' work) is left out.
type procGroups struct {
	roots  map[int]string // pid → group of that process itself
	alone  map[int]string // pid → group, without its descendants
	marker []byte         // "TMPDIR=…\x00" of the stack's Chromium, or nil
}

// services are the shared services by their command name: their CPU also
// counts whatever else uses them at the time.
var services = map[string]string{"minio": "minio", "postgres": "postgres", "redis-server": "redis"}

// members maps every process of interest to its group.
func (g procGroups) members() map[int]string {
	procs, children := procTable()
	out := map[int]string{}
	var walk func(pid int, group string)
	walk = func(pid int, group string) {
		if _, seen := out[pid]; seen {
			return
		}
		out[pid] = group
		for _, c := range children[pid] {
			walk(c, childGroup(c, procs[c].comm))
		}
	}
	for pid, group := range g.alone {
		out[pid] = group
	}
	for pid, group := range g.roots {
		if pid != 0 {
			walk(pid, group)
		}
	}
	for pid, p := range procs {
		if _, seen := out[pid]; seen {
			continue
		}
		if s, ok := services[p.comm]; ok {
			out[pid] = s
		} else if g.marker != nil && strings.HasPrefix(p.comm, "chrom") {
			if env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil && bytes.Contains(env, g.marker) {
				walk(pid, childGroup(pid, p.comm))
			}
		}
	}
	return out
}

// childGroup is a descendant's group: Chromium's by its --type, else "children".
func childGroup(pid int, comm string) string {
	cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if !strings.HasPrefix(comm, "chrom") && !bytes.Contains(cmd, []byte("chrom")) {
		return "children"
	}
	// Chromium's zygote children rewrite their command line as one string (setproctitle):
	// split on spaces as well as NULs.
	for _, arg := range bytes.Fields(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})) {
		if t, ok := bytes.CutPrefix(arg, []byte("--type=")); ok {
			switch string(t) {
			case "renderer":
				return "chromium renderer"
			case "gpu-process":
				return "chromium gpu"
			case "zygote":
				return "chromium zygote"
			default:
				return "chromium " + string(t)
			}
		}
	}
	return "chromium browser"
}

// cpuTicks is a process's own CPU ticks and those of its waited-for children
// (the renderers a browser reaped during the measurement).
type cpuTicks struct{ own, reaped int64 }

func readTicks(pid int) (cpuTicks, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return cpuTicks{}, false
	}
	s := string(b)
	end := strings.LastIndex(s, ") ")
	if end < 0 {
		return cpuTicks{}, false
	}
	f := strings.Fields(s[end+2:])
	if len(f) < 15 {
		return cpuTicks{}, false
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	return cpuTicks{own: n(11) + n(12), reaped: n(13) + n(14)}, true
}

// groupCPU is one measurement of CPU by group.
type groupCPU struct {
	g      procGroups
	before map[int]cpuTicks
}

func startGroupCPU(g procGroups) *groupCPU {
	c := &groupCPU{g: g, before: map[int]cpuTicks{}}
	for pid := range g.members() {
		if t, ok := readTicks(pid); ok {
			c.before[pid] = t
		}
	}
	return c
}

// stop returns CPU seconds by group since start. A process that started
// during the measurement counts whole; one that ended is counted through its
// parent's reaped time, as "<parent group> (reaped children)".
func (c *groupCPU) stop() map[string]float64 {
	out := map[string]float64{}
	for pid, group := range c.g.members() {
		t, ok := readTicks(pid)
		if !ok {
			continue
		}
		b := c.before[pid]
		out[group] += float64(t.own-b.own) / 100
		if r := t.reaped - b.reaped; r > 0 {
			out[group+" (reaped children)"] += float64(r) / 100
		}
	}
	return out
}

// cpuTable sums CPU seconds by group over rounds, per label (floor, e2e, …),
// and the whole machine's busy and wall seconds over the same runs.
type cpuTable struct {
	mu      sync.Mutex
	sec     map[string]map[string]float64
	pages   map[string]int
	machine map[string]machineRun
}

// machineCPU is the machine's CPU ticks from /proc/stat (every core, USER_HZ
// 100) by kind: it counts what no process of ours is charged for — the
// kernel's softirq work for loopback traffic, other users of the machine.
type machineCPU struct{ user, system, irq, steal int64 }

func readMachineCPU() machineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	n := func(i int) int64 {
		if i >= len(f) {
			return 0
		}
		v, _ := strconv.ParseInt(f[i], 10, 64)
		return v
	}
	return machineCPU{user: n(1) + n(2), system: n(3), irq: n(6) + n(7), steal: n(8)}
}

func (m machineCPU) sub(o machineCPU) machineCPU {
	return machineCPU{m.user - o.user, m.system - o.system, m.irq - o.irq, m.steal - o.steal}
}

func (m machineCPU) busy() int64 { return m.user + m.system + m.irq + m.steal }

// addMachine adds one run's machine CPU and wall time.
func (t *cpuTable) addMachine(label string, d machineCPU, wall time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.machine == nil {
		t.machine = map[string]machineRun{}
	}
	m := t.machine[label]
	m.cpu = machineCPU{m.cpu.user + d.user, m.cpu.system + d.system, m.cpu.irq + d.irq, m.cpu.steal + d.steal}
	m.wall += wall
	t.machine[label] = m
}

type machineRun struct {
	cpu  machineCPU
	wall time.Duration
}

// printMachine writes the machine's CPU during label's runs.
func (t *cpuTable) printMachine(l string, own float64) {
	m, pages := t.machine[l], float64(t.pages[l])
	if m.wall <= 0 {
		return
	}
	ms := func(ticks int64) float64 { return float64(ticks) * 10 / pages }
	fmt.Printf("bench:   machine during %s: %.0f CPU ms per page (user %.0f, system %.0f, irq+softirq %.0f, steal %.0f), %.2f of %d cores busy (own processes %.2f)\n",
		l, ms(m.cpu.busy()), ms(m.cpu.user), ms(m.cpu.system), ms(m.cpu.irq), ms(m.cpu.steal),
		float64(m.cpu.busy())/100/m.wall.Seconds(), runtime.NumCPU(), own/m.wall.Seconds())
}

func (t *cpuTable) add(label string, by map[string]float64, pages int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sec == nil {
		t.sec, t.pages = map[string]map[string]float64{}, map[string]int{}
	}
	if t.sec[label] == nil {
		t.sec[label] = map[string]float64{}
	}
	for k, v := range by {
		t.sec[label][k] += v
	}
	t.pages[label] += pages
}

// print writes CPU ms per page by group for each label.
func (t *cpuTable) print() {
	labels := make([]string, 0, len(t.sec))
	for l := range t.sec {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		by := t.sec[l]
		groups := make([]string, 0, len(by))
		total := 0.0
		for g, v := range by {
			groups = append(groups, g)
			if _, shared := sharedGroup[strings.TrimSuffix(g, " (reaped children)")]; !shared {
				total += v
			}
		}
		sort.Slice(groups, func(i, j int) bool { return by[groups[i]] > by[groups[j]] })
		parts := make([]string, 0, len(groups))
		for _, g := range groups {
			parts = append(parts, fmt.Sprintf("%s %.0f", g, by[g]*1000/float64(t.pages[l])))
		}
		fmt.Printf("bench: CPU ms per page, %s: own processes %.0f; %s\n", l, total*1000/float64(t.pages[l]), strings.Join(parts, ", "))
		t.printMachine(l, total)
	}
	fmt.Println("bench:   (minio, postgres and redis are shared with every other user of this machine: their CPU during the floor is the others' background)")
}

var sharedGroup = map[string]struct{}{"minio": {}, "postgres": {}, "redis": {}}

// rendererPSS samples, every second, the PSS of the Chromium renderers of a
// process set: the peak of their sum and the peak of the largest one.
func rendererPSS(g procGroups) func() (sumMiB, maxMiB float64) {
	var sum, big float64
	stopSum := samplePeak(func() float64 {
		total, largest := 0.0, 0.0
		for pid, group := range g.members() {
			if group == "chromium renderer" {
				v := pssKiB(pid) / 1024
				total += v
				largest = max(largest, v)
			}
		}
		big = max(big, largest) // samplePeak calls sample from one goroutine
		return total
	})
	return func() (float64, float64) {
		sum = stopSum()
		return sum, big
	}
}
