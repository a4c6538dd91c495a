package edge

import (
	"context"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
)

// AttemptLatency is the latency of an edge's attempts as their caller
// timed them, from send to answer: every attempt that ended on its own
// (an answer, a refusal, its own timeout) in all, and the succeeded ones
// in ok as well, warm-up attempts excepted. It stands in for the
// server-side latency of a target the driver cannot see inside, which is
// what `stormsim tune` reads from results:DIR: "one attempt of the call
// into it, as its caller sees it". An attempt its call abandoned (a
// hedge's loser, the run's end) is neither a latency nor a failure of the
// callee and is left out. Safe for concurrent use.
type AttemptLatency struct {
	mu      sync.Mutex
	all, ok *hdrhistogram.Histogram
}

// NewAttemptLatency returns an empty tally of an edge's attempt latencies
// (EdgeConfig.Latency).
func NewAttemptLatency() *AttemptLatency {
	return &AttemptLatency{all: metrics.NewLatencyHistogram(), ok: metrics.NewLatencyHistogram()}
}

// add records attempt a, which took d and ended with ans, unless a is a
// warm-up attempt or ctx (its call's) ended first: then the call
// abandoned it.
func (l *AttemptLatency) add(ctx context.Context, a *transport.Attempt, d time.Duration, ans transport.Answer) {
	if a.Warmup || ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	metrics.RecordLatency(l.all, d)
	if ans.Outcome == policies.OK {
		metrics.RecordLatency(l.ok, d)
	}
}

// Histograms returns copies of what l holds: every attempt's latency and
// the succeeded ones'.
func (l *AttemptLatency) Histograms() (all, ok *hdrhistogram.Histogram) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return hdrhistogram.Import(l.all.Export()), hdrhistogram.Import(l.ok.Export())
}
