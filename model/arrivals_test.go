package model

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// TestArrivalsPoissonFastPathMatchesSearch: the single-rate Poisson
// process Next draws directly gives, draw for draw, the arrivals of the
// general search over schedule segments, which the golden outputs were
// made with.
func TestArrivalsPoissonFastPathMatchesSearch(t *testing.T) {
	for _, tt := range []struct {
		name     string
		w        topology.Workload
		duration time.Duration
		fast     bool
	}{
		{"reads", topology.Workload{Arrival: "poisson", Rate: 900}, 2 * time.Second, true},
		{"writes", topology.Workload{Arrival: "poisson", Rate: 50, WriteFraction: 0.3}, 10 * time.Second, true},
		{"empty window", topology.Workload{Arrival: "poisson", Rate: 50}, 0, true},
		{"rate 0", topology.Workload{Arrival: "poisson"}, time.Second, false},
		{"schedule", topology.Workload{Arrival: "poisson", Rate: 50, Schedule: []topology.RateStep{{At: time.Second, Rate: 10}}}, 2 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fast := NewArrivals(&tt.w, tt.duration, rand.New(rand.NewPCG(7, 7)))
			search := NewArrivals(&tt.w, tt.duration, rand.New(rand.NewPCG(7, 7)))
			if fast.poisson != tt.fast {
				t.Fatalf("fast path taken: %v, want %v", fast.poisson, tt.fast)
			}
			search.poisson = false
			writes := 0
			for n := 0; ; n++ {
				at, write, ok := fast.Next()
				at2, write2, ok2 := search.Next()
				if at != at2 || write != write2 || ok != ok2 {
					t.Fatalf("request %d: fast %v %v %v, search %v %v %v", n, at, write, ok, at2, write2, ok2)
				}
				if !ok {
					break
				}
				if write {
					writes++
				}
			}
			// Both streams must be left at the same point: the next draw agrees.
			if x, y := fast.r.Uint64(), search.r.Uint64(); x != y {
				t.Errorf("streams diverged after the process: %d vs %d", x, y)
			}
			if tt.w.WriteFraction > 0 && writes == 0 {
				t.Error("no write drawn")
			}
		})
	}
}
