package collapse

import (
	"errors"
	"fmt"
	"math"
)

// Chain is a finite continuous-time Markov chain with a target set: the
// states where the level is reached. Transitions are kept row by row
// (compressed sparse rows) and the target states are absorbing: only the
// time of first passage matters.
type Chain struct {
	// row i's transitions are col[start[i]:start[i+1]] at rate[...]
	start  []int
	col    []int32
	rate   []float64
	exit   []float64
	target []bool
	// next is the builder's open row.
	next int
}

// newChain returns a chain of n states with no transitions yet; rows are
// then filled in order with add and endRow.
func newChain(n int) *Chain {
	return &Chain{start: make([]int, 1, n+1), exit: make([]float64, n), target: make([]bool, n)}
}

// add adds a transition from the open row to state j at rate r.
func (c *Chain) add(j int, r float64) {
	if r <= 0 || j == c.next {
		return
	}
	c.col = append(c.col, int32(j))
	c.rate = append(c.rate, r)
	c.exit[c.next] += r
}

// endRow closes the open row.
func (c *Chain) endRow() {
	c.start = append(c.start, len(c.col))
	c.next++
}

// States returns the number of states.
func (c *Chain) States() int { return len(c.exit) }

// Passage is the first-passage law of a chain into its target set from one
// state, as Solve computes it.
type Passage struct {
	// Probability of reaching the target within the horizon.
	Probability float64
	// Bound is the numerical error bound on Probability: the Poisson mass
	// uniformization left out, plus the error of the geometric tail when
	// the series was extrapolated.
	Bound float64
	// MeanTime is the mean first-passage time in seconds; +Inf when the
	// target is not reached with probability one.
	MeanTime float64
	// Steps is the number of uniformization steps taken.
	Steps int
}

// maxSteps bounds the uniformization steps of one solve.
const maxSteps = 50_000_000

// Solve computes the probability that the chain, started in state from,
// reaches its target set within horizon seconds, by uniformization
// (Jensen's method): with Λ at least every exit rate, the chain is a
// discrete chain P = I + Q/Λ run at the events of a Poisson process of rate
// Λ, so P(τ ≤ t) = Σ_k Pois(k; Λt)·P(absorbed within k steps). The sum is
// cut where the Poisson tail is below 1e-12, which bounds the error.
//
// When Λt is large (a day of a busy queue), the survival of the discrete
// chain settles to geometric decay once its distribution has become
// quasi-stationary; Solve detects the settled ratio r (unchanged to
// settleTol over 1000 steps) and sums the rest in closed form, Σ Pois(k)·r^k =
// e^{−Λt(1−r)}. The mean passage time, Σ_k S_k/Λ with survival S_k, is
// summed the same way.
func (c *Chain) Solve(from int, horizon float64, wantMean bool) (Passage, error) {
	n := c.States()
	if from < 0 || from >= n {
		return Passage{}, fmt.Errorf("ctmc: start state %d outside 0..%d", from, n-1)
	}
	if horizon <= 0 {
		return Passage{}, errors.New("ctmc: the horizon must be positive")
	}
	if c.target[from] {
		return Passage{Probability: 1}, nil
	}
	lambda := 0.0
	for i, e := range c.exit {
		if !c.target[i] {
			lambda = max(lambda, e)
		}
	}
	if lambda == 0 {
		return Passage{MeanTime: math.Inf(1)}, nil
	}
	lambda *= 1.0001 // keep every state's self-loop probability positive
	lt := lambda * horizon
	pi := make([]float64, n)
	nx := make([]float64, n)
	pi[from] = 1
	logW := -lt // log Pois(0; Λt), updated in log space for large Λt
	// surv is S_k, the mass not absorbed after k steps, and absorbed its
	// complement summed from each step's absorption (1 − S_k loses the
	// digits of a tiny probability). decay is the share of the surviving
	// mass absorbed by the last step; it settles when the chain's
	// distribution has become quasi-stationary.
	surv, absorbed := 1.0, 0.0
	var prob, cum, meanSum, decay float64
	stable := 0
	for k := 0; ; k++ {
		w := math.Exp(logW)
		cum += w
		prob += w * absorbed
		meanSum += surv
		done := 1-cum < 1e-12 && float64(k) > lt
		switch {
		case done && (!wantMean || surv < 1e-15):
			return Passage{Probability: prob, Bound: max(1-cum, 0) + 1e-12, MeanTime: meanSum / lambda, Steps: k}, nil
		case done && stable >= settle:
			// Σ_{j>k} S_j = S_k·(1−d)/d once the decay is geometric.
			return Passage{Probability: prob, Bound: max(1-cum, 0) + 1e-12, MeanTime: meanTail(meanSum, surv*(1-decay), decay) / lambda, Steps: k}, nil
		case k >= maxSteps:
			return Passage{}, fmt.Errorf("ctmc: more than %d uniformization steps (Λt = %.3g) without a settled decay", maxSteps, lt)
		}
		a := c.step(pi, nx, lambda)
		pi, nx = nx, pi
		d := a / surv
		if math.Abs(d-decay) <= settleTol*d {
			stable++
		} else {
			stable = 0
		}
		decay = d
		surv -= a
		absorbed += a
		logW += math.Log(lt) - math.Log(float64(k+1))
		if stable >= settle && !done {
			// S_j = S_{k+1}·(1−d)^(j−k−1) for j > k, so the rest of the
			// sum is Σ_{j>k} Pois(j)(1 − S_j) = (1 − cum) − S_{k+1}·
			// (1−d)^−(k+1)·e^{−Λt·d}·P(Pois(Λt(1−d)) > k).
			tail := surv * math.Exp(-lt*decay-float64(k+1)*math.Log1p(-decay)) * upperPoissonShare(lt*(1-decay), k+1)
			p := Passage{Probability: prob + (1 - cum) - tail, Steps: k + 1}
			// The decay settled to settleTol per step; its drift over
			// the steps the tail spans, and what rounding hides below
			// settleTol, leave a relative error on the tail that the
			// tests measure below 1e-7.
			p.Bound = min(tail*max(1e-7, settleTol*(lt-float64(k))), 1) + 1e-12
			if a := lt * decay; a < 1e-3 {
				// Too little decays over the horizon for 1 − cum − tail to
				// keep its digits: sum the rest to first order instead.
				p.Probability = prob + (1-cum)*absorbed + surv*(lt-float64(k+1))*decay
				p.Bound = surv*a*a + 1e-12
			}
			p.MeanTime = meanTail(meanSum, surv, decay) / lambda
			return p, nil
		}
		if surv <= 0 {
			// Everything was absorbed: the rest of the sum is its weight.
			return Passage{Probability: prob + (1 - cum), MeanTime: meanSum / lambda, Steps: k + 1}, nil
		}
	}
}

// meanTail completes Σ_k S_k: the sum so far plus next/d, the geometric
// series from the next term on; +Inf when nothing decays.
func meanTail(sum, next, d float64) float64 {
	if d <= 0 {
		return math.Inf(1)
	}
	return sum + next/d
}

// settle is how many steps the survival ratio must stay unchanged (to
// settleTol) before Solve takes the decay as geometric.
const settle = 1000

// settleTol is the relative change of the survival ratio per step below
// which it counts as unchanged: near the float64 rounding of the sums, so
// that the drift left when the decay is taken as geometric is negligible.
const settleTol = 1e-13

// step applies P = I + Q/Λ to the surviving mass pi, writing nx, drops
// what entered the target and returns that mass.
func (c *Chain) step(pi, nx []float64, lambda float64) float64 {
	for i := range nx {
		nx[i] = 0
	}
	for i, x := range pi {
		if x == 0 {
			continue
		}
		nx[i] += x * (1 - c.exit[i]/lambda)
		for q := c.start[i]; q < c.start[i+1]; q++ {
			nx[c.col[q]] += x * c.rate[q] / lambda
		}
	}
	a := 0.0
	for i := range nx {
		if c.target[i] {
			a += nx[i]
			nx[i] = 0
		}
	}
	return a
}

// upperPoissonShare returns P(N ≥ k) for N Poisson with mean m.
func upperPoissonShare(m float64, k int) float64 {
	if m <= 0 {
		return 0
	}
	// Sum the lower tail in log space; 1 − it is accurate enough here
	// (the tail is multiplied by a survival already far below 1 when it
	// matters).
	if float64(k) < m-40*math.Sqrt(m) {
		return 1
	}
	lw := -m
	s := 0.0
	for j := 0; j < k; j++ {
		s += math.Exp(lw)
		lw += math.Log(m) - math.Log(float64(j+1))
	}
	return max(1-s, 0)
}
