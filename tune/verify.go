package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

// Comparison is a scenario simulated as written (with the plan's deadline)
// and with the plan applied.
type Comparison struct {
	Scenario string
	Hops     []string
	// Predicted is each hop's predicted spurious-timeout rate.
	Predicted []float64
	Sets      []string
	Baseline  metrics.Summary
	Tuned     metrics.Summary
}

// CheckChain reports whether the plan's hops form a chain in sc: the
// first is the workload's entry and each next one is called by the one
// above it. Sets addresses the calls by that chain.
func CheckChain(sc *topology.Scenario, p *Plan) error {
	if len(p.Hops) == 0 {
		return fmt.Errorf("verify: empty plan")
	}
	if e := sc.Workload.Entry; e != p.Hops[0].Name {
		return fmt.Errorf("verify: the first hop %q is not the scenario's entry %q", p.Hops[0].Name, e)
	}
	for i := 1; i < len(p.Hops); i++ {
		from, to := p.Hops[i-1].Name, p.Hops[i].Name
		s := sc.Service(from)
		if s == nil {
			return fmt.Errorf("verify: scenario %q has no service %q", sc.Name, from)
		}
		found := false
		for _, c := range s.Calls {
			found = found || c.To == to
		}
		if !found {
			return fmt.Errorf("verify: service %q of scenario %q makes no call to %q (hops must be given top-down along the call chain)", from, sc.Name, to)
		}
	}
	return nil
}

// Verify simulates sc with only the plan's deadline applied (the
// baseline) and with every recommendation applied (tuned), running both
// with run: the simulator on the command line, fakes in tests.
func Verify(ctx context.Context, sc *topology.Scenario, p *Plan, run analysis.Runner) (*Comparison, error) {
	if err := CheckChain(sc, p); err != nil {
		return nil, err
	}
	sets := p.Sets()
	base, err := sc.WithSets(sets[0]) // workload.deadline
	if err != nil {
		return nil, fmt.Errorf("verify: baseline: %w", err)
	}
	tuned, err := sc.WithSets(sets...)
	if err != nil {
		return nil, fmt.Errorf("verify: applying the plan: %w", err)
	}
	c := &Comparison{Scenario: sc.Name, Sets: sets}
	for _, h := range p.Hops {
		c.Hops = append(c.Hops, h.Name)
		c.Predicted = append(c.Predicted, h.Spurious)
	}
	rb, err := run.Run(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("verify: baseline run: %w", err)
	}
	rt, err := run.Run(ctx, tuned)
	if err != nil {
		return nil, fmt.Errorf("verify: tuned run: %w", err)
	}
	c.Baseline, c.Tuned = rb.Summary, rt.Summary
	return c, nil
}

// TimedOut returns the attempts whose caller gave up, summed over
// services: timeouts, and the losers of hedge races.
func TimedOut(s *metrics.Summary) int64 {
	var n int64
	for _, sv := range s.Services {
		n += sv.TimedOut
	}
	return n
}

// hedges returns the hedges sent, summed over edges: each one that loses
// its race is abandoned and counted with the timeouts.
func hedges(s *metrics.Summary) int64 {
	var n int64
	for _, e := range s.Edges {
		n += e.HedgesSent
	}
	return n
}

// timeoutRate returns a service's timed-out share of its attempts.
func timeoutRate(s *metrics.Summary, service string) (float64, bool) {
	for _, sv := range s.Services {
		if sv.Name == service && sv.Attempts > 0 {
			return float64(sv.TimedOut) / float64(sv.Attempts), true
		}
	}
	return 0, false
}

// Verdict is what the comparison says of the plan, in words.
type Verdict struct {
	// Recommended is false when the plan makes the scenario worse: less
	// goodput, or more failed requests, beyond the runs' noise.
	Recommended bool `json:"recommended"`
	// Summary is one line: "the plan lowers goodput 18%: not recommended".
	Summary string `json:"summary"`
	// Reasons explain it: the hops whose timeouts the measured latency did
	// not predict, and what to do about them.
	Reasons []string `json:"reasons,omitempty"`
}

// noiseZ is how many standard deviations of the runs' noise a difference
// must exceed to count: successes and failures are counts, roughly
// Poisson, so two runs' counts a and b differ by about √(a+b) by chance.
const noiseZ = 3

// differs reports whether counts a and b differ beyond the runs' noise.
func differs(a, b int64) bool {
	return math.Abs(float64(b-a)) > noiseZ*math.Sqrt(float64(a+b))
}

// Verdict judges the plan by the two runs: not recommended when it lowers
// goodput or fails more requests beyond noise, and why, hop by hop.
func (c *Comparison) Verdict() Verdict {
	b, t := &c.Baseline, &c.Tuned
	var v Verdict
	change := 0.0
	if b.GoodputRPS > 0 {
		change = t.GoodputRPS/b.GoodputRPS - 1
	}
	bBad, tBad := b.Requests.Failed+b.Requests.Unknown, t.Requests.Failed+t.Requests.Unknown
	switch {
	case differs(b.Requests.Succeeded, t.Requests.Succeeded) && t.Requests.Succeeded < b.Requests.Succeeded:
		v.Summary = fmt.Sprintf("the plan lowers goodput %.0f%%: not recommended", -100*change)
	case differs(bBad, tBad) && tBad > bBad:
		v.Summary = fmt.Sprintf("the plan fails or loses %d more requests (%d → %d): not recommended", tBad-bBad, bBad, tBad)
	case differs(b.Requests.Succeeded, t.Requests.Succeeded):
		v.Recommended = true
		v.Summary = fmt.Sprintf("the plan raises goodput %.0f%%: recommended", 100*change)
	default:
		v.Recommended = true
		v.Summary = fmt.Sprintf("the plan keeps goodput (%.1f → %.1f req/s, within the runs' noise) and fails no more requests: recommended", b.GoodputRPS, t.GoodputRPS)
	}
	for k, h := range c.Hops {
		n, rate := int64(0), 0.0
		for _, sv := range t.Services {
			if sv.Name == h && sv.Attempts > 0 {
				n, rate = sv.Attempts, float64(sv.TimedOut)/float64(sv.Attempts)
			}
		}
		p := c.Predicted[k]
		// Timeouts out of n attempts, if each times out with probability
		// p, are binomial: beyond noiseZ sd the prediction is wrong here.
		sd := math.Sqrt(max(float64(n)*p*(1-p), 1))
		if n == 0 || float64(n)*(rate-p) <= noiseZ*sd {
			continue
		}
		v.Reasons = append(v.Reasons, fmt.Sprintf("%s: %.1f%% of attempts timed out against %.2f%% predicted: "+
			"the latency the plan was computed from is not what %s shows in this scenario (its faults, queueing or load); "+
			"recommend from latency measured under this load, or give %s a longer timeout", h, 100*rate, 100*p, h, h))
	}
	if !v.Recommended && len(v.Reasons) == 0 {
		v.Reasons = append(v.Reasons, "every hop timed out about as often as predicted: the plan's retry limits or budget "+
			"refuse work the baseline's retries completed; compare failed + unknown and amplification above")
	}
	return v
}

// WriteText prints the verdict, then baseline and tuned side by side and
// the reasons for the verdict.
func (c *Comparison) WriteText(w io.Writer) error {
	var b bytes.Buffer
	v := c.Verdict()
	fmt.Fprintf(&b, "verify: %s, baseline vs tuned (seed %d)\n", c.Scenario, c.Tuned.Seed)
	fmt.Fprintf(&b, "verdict: %s\n\n", v.Summary)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, a, t string) { fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, a, t) }
	row("", "baseline", "tuned")
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	i := func(v int64) string { return fmt.Sprintf("%d", v) }
	row("goodput (rps)", f(c.Baseline.GoodputRPS), f(c.Tuned.GoodputRPS))
	row("p99 latency (ms)", f(c.Baseline.LatencyMs.P99), f(c.Tuned.LatencyMs.P99))
	row("failed + unknown", i(c.Baseline.Requests.Failed+c.Baseline.Requests.Unknown), i(c.Tuned.Requests.Failed+c.Tuned.Requests.Unknown))
	row("spurious timeouts (edge timeouts)", i(TimedOut(&c.Baseline)), i(TimedOut(&c.Tuned)))
	row("  of which hedges sent (losers abandoned)", i(hedges(&c.Baseline)), i(hedges(&c.Tuned)))
	row("max amplification", fmt.Sprintf("%.3f", c.Baseline.Amplification), fmt.Sprintf("%.3f", c.Tuned.Amplification))
	for k, h := range c.Hops {
		bt, ok1 := timeoutRate(&c.Baseline, h)
		tt, ok2 := timeoutRate(&c.Tuned, h)
		if ok1 && ok2 {
			row(fmt.Sprintf("%s timeout rate (predicted %.2f%%)", h, 100*c.Predicted[k]), fmt.Sprintf("%.2f%%", 100*bt), fmt.Sprintf("%.2f%%", 100*tt))
		}
	}
	tw.Flush()
	b.WriteString("\nPredicted rates assume the measured latency; the scenario's faults and queueing raise them,\nand a hop's rate counts hedge losers abandoned on it too.\n")
	if len(v.Reasons) > 0 {
		b.WriteString("\nwhy:\n")
		for _, r := range v.Reasons {
			fmt.Fprintf(&b, "  - %s\n", r)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// MarshalJSON writes the verdict, both summaries and the overrides applied.
func (c *Comparison) MarshalJSON() ([]byte, error) {
	type hop struct {
		Name      string  `json:"name"`
		Predicted float64 `json:"predicted_spurious_rate"`
	}
	j := struct {
		Scenario string          `json:"scenario"`
		Verdict  Verdict         `json:"verdict"`
		Hops     []hop           `json:"hops"`
		Set      []string        `json:"set"`
		Baseline metrics.Summary `json:"baseline"`
		Tuned    metrics.Summary `json:"tuned"`
	}{Scenario: c.Scenario, Verdict: c.Verdict(), Set: c.Sets, Baseline: c.Baseline, Tuned: c.Tuned}
	for k, h := range c.Hops {
		j.Hops = append(j.Hops, hop{h, c.Predicted[k]})
	}
	return json.Marshal(j)
}
