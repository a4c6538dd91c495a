package driver

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/shard"
	"github.com/stormsim/stormsim/topology"
)

// TestShardsSendTheWholeScheduleOnce: N shards started at one epoch send
// disjoint sets of request ids whose union is the unsharded run's, at the
// same intended times, and their results merge to the unsharded counts
// with an exactly merged histogram count.
func TestShardsSendTheWholeScheduleOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // run label -> "id/isWrite" of each request
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		run := r.Header.Get("X-Test-Run")
		seen[run] = append(seen[run], r.Header.Get(transport.HeaderRequestID)+"/"+strconv.FormatBool(r.Method == http.MethodPost))
	})
	const dur = time.Second
	opts := func(label string, sh shard.Spec, epoch time.Time) Options {
		arrivals, err := TargetArrivals(topology.ArrivalPoisson, 300, 0.3, dur, 7)
		if err != nil {
			t.Fatal(err)
		}
		return Options{
			Target: srv.URL, Arrivals: arrivals, Duration: dur, Workers: 32, Seed: 7,
			WriteMethod: http.MethodPost,
			Header:      http.Header{"X-Test-Run": {label}}, Shard: sh, Epoch: epoch,
		}
	}
	whole, err := Run(context.Background(), opts("whole", shard.Spec{}, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	parts := make([]*metrics.Result, n)
	errs := make([]error, n)
	epoch := time.Now().Add(50 * time.Millisecond) // the shared --start-at
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[i], errs[i] = Run(context.Background(), opts("shard-"+strconv.Itoa(i), shard.Spec{Index: i, Count: n}, epoch))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	mu.Lock()
	var union []string
	for i := range n {
		ids := seen["shard-"+strconv.Itoa(i)]
		union = append(union, ids...)
	}
	want := slices.Clone(seen["whole"])
	mu.Unlock()
	slices.Sort(union)
	slices.Sort(want)
	if len(want) < 200 {
		t.Fatalf("unsharded run sent only %d requests", len(want))
	}
	if !slices.Equal(union, want) {
		t.Fatalf("shards sent %d requests, unsharded %d: the union of the shards is not the whole schedule", len(union), len(want))
	}
	if len(slices.Compact(slices.Clone(union))) != len(union) {
		t.Fatal("a request id was sent by two shards")
	}
	merged, err := metrics.Merge(parts...)
	if err != nil {
		t.Fatal(err)
	}
	if got, w := merged.Summary.Requests, whole.Summary.Requests; got != w {
		t.Errorf("merged requests %+v, unsharded %+v", got, w)
	}
	if got, w := merged.Latency.TotalCount(), whole.Latency.TotalCount(); got != w {
		t.Errorf("merged histogram holds %d latencies, unsharded %d", got, w)
	}
}
