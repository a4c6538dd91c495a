package live_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/charts"
	"github.com/stormsim/stormsim/live"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/metrics"
)

// event is one server-sent event as a viewer receives it.
type event struct {
	name string
	data string
	at   time.Time
}

// readEvents reads a stream's events until it ends, sending each on out.
func readEvents(t *testing.T, url string, out chan<- event) {
	t.Helper()
	resp, err := http.Get(url + "events")
	if err != nil {
		t.Error(err)
		close(out)
		return
	}
	go func() {
		defer close(out)
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type %q", ct)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				ev.at = time.Now()
				out <- ev
				ev = event{}
			}
		}
		if err := sc.Err(); err != nil {
			t.Errorf("stream: %v", err)
		}
	}()
}

func start(t *testing.T, opt live.Options) *live.Server {
	t.Helper()
	if opt.Addr == "" {
		opt.Addr = "127.0.0.1:0"
	}
	srv, err := live.Start(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	return srv
}

// An interval event is one JSON object with timeseries.csv's fields in its
// column order; values that are not finite are null.
func TestIntervalEventFields(t *testing.T) {
	srv := start(t, live.Options{})
	evs := make(chan event, 16)
	readEvents(t, srv.URL(), evs)
	cols := []string{metrics.ColOffered, metrics.ColGoodput, metrics.Column(metrics.MetricBreakerState, "gw->db"), metrics.ColLatencyP99}
	srv.Row(1500*time.Millisecond, 500*time.Millisecond, cols, []float64{12, 22.5, 1, math.NaN()})
	srv.Row(2*time.Second, 500*time.Millisecond, []string{"odd \"name\"\n"}, []float64{math.Inf(1)})
	srv.RunRow("no <retries>", 0, time.Second, []string{metrics.ColOffered}, []float64{3})
	srv.End()
	var got []event
	for ev := range evs {
		got = append(got, ev)
	}
	if len(got) != 4 || got[0].name != "interval" || got[1].name != "interval" || got[2].name != "interval" || got[3].name != "end" {
		t.Fatalf("events %+v, want three intervals then end", got)
	}
	if want := `{"run":"no <retries>","t_s":0,"interval_s":1,"offered":3}`; got[2].data != want {
		t.Errorf("a run's interval\n got %s\nwant %s", got[2].data, want)
	}
	if want := `{"t_s":2,"interval_s":0.5,"odd \"name\"\n":null}`; got[1].data != want {
		t.Errorf("escaped name\n got %s\nwant %s", got[1].data, want)
	}
	want := `{"t_s":1.5,"interval_s":0.5,"offered":12,"goodput":22.5,"breaker_state/gw->db":1,"latency_p99_ms":null}`
	if got[0].data != want {
		t.Errorf("interval data\n got %s\nwant %s", got[0].data, want)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(got[0].data), &m); err != nil {
		t.Errorf("not JSON: %v", err)
	}
}

// A viewer that connects late is sent the run so far, in order, then
// what follows; a point is delivered as published.
func TestLateViewerGetsHistory(t *testing.T) {
	srv := start(t, live.Options{})
	cols := []string{metrics.ColOffered}
	for i := range 5 {
		srv.Row(time.Duration(i)*time.Second, time.Second, cols, []float64{float64(i)})
	}
	evs := make(chan event, 16)
	readEvents(t, srv.URL(), evs)
	srv.Point(live.PointOf(300, "workload.rate", "baseline", &metrics.Summary{GoodputRPS: 290,
		Requests: metrics.Requests{Offered: 100, Succeeded: 97}}))
	srv.End()
	var names []string
	var ts []float64
	var point live.Point
	for ev := range evs {
		names = append(names, ev.name)
		switch ev.name {
		case "interval":
			var m map[string]float64
			if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
				t.Fatal(err)
			}
			ts = append(ts, m[metrics.ColTime])
		case "point":
			if err := json.Unmarshal([]byte(ev.data), &point); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := "interval interval interval interval interval point end"; strings.Join(names, " ") != want {
		t.Errorf("events %v, want %s", names, want)
	}
	if fmt.Sprint(ts) != "[0 1 2 3 4]" {
		t.Errorf("t_s %v, want 0..4 in order", ts)
	}
	if point.X != 300 || point.Series != "baseline" || point.Values["goodput_rps"] != 290 || point.Values["success_ratio"] != 0.97 {
		t.Errorf("point %+v", point)
	}
}

func TestLoopbackOnlyUnlessAllowed(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:80"} {
		if _, err := live.Start(live.Options{Addr: addr}); !errors.Is(err, driver.ErrRemote) {
			t.Errorf("Start(%q): err = %v, want ErrRemote", addr, err)
		}
	}
	if _, err := live.Start(live.Options{Addr: "127.0.0.1"}); err == nil {
		t.Error("an address without a port was accepted")
	}
	srv := start(t, live.Options{Addr: "0.0.0.0:0", AllowRemote: true})
	if !strings.HasPrefix(srv.URL(), "http://") {
		t.Errorf("URL %q", srv.URL())
	}
}

// The page is self-contained: the shared chart module inlined, nothing
// fetched from elsewhere.
func TestPageSelfContained(t *testing.T) {
	srv := start(t, live.Options{Title: "retry <storm>"})
	resp, err := http.Get(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	page := string(b)
	if !strings.Contains(page, string(charts.Script())) {
		t.Error("the page does not inline the shared chart module")
	}
	for _, bad := range []string{"<script src", "<link", "http://", "https://cdn", "@import"} {
		if i := strings.Index(page, bad); i >= 0 && !strings.Contains(page[max(0, i-40):i], "github.com/leeoniya") {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(page, "retry &lt;storm&gt;") {
		t.Error("title not escaped")
	}
}

// stall opens n connections that ask for /events and never read.
func stall(t testing.TB, url string, n int) {
	t.Helper()
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	for range n {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		// A small receive buffer makes the stall bite early.
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4096)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET /events HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Many viewers that stop reading neither slow the publisher nor grow
// memory with the run: the log is shared and bounded, a viewer that falls
// behind it skips events (and is told how many), and a stalled connection
// is dropped after WriteTimeout.
func TestStalledViewersCannotSlowTheRun(t *testing.T) {
	const (
		viewers   = 64
		events    = 20000
		logEvents = 256
	)
	srv := start(t, live.Options{LogEvents: logEvents, WriteTimeout: 3 * time.Second, MaxViewers: viewers + 1})
	stall(t, srv.URL(), viewers)
	// One slow but live viewer, to check what a viewer that falls behind
	// is told.
	evs := make(chan event)
	readEvents(t, srv.URL(), evs)
	time.Sleep(100 * time.Millisecond) // let every viewer connect

	cols := make([]string, 60)
	row := make([]float64, len(cols))
	for i := range cols {
		cols[i] = metrics.Column(metrics.MetricQueue, fmt.Sprintf("service-%02d", i))
		row[i] = float64(i) * 1.25
	}
	before := heapInUse()
	// The publisher must finish however the viewers behave: a design that
	// waited for them would stall here until the viewers are dropped, or
	// forever. 10 s is two orders of magnitude above the time 20000
	// appends take.
	done := make(chan time.Duration)
	go func() {
		t0 := time.Now()
		for i := range events {
			srv.Row(time.Duration(i)*time.Second, time.Second, cols, row)
		}
		done <- time.Since(t0)
	}()
	var took time.Duration
	intervals, skipped := 0, 0
	count := func(ev event) {
		switch ev.name {
		case "interval":
			intervals++
		case "skipped":
			var s struct{ Events int }
			if err := json.Unmarshal([]byte(ev.data), &s); err != nil {
				t.Errorf("skipped: %v", err)
			}
			skipped += s.Events
		}
	}
	for took == 0 {
		select {
		case took = <-done:
		case ev := <-evs:
			// This viewer is slow: it takes its time over every event.
			time.Sleep(50 * time.Microsecond)
			count(ev)
		case <-time.After(10 * time.Second):
			t.Fatal("publishing 20000 rows did not finish in 10 s with stalled viewers")
		}
	}
	during := heapInUse()
	srv.End()
	for ev := range evs {
		count(ev)
	}
	t.Logf("published %d rows in %v with %d stalled viewers; the slow viewer read %d and skipped %d; heap %d -> %d KiB",
		events, took, viewers, intervals, skipped, before>>10, during>>10)
	// Every event is either read or reported skipped.
	if intervals+skipped != events {
		t.Errorf("slow viewer: %d read + %d skipped != %d published", intervals, skipped, events)
	}
	if skipped == 0 || srv.Dropped() < int64(skipped) {
		t.Errorf("nothing was skipped (viewer %d, server %d): the test did not make a viewer fall behind", skipped, srv.Dropped())
	}
	// The bound: the log (256 events of about 2 KiB) and a constant per
	// viewer (a read buffer, a batch of references, a goroutine: a few
	// KiB), against about 40 MiB if every event were kept, or kept once
	// per stalled viewer.
	const row2KiB = 2 << 10
	bound := uint64(logEvents*row2KiB + viewers*64<<10 + 4<<20)
	if during > before && during-before > bound {
		t.Errorf("heap grew by %d KiB publishing to stalled viewers, bound %d KiB", (during-before)>>10, bound>>10)
	}
}

// Stalled connections are dropped after WriteTimeout, so Close returns.
func TestCloseWithStalledViewers(t *testing.T) {
	srv, err := live.Start(live.Options{Addr: "127.0.0.1:0", WriteTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stall(t, srv.URL(), 8)
	time.Sleep(50 * time.Millisecond)
	cols, row := []string{"x"}, []float64{1}
	big := strings.Repeat("y", 4096)
	for i := range 2000 {
		srv.Row(time.Duration(i), time.Second, append(cols, big), append(row, 2))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t0 := time.Now()
	srv.Close(ctx)
	if ctx.Err() != nil {
		t.Errorf("Close waited %v for stalled viewers: they were not dropped", time.Since(t0))
	}
}

// BenchmarkRowStalledViewers is the cost to the run of publishing one
// interval of 60 columns with no viewer, and with 16 viewers that have
// stopped reading: the same, since the run never waits for a viewer.
func BenchmarkRowStalledViewers(b *testing.B) {
	cols := make([]string, 60)
	row := make([]float64, len(cols))
	for i := range cols {
		cols[i] = metrics.Column(metrics.MetricQueue, fmt.Sprintf("service-%02d", i))
		row[i] = float64(i) * 1.25
	}
	for _, stalled := range []int{0, 16} {
		b.Run(fmt.Sprintf("stalled=%d", stalled), func(b *testing.B) {
			srv, err := live.Start(live.Options{Addr: "127.0.0.1:0", LogEvents: 256, WriteTimeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				srv.Close(ctx)
			}()
			stall(b, srv.URL(), stalled)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				srv.Row(time.Duration(i)*time.Second, time.Second, cols, row)
			}
		})
	}
}

// A run where nothing succeeded has no latency, and one where nothing was
// offered no success ratio: absent, not 0.
func TestPointOfLeavesOutWhatWasNotMeasured(t *testing.T) {
	for _, tc := range []struct {
		req  metrics.Requests
		want string
	}{
		{metrics.Requests{Offered: 10, Succeeded: 4}, "amplification goodput_rps latency_p99_ms success_ratio"},
		{metrics.Requests{Offered: 10}, "amplification goodput_rps success_ratio"},
		{metrics.Requests{}, "amplification goodput_rps"},
	} {
		p := live.PointOf(1, "x", "s", &metrics.Summary{Requests: tc.req, LatencyMs: metrics.Latency{P99: 12}})
		var names []string
		for k := range p.Values {
			names = append(names, k)
		}
		slices.Sort(names)
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("%+v: values %s, want %s", tc.req, got, tc.want)
		}
	}
}

// A viewer that connects after the log dropped the run's first events is
// sent what it holds, without being told it fell behind: it never was.
func TestLateViewerPastTheLogIsNotToldItSkipped(t *testing.T) {
	srv := start(t, live.Options{LogEvents: 4})
	for i := range 10 {
		srv.Row(time.Duration(i)*time.Second, time.Second, []string{metrics.ColOffered}, []float64{float64(i)})
	}
	srv.End()
	evs := make(chan event, 16)
	readEvents(t, srv.URL(), evs)
	var got []string
	for ev := range evs {
		got = append(got, ev.name+" "+ev.data)
	}
	want := []string{
		`interval {"t_s":6,"interval_s":1,"offered":6}`, `interval {"t_s":7,"interval_s":1,"offered":7}`,
		`interval {"t_s":8,"interval_s":1,"offered":8}`, `interval {"t_s":9,"interval_s":1,"offered":9}`, "end {}"}
	if !slices.Equal(got, want) {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestWaitViewer(t *testing.T) {
	srv := start(t, live.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if srv.WaitViewer(ctx) {
		t.Fatal("WaitViewer reported a viewer before any connected")
	}
	evs := make(chan event, 4)
	readEvents(t, srv.URL(), evs)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !srv.WaitViewer(ctx) {
		t.Fatal("WaitViewer missed the viewer")
	}
	srv.End()
	for range evs {
	}
}

// A nil Server (no --live) takes every call and does nothing.
func TestNilServer(t *testing.T) {
	var s *live.Server
	s.Row(0, time.Second, []string{"x"}, []float64{1})
	s.Point(live.Point{})
	s.End()
	if s.URL() != "" || s.Dropped() != 0 || s.WaitViewer(context.Background()) || s.Close(context.Background()) != nil {
		t.Error("a nil Server did something")
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("nil Server's handler answered %d", rec.Code)
	}
}

// A browser that reconnects (Last-Event-ID) gets what it has not read,
// not the run again.
func TestReconnectResumes(t *testing.T) {
	srv := start(t, live.Options{})
	for i := range 5 {
		srv.Row(time.Duration(i)*time.Second, time.Second, []string{metrics.ColOffered}, []float64{float64(i)})
	}
	srv.End()
	req, _ := http.NewRequest("GET", srv.URL()+"events", nil)
	req.Header.Set("Last-Event-ID", "2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ids []string
	for _, line := range strings.Split(string(b), "\n") {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, id)
		}
	}
	if got := strings.Join(ids, " "); got != "3 4" || !strings.HasSuffix(string(b), "event: end\ndata: {}\n\n") {
		t.Errorf("after id 2: ids %q, stream\n%s", got, b)
	}
}
