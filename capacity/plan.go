package capacity

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/topology"
)

// SolveSpec asks for the smallest (or largest) value of Path that meets
// the SLO at the plan's target load. Lo = Hi = 0 means DefaultRange.
type SolveSpec struct {
	Path   string
	Lo, Hi float64
}

// ParseSolve parses a --solve value: PATH, or PATH=LO:HI (durations for
// duration paths).
func ParseSolve(s string, sc *topology.Scenario) (SolveSpec, error) {
	path, rng, hasRange := strings.Cut(strings.TrimSpace(s), "=")
	spec := SolveSpec{Path: strings.TrimSpace(path)}
	k, _, _, err := PathOf(sc, spec.Path)
	if err != nil {
		return SolveSpec{}, fmt.Errorf("--solve %s: %w", s, err)
	}
	if hasRange {
		if spec.Lo, spec.Hi, err = ParseRange(k, rng); err != nil {
			return SolveSpec{}, fmt.Errorf("--solve %s: %w", s, err)
		}
	}
	return spec, nil
}

// ParseRange parses LO:HI in the path's kind (durations for Duration).
func ParseRange(k Kind, s string) (lo, hi float64, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("range %q: want LO:HI", s)
	}
	if lo, err = k.Parse(a); err != nil {
		return 0, 0, fmt.Errorf("range %q: %w", s, err)
	}
	if hi, err = k.Parse(b); err != nil {
		return 0, 0, fmt.Errorf("range %q: %w", s, err)
	}
	if !(lo < hi) {
		return 0, 0, fmt.Errorf("range %q: want LO < HI", s)
	}
	return lo, hi, nil
}

// DefaultRange is the range searched when none is given: from a quarter
// to four times the current value (integers from at least 1). A path
// without a positive current value needs an explicit range.
func DefaultRange(path string, k Kind, current float64) (lo, hi float64, err error) {
	if !(current > 0) {
		return 0, 0, fmt.Errorf("%s: no positive value in the scenario to search around; give a range", path)
	}
	lo, hi = current/4, current*4
	if k == Integer {
		lo, hi = max(1, math.Floor(lo)), math.Ceil(hi)
	}
	return lo, hi, nil
}

// Plan is a capacity study: the capacity search, what-if solves, or both.
type Plan struct {
	// Base is the scenario as loaded; Build lays overrides over it (the
	// baseline variant with extra overrides, analysis.ScenarioBuilder).
	Base  *topology.Scenario
	Build analysis.Builder
	// Search is the capacity search (Param, range, SLO, replicas,
	// confidence, detector); solves copy everything but Param and range.
	// An empty range means DefaultRange around Param's current value.
	Search Search
	// SkipCapacity runs only the solves.
	SkipCapacity bool
	// Solves are searched one at a time, at Param = Target.
	Solves []SolveSpec
	Target float64
}

// Run runs the plan. Progress covers every search of the plan.
func (p *Plan) Run(ctx context.Context, run analysis.Runner, opt Options) (*Report, error) {
	s := p.Search
	k, cur, _, err := PathOf(p.Base, s.Param)
	if err != nil {
		return nil, fmt.Errorf("capacity: --param: %w", err)
	}
	s.Kind = k
	if s.Lo == 0 && s.Hi == 0 && !p.SkipCapacity {
		if s.Lo, s.Hi, err = DefaultRange(s.Param, k, cur); err != nil {
			return nil, fmt.Errorf("capacity: %w (--range)", err)
		}
	}
	if s.Orientation == Auto {
		s.Orientation = HoldsBelow
	}
	rep := &Report{Scenario: p.Base.Name, Param: s.Param, Current: cur}
	var searches []Search
	if !p.SkipCapacity {
		searches = append(searches, s)
	}
	for _, sv := range p.Solves {
		ks, scur, _, err := PathOf(p.Base, sv.Path)
		if err != nil {
			return nil, fmt.Errorf("capacity: --solve: %w", err)
		}
		ss := s
		ss.Param, ss.Kind, ss.Lo, ss.Hi, ss.Resolution, ss.Orientation = sv.Path, ks, sv.Lo, sv.Hi, 0, Auto
		if sv.Lo == 0 && sv.Hi == 0 {
			if ss.Lo, ss.Hi, err = DefaultRange(sv.Path, ks, scur); err != nil {
				return nil, fmt.Errorf("capacity: --solve %w (--solve PATH=LO:HI)", err)
			}
		}
		ss.Fixed = append(append([]string(nil), s.Fixed...), s.Param+"="+strconv.FormatFloat(p.Target, 'g', -1, 64))
		searches = append(searches, ss)
	}
	if len(searches) == 0 {
		return nil, fmt.Errorf("capacity: nothing to do")
	}
	// One progress total over all searches: each one's upper bound.
	total, offset := 0, 0
	faults := len(p.Base.Faults) > 0
	for _, ss := range searches {
		if err := ss.Validate(); err != nil {
			return nil, err
		}
		total += len(ss.Runs(ss.Lo, faults)) * (2 + ss.MaxSteps())
	}
	for i, ss := range searches {
		o := opt
		o.Key = fmt.Sprintf("%ssearch-%d-", opt.Key, i)
		if opt.Progress != nil {
			base := offset
			o.Progress = func(done, _ int) { opt.Progress(base+done, total) }
		}
		out, err := Run(ctx, run, p.Build, ss, o)
		if out != nil && out.Interrupted {
			// Keep what the searches found before the signal.
			rep.Interrupted = true
			if i == 0 && !p.SkipCapacity {
				rep.Capacity = out
			} else {
				rep.Solves = append(rep.Solves, Solve{Path: ss.Param, Target: p.Target, Outcome: out})
			}
			return rep, err
		}
		if err != nil {
			return nil, err
		}
		offset += out.Runs
		if i == 0 && !p.SkipCapacity {
			rep.Capacity = out
			continue
		}
		rep.Solves = append(rep.Solves, Solve{Path: ss.Param, Target: p.Target, Outcome: out})
	}
	if opt.Progress != nil {
		opt.Progress(offset, offset)
	}
	return rep, nil
}
