package collapse

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// BirthDeath returns the birth-death chain on 0..n whose state k moves to
// k+1 at birth(k) and to k−1 at death(k), with the states at or above
// target in the target set. An M/M/c/K queue is birth(k) = λ for k < c+K,
// death(k) = μ·min(k, c).
func BirthDeath(n, target int, birth, death func(k int) float64) *Chain {
	c := newChain(n + 1)
	for k := 0; k <= n; k++ {
		c.target[k] = k >= target
		if k < n {
			c.add(k+1, birth(k))
		}
		if k > 0 {
			c.add(k-1, death(k))
		}
		c.endRow()
	}
	return c
}

// RetryQueue is the single-queue retry model: one service of Workers
// workers and a waiting room of Queue, Poisson arrivals at Rate,
// exponential service at ServiceRate per worker, a client timeout per
// attempt and up to MaxAttempts attempts per request, retried at once (no
// backoff) on a timeout; a retry refused by a full queue is refused again
// at once, so a refusal loses the request, in the chain as in stormsim.
//
// Its chain has state (n, g): n attempts at the service (waiting or in
// service, whether their client still waits or not: the service works on
// orphans too unless Cancel), of which g are doomed — their client will
// time out before they are served. Whether an arriving attempt is doomed
// is decided when it arrives, from what is ahead of it: in a FIFO queue
// its wait is the service of the attempts ahead, so with n ahead it
// times out with probability P(W_n + S > timeout), W_n the time for
// n−Workers+1 departures at rate Workers·ServiceRate (Erlang) and S its
// own service — exact for one worker. A timeout, rather than every
// attempt's clock, is thus in the chain only for the attempts that reach
// it. The chain approximates stormsim's model in three ways, each stated
// in docs/model.md and measured against the simulator there:
//   - a doomed attempt times out after an exponential time of the
//     timeout's mean, not exactly the timeout after it arrived;
//   - a timed-out attempt is retried with probability 1 − 1/MaxAttempts,
//     so a request whose every attempt times out makes MaxAttempts
//     attempts on average (geometrically), not exactly;
//   - with several workers, the wait is that of the queue ahead at the
//     full departure rate, and with Cancel the orphans ahead are assumed
//     to be served rather than leave.
//
// With MaxAttempts 1 and no Cancel, n is exactly the M/M/c/K queue.
type RetryQueue struct {
	Rate, ServiceRate float64
	Workers, Queue    int
	Timeout           time.Duration
	MaxAttempts       int
	Cancel            bool
}

// doomed returns, for each count n of attempts ahead, the probability that
// an attempt arriving behind them is not served within the timeout.
func (q RetryQueue) doomed() []float64 {
	n := q.Workers + q.Queue
	tau := q.Timeout.Seconds()
	mu, cmu := q.ServiceRate, q.ServiceRate*float64(q.Workers)
	out := make([]float64, n+1)
	for ahead := 0; ahead <= n; ahead++ {
		k := ahead - q.Workers + 1 // departures to wait for
		if k <= 0 {
			out[ahead] = math.Exp(-mu * tau)
			continue
		}
		// P(W + S > τ) = P(W > τ) + ∫₀^τ f_W(w)·e^{−μ(τ−w)} dw, W ~
		// Erlang(k, cμ), by Simpson's rule on 400 panels.
		const panels = 400
		h := tau / panels
		var integral float64
		for i := 0; i <= panels; i++ {
			w := float64(i) * h
			f := erlangDensity(k, cmu, w) * math.Exp(-mu*(tau-w))
			switch {
			case i == 0 || i == panels:
			case i%2 == 1:
				f *= 4
			default:
				f *= 2
			}
			integral += f
		}
		out[ahead] = min(erlangSurvival(k, cmu, tau)+integral*h/3, 1)
	}
	return out
}

// erlangDensity is the density of the sum of k exponentials of rate r at x.
func erlangDensity(k int, r, x float64) float64 {
	if x <= 0 {
		if k == 1 {
			return r
		}
		return 0
	}
	lg, _ := math.Lgamma(float64(k))
	return math.Exp(float64(k)*math.Log(r) + float64(k-1)*math.Log(x) - r*x - lg)
}

// erlangSurvival is P(sum of k exponentials of rate r > x) = P(Pois(rx) < k).
func erlangSurvival(k int, r, x float64) float64 {
	m := r * x
	lw, s := -m, 0.0
	for j := 0; j < k; j++ {
		s += math.Exp(lw)
		lw += math.Log(m) - math.Log(float64(j+1))
	}
	return min(s, 1)
}

// Chain builds the chain with the target set n ≥ target (system) or
// n−Workers ≥ target (queue), and returns it with the empty state's index.
func (q RetryQueue) Chain(level Kind, target int) (*Chain, int) {
	n := q.Workers + q.Queue
	idx := func(tot, g int) int { return tot*(tot+1)/2 + g }
	c := newChain((n + 1) * (n + 2) / 2)
	theta := 1 / q.Timeout.Seconds()
	retry := 1 - 1/float64(max(q.MaxAttempts, 1))
	dm := q.doomed()
	// join adds the arrival of one attempt at total tot, g doomed, at rate r.
	join := func(tot, g int, r float64) {
		if tot >= n {
			c.add(idx(tot, g), r) // refused: a no-op unless tot, g moved
			return
		}
		c.add(idx(tot+1, g+1), r*dm[tot])
		c.add(idx(tot+1, g), r*(1-dm[tot]))
	}
	for tot := 0; tot <= n; tot++ {
		for g := 0; g <= tot; g++ {
			i := idx(tot, g)
			switch level {
			case Queue:
				c.target[i] = tot-q.Workers >= target
			default:
				c.target[i] = tot >= target
			}
			join(tot, g, q.Rate)
			if busy := min(tot, q.Workers); busy > 0 {
				// A departure; the doomed are the newest, served last.
				r := q.ServiceRate * float64(busy)
				if g < tot {
					c.add(idx(tot-1, g), r)
				} else {
					// Only doomed attempts are left: the one served timed
					// out first (it is doomed: its wait exceeds the
					// timeout), so its retry is sent as for a timeout.
					c.add(idx(tot-1, g-1), r*(1-retry))
					if retry > 0 {
						c.add(idx(tot, g), r*retry*dm[tot-1])
						c.add(idx(tot, g-1), r*retry*(1-dm[tot-1]))
					}
				}
			}
			if g > 0 {
				// A doomed attempt times out: it stays as an orphan (or
				// leaves, Cancel) and its retry arrives at once.
				r := theta * float64(g)
				nt := tot
				if q.Cancel {
					nt = tot - 1
				}
				c.add(idx(nt, g-1), r*(1-retry))
				if retry > 0 {
					if nt >= n {
						c.add(idx(nt, g-1), r*retry)
					} else {
						c.add(idx(nt+1, g), r*retry*dm[nt])
						c.add(idx(nt+1, g-1), r*retry*(1-dm[nt]))
					}
				}
			}
			c.endRow()
		}
	}
	return c, idx(0, 0)
}

// Fitted is the Markov chain of a scenario, as Fit finds it.
type Fitted struct {
	Chain *Chain
	// From is the empty start's state.
	From int
	// Exact says whether the chain is the scenario's model itself (the
	// birth-death queue) rather than an approximation of it (RetryQueue).
	Exact bool
	// Note says which chain it is.
	Note string
}

// Fit returns the chain of sc for level l when sc is a model the solver
// has: an M/M/c/K birth-death queue (no timeouts, or timeouts without
// retries and without cancellation, which leave the count of attempts at
// the service a birth-death chain) or the single-queue retry model
// (RetryQueue). Otherwise the error lists every reason it does not fit.
func Fit(sc *topology.Scenario, l Level) (*Fitted, error) {
	var why []string
	no := func(format string, a ...any) { why = append(why, fmt.Sprintf(format, a...)) }
	if len(sc.Services) != 1 {
		no("it has %d services (the chains model one)", len(sc.Services))
	}
	w := &sc.Workload
	if w.Arrival != "" && w.Arrival != "poisson" {
		no("workload.arrival is %s (want poisson)", w.Arrival)
	}
	if len(w.Schedule) > 0 {
		no("workload.schedule varies the rate")
	}
	if len(sc.Faults) > 0 {
		no("it has faults")
	}
	if l.Kind != System && l.Kind != Queue && l.Kind != Inflight {
		no("the level %s is not a count at the service", l)
	}
	if len(why) > 0 {
		return nil, refuse(why)
	}
	s := &sc.Services[0]
	if l.Kind != Inflight && l.Service != s.Name {
		no("the level names %q, the service is %q", l.Service, s.Name)
	}
	if s.ServiceTime.Dist != "exponential" || s.ServiceTime.Mean <= 0 {
		no("services.%s.service_time is %s (want exponential)", s.Name, s.ServiceTime.Dist)
	}
	if len(s.Calls) > 0 {
		no("services.%s makes downstream calls", s.Name)
	}
	if s.Queue == nil {
		no("services.%s.queue is unbounded (the chain needs a finite queue)", s.Name)
	}
	ov := s.Overload
	if ov.Discipline == "fifo" {
		ov.Discipline = ""
	}
	if s.ErrorRate > 0 || s.SlowdownPerInflight > 0 || (w.WriteFraction > 0 && w.IdempotencyKeys) || ov != (policies.OverloadConfig{}) {
		no("services.%s has error_rate, slowdown_per_inflight, keyed writes or overload settings", s.Name)
	}
	c := &w.Client
	if c.Network != nil || c.Budget != nil || c.Breaker != nil || c.Hedge != nil || c.Throttle != nil || c.SendRate != nil || c.HonorPushback {
		no("workload.client has a network delay, budget, breaker, hedge, throttle, send_rate or pushback")
	}
	attempts := max(c.Retry.MaxAttempts, 1)
	if attempts > 1 {
		if c.Retry.Backoff.Initial > 0 {
			no("workload.client.retry.backoff.initial is %v (the chain retries at once)", c.Retry.Backoff.Initial)
		}
		if c.Retry.BudgetShare > 0 {
			no("workload.client.retry.budget_share is set")
		}
		if len(c.Retry.On) > 0 && !slices.Contains(c.Retry.On, policies.RetryClass("timeout")) {
			no("workload.client.retry.on does not retry timeouts")
		}
		if c.Timeout <= 0 {
			no("workload.client.timeout is 0 (retries need a timeout)")
		}
	}
	if w.Deadline > 0 && c.Timeout > 0 && w.Deadline < time.Duration(attempts)*c.Timeout {
		no("workload.deadline %v can cut the %d attempts of %v short", w.Deadline, attempts, c.Timeout)
	}
	if w.Deadline > 0 && c.Timeout == 0 {
		no("workload.deadline without a timeout abandons attempts at a fixed age")
	}
	if len(why) > 0 {
		return nil, refuse(why)
	}
	mu := 1 / s.ServiceTime.Mean.Seconds()
	target := int(math.Ceil(l.Threshold))
	if l.Kind == Queue {
		target = int(math.Ceil(l.Threshold))
	}
	cap := s.Workers + *s.Queue
	if (l.Kind == Queue && target > *s.Queue) || (l.Kind != Queue && target > cap) {
		return nil, fmt.Errorf("ctmc: the level %s is above what services.%s holds (%d workers + queue %d): it is never reached", l, s.Name, s.Workers, *s.Queue)
	}
	// The chain's size, counted in floating point (it overflows int for a
	// queue of 1e10): cap+1 states without retries, (cap+1)(cap+2)/2 with.
	states := float64(cap) + 1
	if !(attempts == 1 && (!s.CancelOnTimeout || c.Timeout == 0)) {
		states = (float64(cap) + 1) * (float64(cap) + 2) / 2
	}
	if states > MaxStates {
		return nil, fmt.Errorf("ctmc: services.%s's chain would have %.3g states (%d workers + queue %d), more than the %d the solver holds (use --method splitting)", s.Name, states, s.Workers, *s.Queue, MaxStates)
	}
	if attempts == 1 && (!s.CancelOnTimeout || c.Timeout == 0) {
		// Every attempt stays at the service until served: M/M/c/K.
		bt := target
		if l.Kind == Queue {
			bt += s.Workers
		}
		ch := BirthDeath(cap, bt,
			func(int) float64 { return w.Rate },
			func(k int) float64 { return mu * float64(min(k, s.Workers)) })
		return &Fitted{Chain: ch, Exact: true, Note: fmt.Sprintf("exact: the M/M/%d/%d birth-death chain of attempts at %s", s.Workers, cap, s.Name)}, nil
	}
	q := RetryQueue{Rate: w.Rate, ServiceRate: mu, Workers: s.Workers, Queue: *s.Queue,
		Timeout: c.Timeout, MaxAttempts: attempts, Cancel: s.CancelOnTimeout}
	ch, from := q.Chain(l.Kind, target)
	return &Fitted{Chain: ch, From: from, Note: "approximate: the single-queue retry chain (exponential timeouts, geometric retries, random choice of the finished attempt; docs/model.md states the error)"}, nil
}

// refuse explains why a scenario has no chain.
func refuse(why []string) error {
	return errors.New("ctmc: the scenario does not fit a Markov chain the solver has: " + strings.Join(why, "; ") + " (use --method splitting)")
}

// Solve answers what Split answers, from the scenario's Markov chain when
// it has one (Fit), with no sampling error: ci95 is the numerical bound.
func Solve(sc *topology.Scenario, opt Options) (*Estimate, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	f, err := Fit(sc, opt.Level)
	if err != nil {
		return nil, err
	}
	ch := f.Chain
	p, err := ch.Solve(f.From, opt.Within.Seconds(), opt.MeanTime)
	if err != nil {
		return nil, err
	}
	est := &Estimate{Scenario: sc.Name, Method: "ctmc", Level: opt.Level.String(), WithinS: opt.Within.Seconds(),
		Probability: p.Probability, CI95: [2]float64{max(p.Probability-p.Bound, 0), min(p.Probability+p.Bound, 1)},
		Levels: []float64{opt.Level.Threshold}, States: ch.States(), Notes: []string{f.Note}}
	if opt.MeanTime {
		if !math.IsInf(p.MeanTime, 0) {
			m := p.MeanTime
			est.MeanTimeS = &m
		}
		est.MeanTimeNote = "exact mean first-passage time of the chain"
	}
	return est, nil
}
