package serve

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormsim/stormsim/internal/memnet"

	"github.com/stormsim/stormsim/metrics"
)

// Watch sends the services' columns once per interval, rows numbered from
// time 0, counting the attempts that arrived in each, and stops cleanly. On
// the bubble's clock the five requests take 10 ms and the wait after them
// 300 ms, so exactly the rows of [0, 100 ms), [100, 200) and [200, 300)
// have ended.
func TestClusterWatch(t *testing.T) { synctest.Test(t, testClusterWatch) }

func testClusterWatch(t *testing.T) {
	sc := parseScenario(t, `name: watch
duration: 1s
workload: {entry: gw, rate: 1}
services:
  - {name: gw, workers: 2, service_time: {dist: constant, value: 1ms}, calls: [{to: db, timeout: 1s}]}
  - {name: db, workers: 2, service_time: {dist: constant, value: 1ms}}
`)
	var nw memnet.Network
	cl, err := StartCluster(sc, ClusterOptions{network: &nw})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cl.Close(ctx)
	}()
	const iv = 100 * time.Millisecond
	var mu sync.Mutex
	var starts []time.Duration
	var attempts float64
	var cols []string
	stop := cl.Watch(iv, func(start time.Duration, c []string, row []float64) {
		mu.Lock()
		defer mu.Unlock()
		starts, cols = append(starts, start), c
		if i := slices.Index(c, metrics.Column(metrics.MetricAttempts, "db")); i >= 0 {
			attempts += row[i]
		}
	})
	const sent = 5
	client := &http.Client{Transport: &http.Transport{DialContext: nw.DialContext}}
	defer client.CloseIdleConnections()
	for range sent {
		resp, err := client.Get(cl.URLs["gw"])
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	time.Sleep(3 * iv) // every attempt falls in an interval that has ended
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 3 {
		t.Fatalf("%d rows in 3 intervals and 10 ms, want 3", len(starts))
	}
	for i, s := range starts {
		if s != time.Duration(i)*iv {
			t.Errorf("row %d starts at %v", i, s)
		}
	}
	if attempts != sent {
		t.Errorf("rows count %v attempts at db, %d were sent", attempts, sent)
	}
	for _, want := range []string{metrics.Column(metrics.MetricQueue, "gw"), metrics.Column(metrics.MetricUtilization, "db")} {
		if !slices.Contains(cols, want) {
			t.Errorf("no %s column in %v", want, cols)
		}
	}
}
