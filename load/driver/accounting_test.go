package driver

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// TestLoadAccountingAddsUp checks the one accounting of a load run
// (docs/concepts.md, "Counting in load mode") against hedges whose losers
// are cancelled or answered, retries after refusals and timeouts, and a
// warm-up, over both HTTP clients: every attempt sent after the warm-up is
// counted once, in the one way it ended, and every line of the summary
// counts the same attempts.
func TestLoadAccountingAddsUp(t *testing.T) {
	srv := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.Header.Get(transport.HeaderRequestID))
		first := r.Header.Get(transport.HeaderAttempt) == "1"
		switch {
		case first && id%3 == 0:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case first && id%5 == 0:
			select { // past the attempt timeout: timed out, or a hedge's loser
			case <-time.After(80 * time.Millisecond):
			case <-r.Context().Done():
			}
		default:
			time.Sleep(time.Duration(1+id%3) * time.Millisecond)
		}
	})
	retry := policies.RetryConfig{MaxAttempts: 3, Backoff: policies.BackoffConfig{Initial: time.Millisecond, Multiplier: 1}}
	cases := []struct {
		name string
		pol  topology.Call
	}{
		{"retries", topology.Call{Timeout: 40 * time.Millisecond, Retry: retry}},
		{"hedge-cancel-losers", topology.Call{Timeout: 40 * time.Millisecond, Retry: retry,
			Hedge: &policies.HedgeConfig{Delay: 5 * time.Millisecond, MaxAttempts: 2, CancelOthers: true}}},
		{"hedge-keep-losers", topology.Call{Timeout: 40 * time.Millisecond,
			Hedge: &policies.HedgeConfig{Delay: 5 * time.Millisecond, MaxAttempts: 2}}},
	}
	for _, c := range cases {
		for _, net := range []bool{false, true} {
			name := c.name + "/lean"
			if net {
				name = c.name + "/net"
			}
			t.Run(name, func(t *testing.T) {
				res, err := Run(context.Background(), Options{
					Target: srv.URL, Arrivals: loadtest.Constant(200, time.Second), Duration: time.Second,
					Warmup: 200 * time.Millisecond, Workers: 64, Policy: c.pol, NetHTTP: net,
				})
				if err != nil {
					t.Fatal(err)
				}
				checkLoadAccounting(t, &res.Summary)
			})
		}
	}
}

// checkLoadAccounting checks the identities of docs/concepts.md's
// "Counting in load mode" on a --target run's summary.
func checkLoadAccounting(t *testing.T, s *metrics.Summary) {
	t.Helper()
	l, e, svc := s.Load, s.Edges[0], s.Services[0]
	eq := func(what string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %d, want %d", what, got, want)
		}
	}
	// Logical requests.
	eq("scheduled = sent + unsent", l.Scheduled, l.Sent+l.Unsent)
	eq("offered = succeeded + failed + unknown", s.Requests.Offered, s.Requests.Succeeded+s.Requests.Failed+s.Requests.Unknown)
	eq("edge calls = offered − unsent after the warm-up", e.Calls, s.Requests.Offered)
	eq("edge outcomes = calls", e.Succeeded+e.Failed+e.Unknown, e.Calls)
	// Attempts: one population, each counted once by how it ended.
	ended := l.Answered + l.ConnectFailures + l.Timeouts + l.Resets + l.Canceled + l.OtherErrors
	eq("attempts = answered + no answer by kind", l.Attempts, ended)
	var statuses int64
	for _, n := range l.Statuses {
		statuses += n
	}
	eq("answered = Σ statuses", l.Answered, statuses)
	eq("load attempts = edge attempts", l.Attempts, e.Attempts)
	eq("service attempts = edge attempts", svc.Attempts, e.Attempts)
	eq("service ok + rejected + failed = answered", svc.Succeeded+svc.Rejected+svc.Failed, l.Answered)
	eq("service timed out = timeouts", svc.TimedOut, l.Timeouts)
	eq("attempts = calls + retries + hedges (no fast fails)", e.Attempts, e.Calls+e.Retries+e.HedgesSent)
	if ph := e.Phases; ph != nil {
		var failedIn int64
		for _, n := range ph.FailedIn {
			failedIn += n
		}
		// Canceled attempts did not fail: no phase counts them.
		if noAnswer := l.Attempts - l.Answered - l.Canceled; failedIn > noAnswer {
			t.Errorf("failed in phases %d > attempts without an answer and not canceled %d", failedIn, noAnswer)
		}
	}
	if s.Requests.Offered != 160 {
		t.Errorf("offered %d, want 160 (200/s for 1s, 200ms of warm-up)", s.Requests.Offered)
	}
}
