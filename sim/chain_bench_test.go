package sim

import (
	"runtime"
	"testing"
	"time"

	"github.com/stormsim/stormsim/internal/cputime"
	"github.com/stormsim/stormsim/sim/internal/floor"
	"github.com/stormsim/stormsim/topology"
)

// BenchmarkTenHopChain runs issue 24's ten-hop chain (testdata/bench),
// healthy at 100k req/s and as a storm of amplification 512, each for two
// arrival windows. Per op it reports the wall time per simulated second
// (s/sim_s: flat across the windows when cost grows with work only) and
// the process's CPU time per simulated second (cpu_s/sim_s: the run is
// single-threaded, so this exceeds s/sim_s only by the runtime's
// background work, and falls short of it by the time other programs held
// the processor, which on a shared machine makes it the steadier of the
// two), the extrapolated minutes for one simulated hour (min/sim_h), the engine's
// events/s (the same healthy and in the storm), allocations per event, and
// the heap in use at the end of the run with its records still reachable
// (heap_MB: flat across the windows when memory grows with concurrency
// only, not with simulated time). Run it with -benchtime 1x.
//
// The healthy rows also run floor.ChainSequential and floor.ChainParallel
// on the same chain for the same window, as many times, after the model's
// runs (outside the timer and the CPU count), and report the model's speed as a fraction of theirs (floor-ratio: the
// hand-written loop on one core; floor2-ratio: on two). The floors neither
// fail nor retry and never queue, so they do a little less than the model.
func BenchmarkTenHopChain(b *testing.B) {
	for _, tc := range []struct {
		name, file string
		window     time.Duration
	}{
		{"healthy/window=2s", "ten-hop-chain.yaml", 2 * time.Second},
		{"healthy/window=8s", "ten-hop-chain.yaml", 8 * time.Second},
		{"storm/window=2s", "ten-hop-storm.yaml", 2 * time.Second},
		{"storm/window=8s", "ten-hop-storm.yaml", 8 * time.Second},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sc, err := topology.Load("testdata/bench/"+tc.file, []string{"duration=" + tc.window.String()})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var events uint64
			var simulated time.Duration
			var heap float64
			var amp float64
			var before, after, end runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			cpu0, cpuOK := cputime.Process()
			healthy := tc.file == "ten-hop-chain.yaml"
			var floor1, floor2 time.Duration
			for b.Loop() {
				m, res := runOnce(b, sc)
				if res.Summary.Status != "complete" {
					b.Fatalf("status %s", res.Summary.Status)
				}
				events += m.eng.Events()
				simulated += sc.Duration
				amp = res.Summary.Amplification
				b.StopTimer()
				runtime.ReadMemStats(&end)
				heap = float64(end.HeapInuse) / (1 << 20)
				runtime.KeepAlive(m)
				b.StartTimer()
			}
			cpu1, _ := cputime.Process()
			runtime.ReadMemStats(&after)
			if healthy { // as many runs of each floor, after the model's
				c := floor.Chain{Hops: 10, Rate: 100000, Net: 20e-6, Service: 20e-6,
					Timeout: 0.37, Duration: tc.window.Seconds(), Seed: 1}
				for range b.N {
					t0 := time.Now()
					floor.ChainSequential(c)
					t1 := time.Now()
					floor.ChainParallel(c)
					floor1, floor2 = floor1+t1.Sub(t0), floor2+time.Since(t1)
				}
			}
			perSimS := b.Elapsed().Seconds() / simulated.Seconds()
			if cpuOK {
				b.ReportMetric((cpu1-cpu0).Seconds()/simulated.Seconds(), "cpu_s/sim_s")
			}
			b.ReportMetric(perSimS, "s/sim_s")
			b.ReportMetric(perSimS*3600/60, "min/sim_h")
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(events), "allocs/event")
			b.ReportMetric(heap, "heap_MB")
			b.ReportMetric(amp, "amplification")
			if healthy {
				b.ReportMetric(floor1.Seconds()/b.Elapsed().Seconds(), "floor-ratio")
				b.ReportMetric(floor2.Seconds()/b.Elapsed().Seconds(), "floor2-ratio")
			}
		})
	}
}
