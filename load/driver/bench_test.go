package driver

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/cputime"
	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/topology"
)

// BenchmarkOfferedRate drives a trivial in-process loopback target at
// 1k–16k req/s for 2 s per iteration with the driver's default client (the
// lean one) and reports how close the dispatched rate came to the target
// (rate_err_%), the p99 measured from intended send times, the late and
// unsent requests, the peak heap and the process's CPU time per request.
// The target is the raw echo, which allocates nothing per request, so
// allocs/op and B/op (per 2 s run) are the driver's alone. Run it with
// -benchtime=1x: each iteration is a full 2 s run.
func BenchmarkOfferedRate(b *testing.B) {
	target := rawEcho(b)
	for _, rate := range []float64{1000, 2000, 4000, 8000, 16000} {
		b.Run(fmt.Sprintf("rate=%g", rate), func(b *testing.B) {
			b.ReportAllocs()
			const d = 2 * time.Second
			for range b.N {
				var peak uint64
				done := make(chan struct{})
				go func() {
					t := time.NewTicker(100 * time.Millisecond)
					defer t.Stop()
					var ms runtime.MemStats
					for {
						select {
						case <-t.C:
							runtime.ReadMemStats(&ms)
							peak = max(peak, ms.HeapInuse)
						case <-done:
							return
						}
					}
				}()
				cpu0, cpuOK := cputime.Process()
				res, err := Run(context.Background(), Options{
					Target: target, Arrivals: loadtest.Constant(rate, d), Duration: d, Workers: 256,
				})
				close(done)
				if err != nil {
					b.Fatal(err)
				}
				if cpu1, ok := cputime.Process(); ok && cpuOK && res.Summary.Requests.Offered > 0 {
					b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(res.Summary.Requests.Offered), "cpu-µs/req")
				}
				lr := res.Summary.Load
				b.ReportMetric(lr.OfferedRPS, "offered_rps")
				b.ReportMetric(100*(lr.OfferedRPS-rate)/rate, "rate_err_%")
				b.ReportMetric(res.Summary.LatencyMs.P99, "p99_ms")
				b.ReportMetric(float64(lr.Late), "late")
				b.ReportMetric(float64(lr.Unsent), "unsent")
				b.ReportMetric(float64(peak)/(1<<20), "peak_heap_MB")
			}
		})
	}
}

// BenchmarkTargetArrivals: the schedule's cost per request of a target
// run's arrivals (model.Arrivals), constant and stepped.
func BenchmarkTargetArrivals(b *testing.B) {
	for _, tc := range []struct {
		name     string
		workload topology.Workload
	}{
		{"constant", topology.Workload{Arrival: topology.ArrivalConstant, Rate: 16000}},
		{"steps", topology.Workload{Arrival: topology.ArrivalConstant, Rate: 1000,
			Schedule: []topology.RateStep{{At: time.Minute, Rate: 5000}, {At: 2 * time.Minute, Rate: 1000}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			a := model.ArrivalsFor(&tc.workload, 1<<62, 1)
			b.ResetTimer()
			for i := range b.N {
				a.At(uint64(i))
			}
		})
	}
}
