package driver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// newTarget starts a loopback server running h and closes it with the test.
func newTarget(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestRunCountsEveryScheduledRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int64
		var nw memnet.Network
		target := loadtest.MemTarget(t, &nw, func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			if r.Header.Get(transport.HeaderRequestID) == "" || r.Header.Get(transport.HeaderAttempt) != "1" {
				http.Error(w, "missing stormsim headers", http.StatusBadRequest)
			}
		})
		res, err := Run(context.Background(), Options{
			Network: &nw, Target: target, Arrivals: loadtest.Constant(200, time.Second), Duration: time.Second, Workers: 16,
		})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Requests.Offered != 200 || s.Requests.Succeeded != 200 || hits.Load() != 200 {
			t.Fatalf("offered %d succeeded %d hits %d, want 200 each", s.Requests.Offered, s.Requests.Succeeded, hits.Load())
		}
		if s.Amplification != 1 || s.Load.Unsent != 0 || s.Status != "complete" {
			t.Errorf("amplification %v unsent %d status %q", s.Amplification, s.Load.Unsent, s.Status)
		}
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first attempt of every request is rejected with a 150ms
		// pushback; the second must not arrive sooner.
		var first atomic.Int64 // unix nanos of the rejection
		var gap atomic.Int64
		var nw memnet.Network
		target := loadtest.MemTarget(t, &nw, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(transport.HeaderAttempt) == "1" {
				first.Store(time.Now().UnixNano())
				transport.SetRetryAfter(w.Header(), 150*time.Millisecond, false)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			gap.Store(time.Now().UnixNano() - first.Load())
		})
		pol := topology.Call{HonorPushback: true, Retry: policies.RetryConfig{MaxAttempts: 2}}
		res, err := Run(context.Background(), Options{
			Network: &nw, Target: target, Arrivals: loadtest.Constant(1, time.Second), Duration: time.Second, Policy: pol,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Requests.Succeeded != 1 {
			t.Fatalf("succeeded %d, want 1", res.Summary.Requests.Succeeded)
		}
		if g := time.Duration(gap.Load()); g < 150*time.Millisecond || g > time.Second {
			t.Errorf("retry came %v after the rejection, want ≥ 150ms (and well under a second)", g)
		}
		if e := res.Summary.Edges[0]; e.PushbackWaits != 1 || e.Retries != 1 {
			t.Errorf("pushback waits %d retries %d, want 1 and 1", e.PushbackWaits, e.Retries)
		}
	})
}

// TestCoordinatedOmission drives a target that serves 16 requests at a
// time in exactly 50 ms each (320 req/s) at 400 req/s for 10 s, with as
// many senders as the target has slots, so that the backlog builds up in
// the driver: requests wait to be sent, not at the target. On a scripted
// clock the run is exact: request n, due at a(n) = n × 2.5 ms, starts at
// s(n) = max(a(n), s(n−16) + 50 ms) (the senders take requests in order,
// each freed by the 16th request before) and ends 50 ms later; its
// latency, measured from the intended send, is end − a(n), up to about
// 2.5 s at the end (800 requests of backlog at 320 req/s). A driver that
// measured from the actual send would report 50 ms for every request, and
// one that slowed its schedule to the target would send fewer.
func TestCoordinatedOmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slots, rate, n = 16, 400, 4000
		service := 50 * time.Millisecond
		var nw memnet.Network
		clk := new(clock.Fake)
		busy := make(chan struct{}, slots)
		target := loadtest.MemTarget(t, &nw, func(w http.ResponseWriter, r *http.Request) {
			select {
			case busy <- struct{}{}:
			default:
				t.Error("a request found all 16 slots busy: the driver sent more than its senders")
				return
			}
			clock.Sleep(clk, r.Context(), service)
			<-busy
		})
		var res *metrics.Result
		loadtest.RunScripted(t, clk, func() {
			var err error
			res, err = Run(context.Background(), Options{Clock: clk, Network: &nw,
				Target: target, Arrivals: loadtest.Constant(rate, 10*time.Second), Duration: 10 * time.Second,
				Workers: slots, MaxLateness: 20 * time.Second, Grace: 10 * time.Second,
			})
			if err != nil {
				t.Error(err)
			}
		})
		if res == nil {
			return
		}
		// The exact schedule, into the histogram the driver uses.
		want := metrics.NewLatencyHistogram()
		var sum, worst time.Duration
		late := 0
		start := make([]time.Duration, n)
		for i := range n {
			at := time.Duration(i) * time.Second / rate
			start[i] = at
			if i >= slots {
				start[i] = max(at, start[i-slots]+service)
			}
			if start[i]-at > DefaultLateThreshold {
				late++
			}
			lat := start[i] + service - at
			metrics.RecordLatency(want, lat)
			sum += lat.Truncate(time.Microsecond)
			worst = max(worst, lat)
		}
		wl := metrics.LatencyOf(want).WithExact(int64(sum/time.Microsecond), n, worst)
		s := res.Summary
		if s.Requests.Succeeded != n || s.Load.Unsent != 0 || s.Load.Late != int64(late) {
			t.Errorf("succeeded %d unsent %d late %d, want all %d sent and served, %d of them late", s.Requests.Succeeded, s.Load.Unsent, s.Load.Late, n, late)
		}
		if s.LatencyMs != wl {
			t.Errorf("latency %+v,\nwant     %+v (from the intended send time)", s.LatencyMs, wl)
		}
		// The schedule itself: the last requests wait about 2.5 s.
		if wl.P99 < 2000 || wl.Max > 2600 {
			t.Errorf("expected p99 %.0f ms max %.0f ms, want the backlog's 2–2.6 s", wl.P99, wl.Max)
		}
	})
}

// TestStallShowsInP99: a target that stalls every request for one second
// once (a global pause, like a GC or a failover) must show the stall in
// the p99 of a 100 req/s run, though it served only one slow request. On
// the bubble's clock the run is exact: the 50th request, due at 490 ms,
// holds the target until 1490 ms, and the 101 requests due from 490 ms to
// 1490 ms end then, waiting 1000 ms down to 0 in steps of 10 ms; the other
// 99 wait nothing. So the max is 1 s and the mean 10 ms × (0+…+100)/200 =
// 252.5 ms; a driver measuring from the actual send would see only the 8
// requests the senders held at the target as slow.
func TestStallShowsInP99(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := make(chan struct{}, 1) // a mutex the bubble sees waiting
		var n atomic.Int64
		var nw memnet.Network
		target := loadtest.MemTarget(t, &nw, func(w http.ResponseWriter, r *http.Request) {
			lock <- struct{}{}
			if n.Add(1) == 50 {
				time.Sleep(time.Second)
			}
			<-lock
		})
		res, err := Run(context.Background(), Options{
			Network: &nw, Target: target, Arrivals: loadtest.Constant(100, 2*time.Second), Duration: 2 * time.Second, Workers: 8,
		})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if l := s.LatencyMs; l.Count != 200 || l.Max != 1000 || l.Mean != 252.5 {
			t.Errorf("%d requests, max %v ms, mean %v ms; want 200, 1000 and 252.5", l.Count, l.Max, l.Mean)
		}
		// The top 1 % of 200 waited ≥ 0.99 s, the top 10 % ≥ 0.8 s.
		if s.LatencyMs.P99 < 980 || s.LatencyMs.P90 < 790 || s.LatencyMs.P50 > 10 {
			t.Errorf("p50 %.0f p90 %.0f p99 %.0f ms, want ≤ 10, ≥ 790, ≥ 980", s.LatencyMs.P50, s.LatencyMs.P90, s.LatencyMs.P99)
		}
		if s.Load.Late == 0 {
			t.Errorf("no late requests reported with only 8 senders and a 1 s stall")
		}
	})
}

func TestBudgetStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int64
		var nw memnet.Network
		target := loadtest.MemTarget(t, &nw, func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		run := func(budget *policies.BudgetConfig) (offered, attempts int64, denied int64) {
			pol := topology.Call{Retry: policies.RetryConfig{MaxAttempts: 3}, Budget: budget}
			res, err := Run(context.Background(), Options{
				Network: &nw, Target: target, Arrivals: loadtest.Constant(200, time.Second/2), Duration: time.Second / 2, Policy: pol,
			})
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			return s.Requests.Offered, s.Services[0].Attempts, s.Edges[0].RetriesDenied
		}
		off, att, _ := run(nil)
		if att != 3*off {
			t.Fatalf("without a budget: %d attempts for %d requests, want 3×", att, off)
		}
		off, att, denied := run(&policies.BudgetConfig{Kind: "ratio", Ratio: 0.1})
		// Retries ≤ 0.1 × first attempts in the window: at most 1.1 × offered.
		if max := off + off/10 + 1; att > max {
			t.Errorf("with a 10%% budget: %d attempts for %d requests, want ≤ %d", att, off, max)
		}
		if denied == 0 {
			t.Errorf("the budget denied no retries")
		}
	})
}

func TestBreakerOpensAgainstDeadTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens: every connection is refused
	pol := topology.Call{Breaker: &policies.BreakerConfig{Kind: "consecutive", Failures: 5, OpenFor: 10 * time.Second}}
	res, err := Run(context.Background(), Options{
		Target: dead, Arrivals: loadtest.Constant(100, time.Second), Duration: time.Second, Policy: pol,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	e := s.Edges[0]
	// The breaker opens on the fifth refusal; attempts already allowed
	// when it opens (calls overlap on a slow machine) still go out.
	if cf := s.Load.ConnectFailures; e.BreakerOpens != 1 || cf < 5 || cf > 8 || e.BreakerFastFail != s.Requests.Offered-cf {
		t.Errorf("opens %d, connect failures %d, fast fails %d of %d: want 1, 5 (to 8), and the rest",
			e.BreakerOpens, cf, e.BreakerFastFail, s.Requests.Offered)
	}
	if s.Requests.Failed != s.Requests.Offered {
		t.Errorf("failed %d of %d, want all (refused connections are definite failures)", s.Requests.Failed, s.Requests.Offered)
	}
}

// TestHedgeWinsAgainstSlowFirstAttempt: every first attempt hangs until it
// is cancelled; the hedge, sent 30 ms later, is answered at once and wins,
// and cancel_others cancels the first. As a time script: at 29 ms only the
// first attempt of request 1 has arrived; at 30 ms its hedge has, and the
// call is over. Every request's latency is exactly the hedge's delay.
func TestHedgeWinsAgainstSlowFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var nw memnet.Network
		clk := new(clock.Fake)
		var firsts, hedges, cancelled atomic.Int64
		target := loadtest.MemTarget(t, &nw, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(transport.HeaderAttempt) != "1" {
				hedges.Add(1)
				return
			}
			firsts.Add(1)
			<-r.Context().Done()
			cancelled.Add(1)
		})
		pol := topology.Call{Hedge: &policies.HedgeConfig{Delay: 30 * time.Millisecond, MaxAttempts: 2, CancelOthers: true}}
		done := make(chan *metrics.Result, 1)
		go func() {
			res, err := Run(context.Background(), Options{Clock: clk, Network: &nw,
				Target: target, Arrivals: loadtest.Constant(20, time.Second), Duration: time.Second, Policy: pol,
			})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		step := func(at time.Duration, wantFirsts, wantHedges int64) {
			t.Helper()
			clk.AdvanceTo(at)
			synctest.Wait()
			if f, h := firsts.Load(), hedges.Load(); f != wantFirsts || h != wantHedges {
				t.Fatalf("at %v: %d first attempts and %d hedges arrived, want %d and %d", at, f, h, wantFirsts, wantHedges)
			}
		}
		synctest.Wait()
		step(0, 1, 0)
		step(29*time.Millisecond, 1, 0)
		step(30*time.Millisecond, 1, 1)
		if c := cancelled.Load(); c != 1 {
			t.Fatalf("at 30 ms: %d first attempts cancelled, want the one the hedge beat", c)
		}
		step(50*time.Millisecond, 2, 1)
		var res *metrics.Result
		loadtest.RunScripted(t, clk, func() { res = <-done })
		if res == nil {
			return
		}
		s := res.Summary
		e := s.Edges[0]
		if s.Requests.Succeeded != 20 || e.HedgesSent != 20 || e.HedgesWon != 20 || firsts.Load() != 20 || cancelled.Load() != 20 {
			t.Errorf("succeeded %d hedges sent %d won %d; first attempts %d, cancelled %d: want 20 each",
				s.Requests.Succeeded, e.HedgesSent, e.HedgesWon, firsts.Load(), cancelled.Load())
		}
		if l := s.LatencyMs; l.Mean != 30 || l.Max != 30 {
			t.Errorf("latency mean %v max %v ms, want exactly 30 ms (the hedge's delay) for every request", l.Mean, l.Max)
		}
	})
}

func TestInterruptReturnsPartialResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var nw memnet.Network
		target := loadtest.MemTarget(t, &nw, func(w http.ResponseWriter, r *http.Request) {})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		res, err := Run(ctx, Options{
			Network: &nw, Target: target, Arrivals: loadtest.Constant(100, time.Minute), Duration: time.Minute, Grace: 200 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("interrupted run took %v", el)
		}
		s := res.Summary
		if s.Status != "interrupted" || s.Requests.Offered < 10 || s.Requests.Offered > 40 {
			t.Errorf("status %q offered %d, want interrupted after about 30", s.Status, s.Requests.Offered)
		}
	})
}

func TestRefusesRemoteTarget(t *testing.T) {
	_, err := Run(context.Background(), Options{Target: "http://192.0.2.1/", Arrivals: loadtest.Constant(1, time.Second), Duration: time.Second})
	if !errors.Is(err, ErrRemote) {
		t.Fatalf("err = %v, want ErrRemote", err)
	}
}

func TestDeadlineIsPropagated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bad atomic.Int64
		var nw memnet.Network
		target := loadtest.MemTarget(t, &nw, func(w http.ResponseWriter, r *http.Request) {
			ms, err := strconv.ParseFloat(r.Header.Get(transport.HeaderDeadline), 64)
			if err != nil || ms <= 0 || ms > 500 {
				bad.Add(1)
			}
		})
		res, err := Run(context.Background(), Options{
			Network: &nw, Target: target, Arrivals: loadtest.Constant(100, 200*time.Millisecond), Duration: 200 * time.Millisecond,
			Deadline: 500 * time.Millisecond, Policy: topology.Call{PropagateDeadline: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Requests.Succeeded != 20 || bad.Load() != 0 {
			t.Errorf("succeeded %d; %d attempts without a remaining deadline in (0, 500] ms", res.Summary.Requests.Succeeded, bad.Load())
		}
	})
}

// TestDriverDispatchesOnTime: on a scripted clock every request of a
// Poisson schedule (1000/s, n = 1000, gaps from microseconds to
// milliseconds) is handed to a sender at its intended instant and answered
// by a target that takes no time: none is late, even by the 1 ns threshold,
// none unsent, and every latency, measured from the intended send time, is
// exactly zero. A schedule that woke late, rounded a wait, or measured from
// the wrong instant shows here exactly; how precisely the wall clock's
// wake-ups follow the schedule is TestDriverDispatchesOnTimeReal's (Linux).
func TestDriverDispatchesOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		var nw memnet.Network
		clk := new(clock.Fake)
		target := loadtest.MemTarget(t, &nw, func(http.ResponseWriter, *http.Request) {})
		arrivals, err := TargetArrivals(topology.ArrivalPoisson, 1000, 0, time.Hour, 7)
		if err != nil {
			t.Fatal(err)
		}
		var res *metrics.Result
		loadtest.RunScripted(t, clk, func() {
			if res, err = Run(context.Background(), Options{Clock: clk, Network: &nw,
				Target: target, Arrivals: arrivals, Duration: time.Hour, MaxRequests: n,
				Workers: 16, LateThreshold: time.Nanosecond,
			}); err != nil {
				t.Error(err)
			}
		})
		if res == nil {
			return
		}
		s := res.Summary
		if s.Requests.Succeeded != n || s.Load.Late != 0 || s.Load.Unsent != 0 {
			t.Errorf("succeeded %d, late %d, unsent %d; want %d, 0, 0", s.Requests.Succeeded, s.Load.Late, s.Load.Unsent, n)
		}
		if s.LatencyMs.Max != 0 || s.LatencyMs.Mean != 0 {
			t.Errorf("latency %+v from the intended send time, want exactly 0", s.LatencyMs)
		}
	})
}
