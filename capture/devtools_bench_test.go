package capture

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestMeasureDevToolsTransport measures capture time per page over the DevTools pipe against
// a WebSocket to a DevTools port, each with Chromium's sandbox on and off, in one run: four
// browsers, the pages captured in rounds that rotate the order, so machine load falls on all
// alike. A measurement, not a check: it runs with SNAPQ_MEASURE_DEVTOOLS=N (rounds).
//
//	SNAPQ_MEASURE_DEVTOOLS=20 go test -count=1 -run '^TestMeasureDevToolsTransport$' -v ./capture
func TestMeasureDevToolsTransport(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("SNAPQ_MEASURE_DEVTOOLS"))
	if rounds < 1 {
		t.Skip("a measurement: set SNAPQ_MEASURE_DEVTOOLS to the number of rounds")
	}
	configs := []struct {
		name  string
		cfg   Config
		start func(*testing.T, Config) *Browser
	}{
		{"pipe, sandbox", Config{Tabs: 1}, newBrowser},
		{"websocket, sandbox", Config{Tabs: 1}, newPortBrowser},
		{"pipe, no sandbox", Config{Tabs: 1, NoSandbox: true}, newBrowser},
		{"websocket, no sandbox", Config{Tabs: 1, NoSandbox: true}, newPortBrowser},
	}
	pages := []struct{ name, url string }{
		{"short page, 1 screenshot", fixtures.URL + "/page?h=100"},
		{"tall page, 6 segments", fixtures.URL + "/tall?h=4000"},
	}
	browsers := make([]*Browser, len(configs))
	for i, c := range configs {
		browsers[i] = c.start(t, c.cfg)
		for _, p := range pages { // warm up
			mustCapture(t, browsers[i], Request{URL: p.url, Name: "warm"})
		}
	}
	for _, p := range pages {
		times := make([][]time.Duration, len(configs))
		for r := range rounds {
			for k := range configs {
				i := (k + r) % len(configs)
				start := time.Now()
				mustCapture(t, browsers[i], Request{URL: p.url, Name: "m"})
				times[i] = append(times[i], time.Since(start))
			}
		}
		base := median(times[0])
		for i, c := range configs {
			m := median(times[i])
			t.Logf("%s: %-22s median %6.1f ms, mean %6.1f ms (%.2f x pipe+sandbox), %d captures",
				p.name, c.name, ms(m), ms(mean(times[i])), float64(m)/float64(base), len(times[i]))
		}
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
