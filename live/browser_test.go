package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/chromium"
	"github.com/stormsim/stormsim/live"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/sim"
)

// browser is a headless Chromium showing one page until stopped.
type browser struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
}

func openBrowser(t *testing.T, bin, url string, extra ...string) *browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1200,1600"}, extra...)
	b := &browser{cmd: exec.CommandContext(ctx, bin, append(args, url)...), cancel: cancel, done: make(chan struct{})}
	b.cmd.Stdout, b.cmd.Stderr = b, b
	if err := b.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("chromium: %v", err)
	}
	go func() { b.cmd.Wait(); close(b.done) }()
	t.Cleanup(func() { b.stop() })
	return b
}

func (b *browser) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.Write(p)
}

// stop ends the browser and returns the page's console messages.
func (b *browser) stop() (console []string) {
	b.cancel()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return chromium.Console(b.stderr.String())
}

// chartState is what the page's probe reports after each draw.
type chartState struct {
	Rows   int
	Points int
	Runs   int
	Charts []struct {
		ID     string
		Xs     int
		Digest int64
	}
}

// TestLivePageInBrowser opens the live page in headless Chromium while a
// paced simulation runs, waits for two updates, and checks that every
// chart grew and was redrawn between them and that the console stayed
// clean. A broken page first proves the console check can fire.
func TestLivePageInBrowser(t *testing.T) {
	bin := chromium.Path(t)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<!DOCTYPE html><p>x</p><script>notDefined()</script>")
	}))
	defer bad.Close()
	shot := filepath.Join(t.TempDir(), "shot.png")
	if console := openBrowser(t, bin, bad.URL, "--screenshot="+shot).waitExit(t); len(console) == 0 {
		t.Fatal("a page with a script error logged nothing: the console check is blind")
	}

	sc := parse(t, `name: browser-storm
duration: 120s
interval: 1s
workload: {entry: gw, rate: 200, deadline: 1s, client: {timeout: 500ms, retry: {max_attempts: 3}}}
services:
  - {name: gw, workers: 32, service_time: {dist: exponential, mean: 1ms}, calls: [{to: db, timeout: 200ms, retry: {max_attempts: 3}, breaker: {kind: consecutive, failures: 5, open_for: 2s}, budget: {ratio: 0.1}}]}
  - {name: db, workers: 8, queue: 100, service_time: {dist: exponential, mean: 20ms}}
faults:
  - {service: db, at: 3s, for: 20s, capacity: 0.4}
`)
	srv := start(t, live.Options{Title: sc.Name})
	page, states := probedPage(t, srv)

	// The simulation, paced at 8x: a row every 125 ms for 15 s at most.
	ctx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	ran := make(chan error, 1)
	go func() {
		pace := &live.Pacer{Speed: 8}
		_, err := sim.Run(ctx, sc, sim.Options{OnRow: func(start time.Duration, cols []string, row []float64) {
			srv.Row(start, sc.Interval, cols, row)
			pace.Wait(ctx, start+sc.Interval)
		}})
		ran <- err
	}()

	b := openBrowser(t, bin, page+"/?probe")
	first, second := twoUpdates(t, states, func(s chartState) int { return s.Rows })
	stopRun()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	srv.End()
	console := b.stop()
	if len(console) > 0 {
		t.Errorf("console output on the live page:\n%s", strings.Join(console, "\n"))
	}
	t.Logf("updates: %d rows, then %d", first.Rows, second.Rows)

	ids := map[string]bool{}
	for _, c := range second.Charts {
		ids[c.ID] = true
	}
	for _, want := range []string{"throughput", "amplification", "queue", "latency", "breaker", "budget"} {
		if !ids[want] {
			t.Errorf("no %s chart on the page (charts: %v)", want, ids)
		}
	}
	if len(first.Charts) != len(second.Charts) {
		t.Fatalf("%d charts, then %d", len(first.Charts), len(second.Charts))
	}
	for i, c := range second.Charts {
		f := first.Charts[i]
		if c.ID != f.ID || c.Xs != second.Rows || f.Xs != first.Rows {
			t.Errorf("chart %s: %d then %d points for %d then %d rows", c.ID, f.Xs, c.Xs, first.Rows, second.Rows)
		}
		if c.Digest == f.Digest {
			t.Errorf("chart %s: the canvas did not change between updates", c.ID)
		}
	}
}

// probedPage serves srv's page with a /probe endpoint that passes on what
// the page reports (?probe) after each draw.
func probedPage(t *testing.T, srv *live.Server) (url string, states <-chan chartState) {
	t.Helper()
	ch := make(chan chartState, 64)
	mux := http.NewServeMux()
	mux.Handle("/", srv.Handler())
	mux.HandleFunc("POST /probe", func(w http.ResponseWriter, r *http.Request) {
		var s chartState
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			t.Errorf("probe: %v", err)
		}
		select {
		case ch <- s:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	})
	page := httptest.NewServer(mux)
	t.Cleanup(page.Close)
	return page.URL, ch
}

// twoUpdates waits for a first drawing with data and a later one with
// more, by count.
func twoUpdates(t *testing.T, states <-chan chartState, count func(chartState) int) (first, second chartState) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for count(second) == 0 {
		select {
		case s := <-states:
			switch {
			case count(first) == 0 && count(s) > 0:
				first = s
			case count(first) > 0 && count(s) > count(first):
				second = s
			}
		case <-timeout:
			t.Fatalf("no two updates within 60 s (first %+v)", first)
		}
	}
	return first, second
}

// The points of a sweep, drawn as they finish: one chart per value, the
// replicas of a point averaged, every chart redrawn as points arrive.
func TestLivePointsInBrowser(t *testing.T) {
	bin := chromium.Path(t)
	srv := start(t, live.Options{Title: "sweep"})
	first, second := watchPublished(t, bin, srv, func(i int) {
		s := &metrics.Summary{GoodputRPS: float64(10 * i), Amplification: 1 + float64(i%3),
			Requests: metrics.Requests{Offered: 100, Succeeded: int64(100 - i%50)}, LatencyMs: metrics.Latency{P99: float64(i)}}
		srv.Point(live.PointOf(float64(100*(i/4)), "workload.rate", []string{"baseline", "budget"}[i%2], s))
	}, func(s chartState) int { return s.Points })
	ids := map[string]bool{}
	for _, c := range second.Charts {
		ids[c.ID] = true
	}
	for _, want := range []string{"point-goodput_rps", "point-amplification", "point-latency_p99_ms", "point-success_ratio"} {
		if !ids[want] {
			t.Errorf("no %s chart (charts: %v)", want, ids)
		}
	}
	// The x axis holds the distinct swept values: four points (two lines,
	// two replicas) per value.
	for _, c := range second.Charts {
		if want := (second.Points + 3) / 4; c.Xs != want {
			t.Errorf("chart %s: %d x values for %d points, want %d", c.ID, c.Xs, second.Points, want)
		}
	}
	if len(first.Charts) == len(second.Charts) {
		for i, c := range second.Charts {
			if c.Digest == first.Charts[i].Digest {
				t.Errorf("chart %s: the canvas did not change between %d and %d points", c.ID, first.Points, second.Points)
			}
		}
	}
}

// watchPublished opens srv's page while publish(i) is called every 100 ms,
// returns the first two updates by count, and checks the console stayed
// clean.
func watchPublished(t *testing.T, bin string, srv *live.Server, publish func(i int), count func(chartState) int) (first, second chartState) {
	t.Helper()
	page, states := probedPage(t, srv)
	stop, published := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(published)
		for i := 0; ; i++ {
			publish(i)
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	b := openBrowser(t, bin, page+"/?probe")
	first, second = twoUpdates(t, states, count)
	close(stop)
	<-published
	srv.End()
	if console := b.stop(); len(console) > 0 {
		t.Errorf("console output on the live page:\n%s", strings.Join(console, "\n"))
	}
	return first, second
}

// waitExit waits for a browser that ends by itself (--screenshot) and
// returns its console messages.
func (b *browser) waitExit(t *testing.T) []string {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(60 * time.Second):
		t.Fatal("chromium did not finish")
	}
	return b.stop()
}

// The rows of 'stormsim serve' have no offered or latency columns: the
// page draws attempts per second at each hop and the queues, and nothing
// it has no data for.
func TestServeRowsInBrowser(t *testing.T) {
	bin := chromium.Path(t)
	srv := start(t, live.Options{Title: "serve"})
	cols := []string{metrics.Column(metrics.MetricAttempts, "db"), metrics.Column(metrics.MetricAttempts, "gw"),
		metrics.Column(metrics.MetricQueue, "db"), metrics.Column(metrics.MetricQueue, "gw")}
	first, second := watchPublished(t, bin, srv, func(i int) {
		srv.Row(time.Duration(i)*time.Second, time.Second, cols, []float64{float64(10 * i), float64(5 * i), float64(i % 7), 0})
	}, func(s chartState) int { return s.Rows })
	var ids []string
	for i, c := range second.Charts {
		ids = append(ids, c.ID)
		if i < len(first.Charts) && c.Digest == first.Charts[i].Digest {
			t.Errorf("chart %s did not change between %d and %d rows", c.ID, first.Rows, second.Rows)
		}
	}
	if got := strings.Join(ids, " "); got != "amplification queue" {
		t.Errorf("charts %q, want amplification queue", got)
	}
}

// The variants of a comparison, each drawn in a section of its own.
func TestRunsInBrowser(t *testing.T) {
	bin := chromium.Path(t)
	srv := start(t, live.Options{Title: "compare"})
	cols := []string{metrics.ColOffered, metrics.ColGoodput, metrics.Column(metrics.MetricQueue, "db")}
	_, second := watchPublished(t, bin, srv, func(i int) {
		for _, run := range []string{"baseline", "no-retries"} {
			srv.RunRow(run, time.Duration(i)*time.Second, time.Second, cols, []float64{100, float64(100 - i), float64(i)})
		}
	}, func(s chartState) int { return s.Rows })
	if second.Runs != 2 {
		t.Errorf("the page drew %d runs, want 2", second.Runs)
	}
	var ids []string
	for _, c := range second.Charts {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, " "); got != "throughput queue" {
		t.Errorf("a run's charts %q, want throughput queue", got)
	}
}

// A run that follows its writes after UNKNOWN streams the unknown intents
// and the manual queue, and the page draws them in a chart of their own,
// redrawn as rows arrive; TestServeRowsInBrowser shows the chart is absent
// without those columns.
func TestCertaintyRowsInBrowser(t *testing.T) {
	bin := chromium.Path(t)
	srv := start(t, live.Options{Title: "converging"})
	cols := []string{metrics.ColOffered, metrics.ColGoodput, metrics.ColUnknownIntents, metrics.ColManualQueue, metrics.ColQueries}
	first, second := watchPublished(t, bin, srv, func(i int) {
		srv.Row(time.Duration(i)*time.Second, time.Second, cols, []float64{100, 90, float64(3 * i), float64(i / 4), float64(2 * i)})
	}, func(s chartState) int { return s.Rows })
	var ids []string
	for i, c := range second.Charts {
		ids = append(ids, c.ID)
		if c.Xs != second.Rows {
			t.Errorf("chart %s: %d points for %d rows", c.ID, c.Xs, second.Rows)
		}
		if i < len(first.Charts) && c.Digest == first.Charts[i].Digest {
			t.Errorf("chart %s did not change between %d and %d rows", c.ID, first.Rows, second.Rows)
		}
	}
	if got := strings.Join(ids, " "); got != "throughput unknown_intents" {
		t.Errorf("charts %q, want throughput unknown_intents", got)
	}
}
