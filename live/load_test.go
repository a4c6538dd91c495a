package live_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stormsim/stormsim/live"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/serve"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// During a load run the stream carries one interval event per interval,
// each sent once its interval has passed and while the run goes (not all
// at the end), as many as the result's series has rows, with its
// columns; then the stream ends cleanly (an end event, then EOF).
func TestLoadRunStreamsOneEventPerInterval(t *testing.T) {
	// Answers take longer than an interval, as in a storm: the live rows
	// must still count each request in the interval it was due in.
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
	}))
	defer target.Close()
	srv := start(t, live.Options{})
	evs := make(chan event, 256)
	readEvents(t, srv.URL(), evs)
	const (
		iv  = 250 * time.Millisecond
		dur = 2 * time.Second
	)
	epoch := time.Now().Add(50 * time.Millisecond)
	arrivals, err := driver.TargetArrivals(topology.ArrivalConstant, 40, 0, dur, 1)
	if err != nil {
		t.Fatal(err)
	}
	var sentAt []time.Time
	res, err := driver.Run(context.Background(), driver.Options{
		Target: target.URL, Arrivals: arrivals, Duration: dur, Interval: iv,
		Epoch: epoch, Workers: 32, Grace: time.Second,
		OnRow: func(start time.Duration, cols []string, row []float64) {
			sentAt = append(sentAt, time.Now()) // OnRow is called from one goroutine
			srv.Row(start, iv, cols, row)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runEnd := time.Now()
	srv.End()
	var rows []map[string]float64
	var at []time.Time
	ended := false
	for ev := range evs { // closed at EOF
		switch ev.name {
		case "interval":
			if ended {
				t.Error("an interval after the end")
			}
			var m map[string]float64
			if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
				t.Fatal(err)
			}
			rows, at = append(rows, m), append(at, ev.at)
		case "end":
			ended = true
		default:
			t.Errorf("unexpected %q event", ev.name)
		}
	}
	if !ended {
		t.Error("the stream closed without an end event")
	}
	want := res.Series.Rows
	if len(rows) != len(want) || len(want) < int(dur/iv) {
		t.Fatalf("%d interval events for a series of %d rows (schedule: %d intervals)", len(rows), len(want), dur/iv)
	}
	var offered float64
	for i, r := range rows {
		if got := r[metrics.ColTime]; got != (time.Duration(i)*iv).Seconds() || r[metrics.ColInterval] != iv.Seconds() {
			t.Errorf("event %d: t_s %v interval_s %v", i, got, r[metrics.ColInterval])
		}
		if len(r) != len(res.Series.Columns)+2 {
			t.Errorf("event %d has %d fields, want the series' %d columns and t_s, interval_s", i, len(r), len(res.Series.Columns))
		}
		for _, c := range res.Series.Columns {
			if _, ok := r[c]; !ok {
				t.Errorf("event %d lacks column %q", i, c)
			}
		}
		// An interval that ends well inside the schedule (0.5 s of slack
		// for a loaded machine) is sent once it ended, not before, and
		// reaches the viewer while the run goes: live. The last ones may
		// be sent when the run ends.
		if i+2 < int(dur/iv) {
			if due := epoch.Add(time.Duration(i+1) * iv); sentAt[i].Before(due) {
				t.Errorf("row %d sent %v before its interval ended", i, due.Sub(sentAt[i]))
			}
			if at[i].After(runEnd) {
				t.Errorf("event %d arrived after the run: the stream is not live", i)
			}
		}
		offered += r[metrics.ColOffered]
	}
	// A request is offered in its interval's live row once scheduled, not
	// when it ends (300 ms later, in the next interval's time); none is
	// counted twice. The bound leaves the scheduler 5% of lateness.
	if n := float64(res.Summary.Requests.Offered); offered > n || offered < 0.95*n {
		t.Errorf("live rows offered %v in all, the result %v", offered, n)
	}
}

// A scenario run's live rows carry the services' columns, the very
// columns of its series, one row per row.
func TestScenarioRowsCarryServiceColumns(t *testing.T) {
	sc := parse(t, `name: live-load
duration: 1s
interval: 250ms
workload: {entry: gw, rate: 100, arrival: constant, client: {timeout: 1s}}
services:
  - {name: gw, workers: 4, service_time: {dist: constant, value: 1ms}, calls: [{to: db, timeout: 500ms, breaker: {kind: consecutive, failures: 5, open_for: 1s}, budget: {ratio: 0.1}}]}
  - {name: db, workers: 2, service_time: {dist: constant, value: 2ms}}
`)
	var got [][]string
	res, err := serve.RunScenario(context.Background(), sc, serve.ScenarioOptions{Workers: 16, Grace: time.Second,
		OnRow: func(start time.Duration, cols []string, row []float64) {
			if len(row) != len(cols) {
				t.Errorf("row at %v: %d values for %d columns", start, len(row), len(cols))
			}
			got = append(got, slices.Clone(cols))
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(res.Series.Rows) {
		t.Fatalf("%d rows sent, the series has %d", len(got), len(res.Series.Rows))
	}
	for i, cols := range got {
		if !slices.Equal(cols, res.Series.Columns) {
			t.Fatalf("row %d columns %v\nthe series' %v", i, cols, res.Series.Columns)
		}
	}
	for _, c := range []string{metrics.Column(metrics.MetricQueue, "db"), metrics.Column(metrics.MetricBreakerState, "gw->db"), metrics.Column(metrics.MetricBudgetLevel, "gw->db")} {
		if !slices.Contains(got[0], c) {
			t.Errorf("live rows lack %q", c)
		}
	}
}
