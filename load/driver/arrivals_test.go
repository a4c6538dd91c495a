package driver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
)

// TestTargetArrivalsAreTheSimulators: load --target offers the requests
// the simulator offers for the same workload and seed. The driver runs on a
// scripted clock against an in-memory target, which sees each request at
// its intended time exactly; the first 300 requests' times (to the
// nanosecond) and write flags equal the model's arrivals of the scenario,
// and their counts per 100 ms equal the simulator's offered column — for
// constant and Poisson arrivals, and (constant) with a non-integer gap,
// where truncating n/rate (the former ConstantPacer) would differ.
func TestTargetArrivalsAreTheSimulators(t *testing.T) {
	for _, tc := range []struct {
		arrival topology.Arrival
		rate    float64
	}{{topology.ArrivalConstant, 300}, {topology.ArrivalPoisson, 300}, {topology.ArrivalConstant, 700}} {
		t.Run(fmt.Sprint(tc.arrival, tc.rate), func(t *testing.T) {
			sc, err := topology.Parse("arrivals.yaml", []byte(fmt.Sprintf(`
name: arrivals
seed: 5
duration: 1s
interval: 100ms
workload: {entry: s, arrival: %s, rate: %g, write_fraction: 0.4}
services: [{name: s, workers: 1000, service_time: {dist: constant, value: 0s}}]
`, tc.arrival, tc.rate)), nil)
			if err != nil {
				t.Fatal(err)
			}
			type seen struct {
				at    time.Duration
				write bool
			}
			got := map[int]seen{}
			synctest.Test(t, func(t *testing.T) {
				var nw memnet.Network
				clk := new(clock.Fake)
				var mu sync.Mutex
				target := loadtest.MemTarget(t, &nw, func(w http.ResponseWriter, r *http.Request) {
					id, _ := strconv.Atoi(r.Header.Get(transport.HeaderRequestID))
					mu.Lock()
					got[id-1] = seen{clk.Now(), r.Method == http.MethodPost}
					mu.Unlock()
				})
				arrivals, err := TargetArrivals(tc.arrival, tc.rate, 0.4, sc.Duration, sc.Seed)
				if err != nil {
					t.Fatal(err)
				}
				loadtest.RunScripted(t, clk, func() {
					if _, err := Run(context.Background(), Options{Clock: clk, Network: &nw, Target: target, Arrivals: arrivals,
						Duration: sc.Duration, WriteMethod: http.MethodPost}); err != nil {
						t.Error(err)
					}
				})
			})
			want := model.ArrivalsFor(&sc.Workload, sc.Duration, sc.Seed)
			perInterval := map[int]float64{}
			for n := range len(got) {
				at, ok := want.At(uint64(n))
				if !ok {
					t.Fatalf("the driver sent request %d, past the model's %d", n+1, n)
				}
				if g := got[n]; n < 300 && (g.at != at || g.write != want.Write(uint64(n))) {
					t.Fatalf("request %d at %v (write %v), the model's at %v (write %v)", n, g.at, g.write, at, want.Write(uint64(n)))
				}
				perInterval[int(got[n].at/sc.Interval)]++
			}
			if _, more := want.At(uint64(len(got))); more {
				t.Errorf("the driver sent %d requests, the model has more", len(got))
			}
			res, err := sim.Run(context.Background(), sc, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			col := slices.Index(res.Series.Columns, metrics.ColOffered)
			for i, row := range res.Series.Rows {
				if row[col] != perInterval[i] {
					t.Errorf("interval %d: the simulator offered %v, the driver %v", i, row[col], perInterval[i])
				}
			}
		})
	}
}
