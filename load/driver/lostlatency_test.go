package driver

import (
	"testing"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// The latency of failed and unknown requests is reported beside the
// headline in load mode as in the simulator: exact count, mean and max,
// and no data (nil) where no request ended that way.
func TestRecorderLostLatency(t *testing.T) {
	r := newRecorder(0, time.Second, 10*time.Second)
	ms := time.Millisecond
	for _, d := range []time.Duration{10 * ms, 20 * ms, 30 * ms} {
		r.record(time.Second, time.Second+d, policies.Failed, true)
	}
	r.record(time.Second, 3*time.Second, policies.Unknown, true)
	r.record(time.Second, time.Second+5*ms, policies.Succeeded, true)
	r.record(time.Second, time.Second+90*ms, policies.Failed, false) // warm-up: not counted

	f, u := r.lost[0].summary(), r.lost[1].summary()
	if f == nil || f.Count != 3 || f.Mean != 20 || f.Max != 30 {
		t.Errorf("failed latency = %+v, want count 3, mean 20 ms, max 30 ms", f)
	}
	if u == nil || u.Count != 1 || u.Mean != 2000 || u.Max != 2000 {
		t.Errorf("unknown latency = %+v, want count 1, mean and max 2000 ms", u)
	}

	ok := newRecorder(0, time.Second, 10*time.Second)
	ok.record(0, 5*ms, policies.Succeeded, true)
	if f, u := ok.lost[0].summary(), ok.lost[1].summary(); f != nil || u != nil {
		t.Errorf("no failed or unknown requests: got %+v, %+v, want no data (nil)", f, u)
	}
}
