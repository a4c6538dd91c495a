package tune

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// WriteText writes the plan as a table for people.
func (p *Plan) WriteText(w io.Writer) error {
	o := p.Options
	var b bytes.Buffer
	fmt.Fprintf(&b, "deadline %v; attempt timeout at %s; hedge at %s; max amplification %.3gx\n\n",
		o.Deadline, PercentileName(o.Percentile), PercentileName(o.HedgePercentile), o.MaxAmplification)
	width := len("hop")
	for _, h := range p.Hops {
		width = max(width, len(h.Name))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tsamples\tp50\tp99\tp99.9\town p99\tbudget\ttimeout\tspurious\tfit\tattempts\thedge at\t+load\tp99 hedged\t\n", width, "hop")
	for _, h := range p.Hops {
		fmt.Fprintf(tw, "%-*s\t%d\t%v\t%v\t%v\t%v\t%v\t%v\t%.2f%%\t%d\t%d\t%v\t%.1f%%\t%v\t\n",
			width, h.Name, h.N, round(h.P50), round(h.P99), round(h.P999), round(h.OwnP99), round(h.Budget),
			round(h.Timeout), 100*h.Spurious, h.Fit, h.Attempts, round(h.HedgeDelay), 100*h.HedgeLoad, round(h.HedgedP99))
	}
	tw.Flush()
	b.WriteString("\n")
	fmt.Fprintf(&b, "retries: %s\n", p.OwnerReason)
	n := len(p.Hops)
	fmt.Fprintf(&b, "budget:  retry budget ratio %.3f at that one layer bounds worst-case load at %.3gx; if every hop retried, each would need %.4f ((1+r)^%d = %.3g)\n",
		p.BudgetRatio, 1+p.BudgetRatio, p.BudgetRatioEveryHop, n, o.MaxAmplification)
	if h := p.hedgeHop(); h != nil {
		fmt.Fprintf(&b, "hedge:   on the call into %q after %v: +%.1f%% load (inside the retry budget), p99 %v -> %v\n",
			h.Name, round(h.HedgeDelay), 100*h.HedgeLoad, round(h.P99), round(h.HedgedP99))
	} else {
		fmt.Fprintf(&b, "hedge:   not recommended at the retry owner (it would not cut p99, or no hop owns retries)\n")
	}
	for _, h := range p.Hops {
		if h.Timeout != h.Quantile {
			fmt.Fprintf(&b, "timeout: %s: %v, raised from its %s %v to wait for the retries below it\n",
				h.Name, round(h.Timeout), PercentileName(o.Percentile), round(h.Quantile))
		}
	}
	for _, h := range p.Hops {
		if h.Note != "" {
			fmt.Fprintf(&b, "note:    %s: %s\n", h.Name, h.Note)
		}
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// hedgeHop returns the hop where a hedge is recommended: the retry owner,
// whose budget also bounds the hedges, if hedging there cuts p99 and the
// hedge goes out before the attempt times out.
func (p *Plan) hedgeHop() *HopPlan {
	if p.Owner < 0 {
		return nil
	}
	h := &p.Hops[p.Owner]
	if h.HedgedP99 >= h.P99 || h.HedgeDelay <= 0 || h.HedgeDelay >= h.Timeout {
		return nil
	}
	return h
}

// jsonPlan is the JSON form of a Plan: durations in milliseconds.
type jsonPlan struct {
	DeadlineMs          float64   `json:"deadline_ms"`
	Percentile          float64   `json:"percentile"`
	HedgePercentile     float64   `json:"hedge_percentile"`
	MaxAmplification    float64   `json:"max_amplification"`
	Hops                []jsonHop `json:"hops"`
	RetryOwner          string    `json:"retry_owner"`
	RetryOwnerReason    string    `json:"retry_owner_reason"`
	HedgeAt             string    `json:"hedge_at"`
	BudgetRatio         float64   `json:"budget_ratio"`
	BudgetRatioEveryHop float64   `json:"budget_ratio_every_hop"`
	Warnings            []string  `json:"warnings"`
	Set                 []string  `json:"set"`
}

type jsonHop struct {
	Name           string     `json:"name"`
	Source         string     `json:"source,omitempty"`
	Note           string     `json:"note,omitempty"`
	Samples        int        `json:"samples"`
	P50Ms          float64    `json:"p50_ms"`
	P99Ms          float64    `json:"p99_ms"`
	P999Ms         float64    `json:"p999_ms"`
	QuantileMs     float64    `json:"quantile_ms"`
	TimeoutMs      float64    `json:"timeout_ms"`
	SpuriousRate   float64    `json:"spurious_timeout_rate"`
	OwnP50Ms       float64    `json:"own_p50_ms"`
	OwnP99Ms       float64    `json:"own_p99_ms"`
	BudgetMs       float64    `json:"budget_ms"`
	AttemptsFit    int        `json:"attempts_fit"`
	Attempts       int        `json:"attempts"`
	HedgeDelayMs   float64    `json:"hedge_delay_ms"`
	HedgeExtraLoad float64    `json:"hedge_extra_load"`
	P99HedgedMs    float64    `json:"p99_hedged_ms"`
	Modes          *jsonModes `json:"modes,omitempty"`
}

type jsonModes struct {
	DeltaBIC   float64    `json:"delta_bic"`
	Separation float64    `json:"separation"`
	Modes      []jsonMode `json:"modes"`
}

type jsonMode struct {
	Weight     float64 `json:"weight"`
	Samples    int     `json:"samples"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	P999Ms     float64 `json:"p999_ms"`
	QuantileMs float64 `json:"quantile_ms"`
}

func ms(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

// MarshalJSON writes the plan with durations in milliseconds.
func (p *Plan) MarshalJSON() ([]byte, error) {
	o := p.Options
	j := jsonPlan{
		DeadlineMs: ms(o.Deadline), Percentile: o.Percentile, HedgePercentile: o.HedgePercentile,
		MaxAmplification: o.MaxAmplification, RetryOwnerReason: p.OwnerReason,
		BudgetRatio: p.BudgetRatio, BudgetRatioEveryHop: p.BudgetRatioEveryHop,
		Warnings: p.Warnings, Set: p.Sets(),
	}
	if j.Warnings == nil {
		j.Warnings = []string{}
	}
	if p.Owner >= 0 {
		j.RetryOwner = p.Hops[p.Owner].Name
	}
	if h := p.hedgeHop(); h != nil {
		j.HedgeAt = h.Name
	}
	for _, h := range p.Hops {
		jh := jsonHop{
			Name: h.Name, Source: h.Source, Note: h.Note, Samples: h.N,
			P50Ms: ms(h.P50), P99Ms: ms(h.P99), P999Ms: ms(h.P999), QuantileMs: ms(h.Quantile),
			TimeoutMs: ms(h.Timeout), SpuriousRate: h.Spurious, OwnP50Ms: ms(h.OwnP50), OwnP99Ms: ms(h.OwnP99),
			BudgetMs: ms(h.Budget), AttemptsFit: h.Fit, Attempts: h.Attempts,
			HedgeDelayMs: ms(h.HedgeDelay), HedgeExtraLoad: h.HedgeLoad, P99HedgedMs: ms(h.HedgedP99),
		}
		if m := h.Modes; m != nil {
			jm := &jsonModes{DeltaBIC: m.DeltaBIC, Separation: m.Separation}
			for _, c := range m.Components {
				jm.Modes = append(jm.Modes, jsonMode{Weight: c.Weight, Samples: c.N,
					P50Ms: ms(c.P50), P99Ms: ms(c.P99), P999Ms: ms(c.P999), QuantileMs: ms(c.Quantile(o.Percentile))})
			}
			jh.Modes = jm
		}
		j.Hops = append(j.Hops, jh)
	}
	return json.Marshal(j)
}

// Sets returns the scenario overrides (topology --set paths) that apply
// the plan to a scenario whose chain is the hops in order: the first hop is
// called by the workload's client, each next one by the hop above it.
func (p *Plan) Sets() []string {
	// A zero timeout would mean "none" in a scenario: floor at 1µs.
	dur := func(d time.Duration) string { return max(d.Round(time.Microsecond), time.Microsecond).String() }
	sets := []string{"workload.deadline=" + dur(p.Options.Deadline)}
	hedge := p.hedgeHop()
	for i := range p.Hops {
		h := &p.Hops[i]
		prefix := "workload.client."
		if i > 0 {
			prefix = "services." + p.Hops[i-1].Name + ".calls." + h.Name + "."
		}
		sets = append(sets, prefix+"timeout="+dur(h.Timeout), fmt.Sprintf("%sretry.max_attempts=%d", prefix, h.Attempts))
		if i > 0 {
			sets = append(sets, prefix+"propagate_deadline=true")
		}
		if i == p.Owner {
			sets = append(sets, fmt.Sprintf("%sbudget.ratio=%.4g", prefix, p.BudgetRatio))
		}
		if h == hedge {
			sets = append(sets, prefix+"hedge.delay="+dur(h.HedgeDelay), prefix+"hedge.max_attempts=2")
		}
	}
	return sets
}

// Save writes the plan into dir as plan.txt, plan.json and one
// cdf-HOP.png per hop, each atomically (a temporary file renamed into
// place), and returns the paths written.
func (p *Plan) Save(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("save plan: %w", err)
	}
	var written []string
	write := func(name string, fn func(io.Writer) error) error {
		path := filepath.Join(dir, name)
		if err := metrics.WriteFileAtomic(path, fn); err != nil {
			return err
		}
		written = append(written, path)
		return nil
	}
	if err := write("plan.txt", p.WriteText); err != nil {
		return written, err
	}
	if err := write("plan.json", func(w io.Writer) error {
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return written, err
	}
	for i := range p.Hops {
		h := &p.Hops[i]
		if err := write("cdf-"+metrics.PathComponent(h.Name)+".png", func(w io.Writer) error { return PlotTail(w, h, p.Options) }); err != nil {
			return written, err
		}
	}
	return written, nil
}
