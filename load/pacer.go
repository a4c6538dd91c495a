package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// A Pacer gives the intended send time of every logical request of a run.
// The driver sends request n as soon as the elapsed time reaches At(n),
// whether or not earlier requests have returned, and measures its latency
// from At(n): a late send is charged to the request, never hidden.
type Pacer interface {
	// At returns the offset from the start of the run at which request n
	// (0-based) is due, and false when the schedule has no request n.
	At(n uint64) (at time.Duration, ok bool)
}

// PacerFunc adapts a function to the Pacer interface.
type PacerFunc func(n uint64) (time.Duration, bool)

// At calls f(n).
func (f PacerFunc) At(n uint64) (time.Duration, bool) { return f(n) }

// Step is one segment of a piecewise-constant rate: from At on, Rate
// requests per second.
type Step struct {
	At   time.Duration
	Rate float64
}

// ConstantPacer sends Rate requests per second, evenly spaced, during
// [0, Duration): request n is due at n/Rate. It is a pure function of n and
// safe for concurrent use.
type ConstantPacer struct {
	Rate     float64
	Duration time.Duration
}

// At returns n/Rate, or false past Duration or when Rate ≤ 0.
func (p ConstantPacer) At(n uint64) (time.Duration, bool) {
	if p.Rate <= 0 {
		return 0, false
	}
	// In floating point first: at a tiny rate n/Rate overflows a Duration
	// (and wrapped to a time long past, so the schedule never ended).
	f := float64(n) / p.Rate * float64(time.Second)
	if !(f < maxPacerOffset) {
		return 0, false
	}
	at := time.Duration(f)
	return at, at < p.Duration
}

// StepPacer is a piecewise-constant rate, evenly spaced within each step:
// the number of requests due by time t is the integral of the rate over
// [0, t], and request n is due when that integral reaches n. It is a pure
// function of n (a binary search over the steps) and safe for concurrent use.
type StepPacer struct {
	steps    []Step    // sorted by At; steps[0].At == 0
	cum      []float64 // requests due by steps[i].At
	duration time.Duration
}

// NewStepPacer builds a StepPacer starting at rate from 0 and switching to
// each step's rate at its At, ending at duration.
func NewStepPacer(rate float64, steps []Step, duration time.Duration) (*StepPacer, error) {
	all := append([]Step{{At: 0, Rate: rate}}, steps...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].At < all[j].At })
	for i, s := range all {
		if s.Rate < 0 || math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) {
			return nil, fmt.Errorf("load: pacer step %d: rate must be a finite number ≥ 0, got %v", i, s.Rate)
		}
		if s.At < 0 {
			return nil, fmt.Errorf("load: pacer step %d: at must be ≥ 0, got %v", i, s.At)
		}
	}
	p := &StepPacer{steps: all, cum: make([]float64, len(all)), duration: duration}
	for i := 1; i < len(all); i++ {
		p.cum[i] = p.cum[i-1] + all[i-1].Rate*(all[i].At-all[i-1].At).Seconds()
	}
	return p, nil
}

// At returns the time at which the rate's integral reaches n.
func (p *StepPacer) At(n uint64) (time.Duration, bool) { return p.atCount(float64(n)) }

// PoissonPacer draws exponential gaps of a piecewise-constant rate from its
// own seeded stream, so a run's arrival times are reproducible from its seed.
// Unlike the other pacers it keeps state: At must be called with n = 0, 1,
// 2, … in order (it may repeat the last n). Not safe for concurrent use.
type PoissonPacer struct {
	steps    *StepPacer
	r        *rand.Rand
	n        uint64
	u        float64 // the integral of the rate up to request n, in requests
	started  bool
	duration time.Duration
}

// NewPoissonPacer builds a Poisson pacer over the same rate shape as
// NewStepPacer. Gaps are drawn in "operational time": the n-th arrival is
// due when the rate's integral reaches the sum of n unit exponentials, which
// gives a non-homogeneous Poisson process.
func NewPoissonPacer(rate float64, steps []Step, duration time.Duration, r *rand.Rand) (*PoissonPacer, error) {
	sp, err := NewStepPacer(rate, steps, duration)
	if err != nil {
		return nil, err
	}
	return &PoissonPacer{steps: sp, r: r, duration: duration}, nil
}

// At returns request n's due time; n must not go back.
func (p *PoissonPacer) At(n uint64) (time.Duration, bool) {
	if !p.started {
		p.started = true
		p.u = p.r.ExpFloat64()
	}
	if n < p.n {
		panic(fmt.Sprintf("load: PoissonPacer.At(%d) after At(%d): calls must not go back", n, p.n))
	}
	for p.n < n {
		p.u += p.r.ExpFloat64()
		p.n++
	}
	return p.steps.atCount(p.u)
}

// atCount inverts the rate integral at a real-valued count.
func (p *StepPacer) atCount(x float64) (time.Duration, bool) {
	i := sort.Search(len(p.cum), func(i int) bool { return p.cum[i] > x }) - 1
	for ; i >= 0 && i < len(p.steps); i++ {
		s := p.steps[i]
		if s.Rate > 0 {
			d := (x - p.cum[i]) / s.Rate * float64(time.Second)
			if d >= maxPacerOffset { // past any window, so not in this step
				continue
			}
			at := s.At + time.Duration(d)
			if i+1 == len(p.steps) || at < p.steps[i+1].At {
				return at, at < p.duration
			}
		}
	}
	return 0, false
}
