package collapse

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// SLO is a collapse objective, collapse(LEVEL, T)<BOUND: the probability
// of reaching the level within T from the start must stay below BOUND.
type SLO struct {
	Level  Level
	Within time.Duration
	Bound  float64
}

// String returns the objective as ParseSLO reads it.
func (s SLO) String() string {
	return fmt.Sprintf("collapse(%s, %v)<%s", s.Level, s.Within, strconv.FormatFloat(s.Bound, 'g', -1, 64))
}

// IsSLO reports whether expr is a collapse objective (it starts with
// "collapse("), for callers that also accept other objectives.
func IsSLO(expr string) bool { return strings.HasPrefix(strings.TrimSpace(expr), "collapse(") }

// ParseSLO reads collapse(LEVEL, DURATION)<BOUND, for example
// collapse(system(db)>=500, 24h)<1e-3.
func ParseSLO(expr string) (SLO, error) {
	s := strings.TrimSpace(expr)
	body, ok := strings.CutPrefix(s, "collapse(")
	if !ok {
		return SLO{}, fmt.Errorf("collapse slo %q: want collapse(LEVEL, DURATION)<BOUND, e.g. collapse(system(db)>=500, 24h)<1e-3", expr)
	}
	end := strings.LastIndexByte(body, ')')
	if end < 0 {
		return SLO{}, fmt.Errorf("collapse slo %q: missing ) closing collapse(", expr)
	}
	args, rest := body[:end], strings.TrimSpace(body[end+1:])
	comma := strings.LastIndexByte(args, ',')
	if comma < 0 {
		return SLO{}, fmt.Errorf("collapse slo %q: want a level and a duration separated by a comma", expr)
	}
	lv, err := ParseLevel(args[:comma])
	if err != nil {
		return SLO{}, fmt.Errorf("collapse slo %q: %w", expr, err)
	}
	within, err := time.ParseDuration(strings.TrimSpace(args[comma+1:]))
	if err != nil || within <= 0 {
		return SLO{}, fmt.Errorf("collapse slo %q: horizon %q: want a positive duration such as 24h", expr, strings.TrimSpace(args[comma+1:]))
	}
	b, ok := strings.CutPrefix(rest, "<")
	if !ok || strings.HasPrefix(b, "=") {
		return SLO{}, fmt.Errorf("collapse slo %q: want < BOUND after collapse(...), e.g. <1e-3", expr)
	}
	bound, err := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if err != nil || !(bound > 0 && bound < 1) {
		return SLO{}, fmt.Errorf("collapse slo %q: bound %q: want a probability in (0, 1)", expr, strings.TrimSpace(b))
	}
	return SLO{Level: lv, Within: within, Bound: bound}, nil
}

// Search finds the highest value of Param (a load such as workload.rate)
// between Lo and Hi at which the SLO is shown to hold: the estimate's 95 %
// interval lies below the bound. It bisects, taking a point whose
// interval straddles the bound as failing (not shown to hold), so the
// answer errs on the safe side.
type Search struct {
	SLO    SLO
	Param  string
	Lo, Hi float64
	// Resolution ends the bisection; 0 means (Hi − Lo)/32.
	Resolution float64
	// Method is ctmc, splitting, or "" for ctmc where the scenario's chain
	// is exact (Fitted.Exact) and splitting elsewhere: the approximate
	// retry chain underestimates collapse (docs/model.md), which would
	// overstate capacity.
	Method string
	// Split tunes splitting; its Level and Within are the SLO's.
	Split Options
}

// Point is one load the search judged.
type Point struct {
	Value    float64   `json:"value"`
	Holds    bool      `json:"holds"`
	Estimate *Estimate `json:"estimate"`
}

// Report is a search's answer.
type Report struct {
	SLO    string `json:"slo"`
	Param  string `json:"param"`
	Method string `json:"method"`
	// Holds is the highest value shown to meet the SLO, FailsAt the lowest
	// not shown to; either is absent when the range never met or always
	// met it.
	Holds   *float64 `json:"holds_at,omitempty"`
	FailsAt *float64 `json:"fails_at,omitempty"`
	Points  []Point  `json:"points"`
	Events  uint64   `json:"events"`
}

// Run performs the search on base.
func (s Search) Run(ctx context.Context, base *topology.Scenario) (*Report, error) {
	if !(s.Lo < s.Hi) {
		return nil, fmt.Errorf("collapse capacity: %s: range %g:%g: want lo < hi", s.Param, s.Lo, s.Hi)
	}
	res := s.Resolution
	if res <= 0 {
		res = (s.Hi - s.Lo) / 32
	}
	method := s.Method
	if method == "" {
		method = "splitting"
		if f, err := Fit(base, s.SLO.Level); err == nil && f.Exact {
			method = "ctmc"
		}
	}
	rep := &Report{SLO: s.SLO.String(), Param: s.Param, Method: method}
	judge := func(v float64) (bool, error) {
		sc, err := base.WithSets(fmt.Sprintf("%s=%s", s.Param, strconv.FormatFloat(v, 'g', -1, 64)))
		if err != nil {
			return false, err
		}
		opt := s.Split
		opt.Level, opt.Within = s.SLO.Level, s.SLO.Within
		var est *Estimate
		if method == "ctmc" {
			est, err = Solve(sc, opt)
		} else {
			est, err = Split(ctx, sc, opt)
		}
		if err != nil {
			return false, fmt.Errorf("%s=%g: %w", s.Param, v, err)
		}
		holds := est.CI95[1] < s.SLO.Bound
		rep.Points = append(rep.Points, Point{Value: v, Holds: holds, Estimate: est})
		rep.Events += est.Events
		return holds, nil
	}
	lo, hi := s.Lo, s.Hi
	okLo, err := judge(lo)
	if err != nil {
		return rep, err
	}
	if !okLo {
		rep.FailsAt = &lo
		return rep, nil
	}
	okHi, err := judge(hi)
	if err != nil {
		return rep, err
	}
	if okHi {
		rep.Holds = &hi
		return rep, nil
	}
	for hi-lo > res {
		mid := (lo + hi) / 2
		ok, err := judge(mid)
		if err != nil {
			return rep, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	rep.Holds, rep.FailsAt = &lo, &hi
	return rep, nil
}

// WriteText prints the report for people: each point, then the answer.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "collapse capacity: %s over %s (%s)\n", r.SLO, r.Param, r.Method)
	fmt.Fprintf(&b, "%12s  %-12s  %-27s  %s\n", r.Param, "probability", "ci95", "verdict")
	for _, p := range r.Points {
		v := "fails"
		if p.Holds {
			v = "holds"
		}
		fmt.Fprintf(&b, "%12g  %-12.4g  [%-11.4g, %-11.4g]  %s\n", p.Value, p.Estimate.Probability, p.Estimate.CI95[0], p.Estimate.CI95[1], v)
	}
	switch {
	case r.Holds != nil && r.FailsAt != nil:
		fmt.Fprintf(&b, "holds up to %s=%g; not shown to hold from %g\n", r.Param, *r.Holds, *r.FailsAt)
	case r.Holds != nil:
		fmt.Fprintf(&b, "holds over the whole range, up to %s=%g\n", r.Param, *r.Holds)
	case r.FailsAt != nil:
		fmt.Fprintf(&b, "not shown to hold even at %s=%g\n", r.Param, *r.FailsAt)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
