package serve

import (
	"bufio"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormsim/stormsim/internal/memnet"
)

// scrape returns the samples of a /metrics page, keyed by the metric name
// with its labels as printed ("name{a=\"x\"}").
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	return scrapeWith(t, http.DefaultClient, url)
}

// scrapeWith is scrape through client.
func scrapeWith(t *testing.T, client *http.Client, url string) map[string]float64 {
	t.Helper()
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestServeStatsLatencyAndEdgeCounters: front calls back, which takes a
// service time uniform on [20 ms, 60 ms] and fails 30 % of its attempts;
// front retries them. On the bubble's clock (a time script: no real time
// passes) an attempt's latency at back is its service time exactly, so
// back's /stats latency must match the service-time distribution with no
// allowance for overhead: every latency within [20 ms, 60 ms], and an
// empirical q-quantile of n draws within 4 standard errors
// sqrt(q(1-q)/n)/f of the theory (density f = 1/40 ms), the mean within 4
// of 40 ms/sqrt(12)/sqrt(n). /metrics must carry the same count as a
// histogram in seconds (nothing below 20 ms, few below 25 ms) and front's
// edge counters equal to /stats'.
func TestServeStatsLatencyAndEdgeCounters(t *testing.T) {
	synctest.Test(t, testServeStatsLatencyAndEdgeCounters)
}

func testServeStatsLatencyAndEdgeCounters(t *testing.T) {
	var nw memnet.Network
	cl := startScenarioWith(t, "stats.yaml", `
name: stats
seed: 7
duration: 10s
workload: {entry: front, rate: 1}
services:
  - name: front
    workers: 64
    service_time: {dist: constant, value: 0s}
    calls:
      - to: back
        timeout: 2s
        retry: {max_attempts: 4, on: [error], backoff: {initial: 1ms, jitter: none}}
  - name: back
    workers: 64
    error_rate: 0.3
    service_time: {dist: uniform, min: 20ms, max: 60ms}
`, ClusterOptions{network: &nw})
	front, back := cl.URLs["front"], cl.URLs["back"]
	// /stats and /metrics are served at the root of each service's server.
	frontRoot, backRoot := strings.TrimSuffix(front, "/front"), strings.TrimSuffix(back, "/back")

	// 240 requests, 16 at a time: about 340 attempts at back in ~1 s.
	const requests, concurrency = 240, 16
	client := &http.Client{Transport: &http.Transport{DialContext: nw.DialContext}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	next := make(chan struct{}, requests)
	for range requests {
		next <- struct{}{}
	}
	close(next)
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				resp, err := client.Get(front)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()

	bs := getStatsWith(t, client, backRoot)
	l := bs.LatencyMs
	if l == nil {
		t.Fatal("back's /stats has no latency_ms")
	}
	if l.Count != bs.All.Attempts || l.Count < 300 {
		t.Fatalf("latency count %d, want back's %d attempts (≥ 300)", l.Count, bs.All.Attempts)
	}
	n := float64(l.Count)
	const lo, hi = 20.0, 60.0 // ms
	within := func(name string, got, want, se float64) {
		t.Helper()
		if got < want-4*se || got > want+4*se {
			t.Errorf("%s = %.2f ms, want %.2f ± %.2f ms", name, got, want, 4*se)
		}
	}
	quantile := func(name string, got, q float64) {
		t.Helper()
		within(name, got, lo+q*(hi-lo), (hi-lo)*math.Sqrt(q*(1-q)/n))
	}
	quantile("p50", l.P50, 0.5)
	quantile("p90", l.P90, 0.9)
	within("mean", l.Mean, (lo+hi)/2, (hi-lo)/math.Sqrt(12*n))
	// The largest of n service times is below hi-(hi-lo)·ln(1e4)/n with
	// probability 1e-4; no latency is above hi (the histogram's 3
	// significant digits above the exact max aside).
	if minMax := hi - (hi-lo)*math.Log(1e4)/n; l.Max < minMax || l.Max > hi || l.P999 > hi*1.001 || l.Max*1.001 < l.P999 || l.P999 < l.P99 || l.P99 < l.P90 {
		t.Errorf("p90 %.2f p99 %.2f p999 %.2f max %.2f: want ordered and max in [%.2f, %.0f] ms", l.P90, l.P99, l.P999, l.Max, minMax, hi)
	}

	bm := scrapeWith(t, client, backRoot)
	if got := bm[`stormsim_attempt_latency_seconds_count{service="back"}`]; got != n {
		t.Errorf("/metrics latency count %v, /stats %v", got, n)
	}
	if got := bm[`stormsim_attempt_latency_seconds_bucket{service="back",le="0.01"}`]; got != 0 {
		t.Errorf("/metrics: %v attempts under 10 ms, want none", got)
	}
	// 12.5 % of service times are under 25 ms, 4 binomial standard
	// errors allowed either way.
	if got, se := bm[`stormsim_attempt_latency_seconds_bucket{service="back",le="0.025"}`], math.Sqrt(n/8*7/8); math.Abs(got-n/8) > 4*se {
		t.Errorf("/metrics: %v attempts under 25 ms, want %.0f ± %.0f", got, n/8, 4*se)
	}
	if got := bm[`stormsim_attempt_latency_seconds_bucket{service="back",le="+Inf"}`]; got != n {
		t.Errorf("/metrics: +Inf bucket %v, want all %v", got, n)
	}
	if sum := bm[`stormsim_attempt_latency_seconds_sum{service="back"}`]; math.Abs(sum*1000/n-l.Mean) > 0.01 {
		t.Errorf("/metrics mean %.3f ms, /stats %.3f ms", sum*1000/n, l.Mean)
	}

	fs := getStatsWith(t, client, frontRoot)
	if len(fs.Edges) != 1 {
		t.Fatalf("front's /stats edges: %+v", fs.Edges)
	}
	e := fs.Edges[0]
	// About 30 % of back's attempts fail and each failure but a fourth is retried.
	if e.Retries == 0 || e.Attempts != e.Calls+e.Retries || e.Attempts != bs.All.Attempts {
		t.Errorf("edge calls %d attempts %d retries %d; back saw %d attempts", e.Calls, e.Attempts, e.Retries, bs.All.Attempts)
	}
	fm := scrapeWith(t, client, frontRoot)
	for name, want := range map[string]int64{
		"retries_total": e.Retries, "attempts_total": e.Attempts, "calls_total": e.Calls,
		"hedges_total": e.HedgesSent, "budget_denied_total": e.RetriesDenied, "breaker_rejected_total": e.BreakerFastFail,
	} {
		key := `stormsim_edge_` + name + `{edge="back",service="front"}`
		if got, ok := fm[key]; !ok || got != float64(want) {
			t.Errorf("/metrics %s = %v (present %v), /stats %d", key, got, ok, want)
		}
	}
	// Every attempt front sent was traced: each waited for a connection
	// and, answered, got a first byte; none failed before it was sent.
	if e.Phases == nil || e.Phases.Phases["pool_wait"].Count != e.Attempts || e.Phases.NotSent != 0 {
		t.Errorf("/stats edge phases %+v, want %d attempts through pool_wait and none not sent", e.Phases, e.Attempts)
	}
	for key, want := range map[string]float64{
		`stormsim_edge_phase_seconds_count{edge="back",phase="pool_wait",service="front"}`:  float64(e.Attempts),
		`stormsim_edge_phase_seconds_count{edge="back",phase="first_byte",service="front"}`: float64(e.Phases.Phases["first_byte"].Count),
		`stormsim_edge_not_sent_total{edge="back",service="front"}`:                         0,
	} {
		if got, ok := fm[key]; !ok || got != want {
			t.Errorf("/metrics %s = %v (present %v), want %v", key, got, ok, want)
		}
	}
}
