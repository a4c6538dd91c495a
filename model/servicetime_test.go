package model

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// TestServiceTimeDrawsWhatSampleDraws checks that ServiceTime, which draws
// an exponential service time with dist.Exp inline, returns exactly what the
// service's Sampler would draw from the same stream, for the exponential and
// for the kinds that still go through Sample: the simulator's goldens rely
// on the same values in the same order.
func TestServiceTimeDrawsWhatSampleDraws(t *testing.T) {
	for _, d := range []topology.Dist{
		{Dist: "exponential", Mean: 20 * time.Microsecond},
		{Dist: "exponential", Mean: 3 * time.Second},
		{Dist: "uniform", Min: time.Millisecond, Max: 5 * time.Millisecond},
		{Dist: "constant", Value: 7 * time.Millisecond},
	} {
		t.Run(string(d.Dist), func(t *testing.T) {
			c := service(t, topology.Service{Workers: 1, ServiceTime: d}, false, false)
			ref, _, err := Delay(&d, "service_time")
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 1)) // the stream service gives c
			for i := range 1000 {
				if got, want := c.ServiceTime(), ref.Sample(r); got != want {
					t.Fatalf("draw %d: ServiceTime %v, Sample %v", i, got, want)
				}
			}
		})
	}
}
