package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Verdict is a check's outcome.
type Verdict string

// The verdicts.
const (
	Held     Verdict = "held"
	Violated Verdict = "violated"
	Skipped  Verdict = "skipped"
)

// The report's statuses: every check held (or was skipped by the spec),
// one was violated, or one could not be completed because the target did
// not answer as needed (and none was violated).
const (
	StatusHeld       = "held"
	StatusViolated   = "violated"
	StatusIncomplete = "incomplete"
)

// Report is the audit's result: the JSON of `stormsim audit --format json`,
// a public contract (docs/audit.md) — extend it, never rename it.
type Report struct {
	Status  string   `json:"status"`
	Spec    string   `json:"spec,omitempty"`
	Targets []string `json:"targets"`
	Seed    uint64   `json:"seed"`
	Checks  []Result `json:"checks"`
}

// Result is one check's verdict, why, and the evidence for it.
type Result struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	Why     string  `json:"why"`
	// Incomplete marks a check cut short by its limits or by a target that
	// did not answer: its verdict is skipped, and the report incomplete.
	Incomplete bool       `json:"incomplete,omitempty"`
	Evidence   []Evidence `json:"evidence"`
	// Requests is how many requests the check sent; DurationMS how long it took.
	Requests   int     `json:"requests"`
	DurationMS float64 `json:"duration_ms"`
	// Steps is the amplification check's table (other checks: none).
	Steps []Step `json:"steps,omitempty"`
}

// Evidence is one piece of a verdict: what was wrong (or right) with an
// intent, and the intent itself with its attempts and the proxy's lines.
type Evidence struct {
	Note   string  `json:"note"`
	Intent *Intent `json:"intent,omitempty"`
	// Other is the intent Intent was compared with, when the check sends
	// pairs (new-intent: the first key; key-scope: the first tenant).
	Other *Intent `json:"other,omitempty"`
}

// Step is one step of the amplification check: the latency the proxy
// added to every answer, the intents offered in the step and the attempts
// that reached the upstream for them.
type Step struct {
	LatencyMS float64 `json:"latency_ms"`
	Intents   int     `json:"intents"`
	Attempts  int     `json:"attempts"`
	// Amplification is Attempts / Intents; Flagged marks the first step
	// where it exceeds 2.
	Amplification float64 `json:"amplification"`
	Flagged       bool    `json:"flagged,omitempty"`
}

// status sums up the checks' verdicts.
func status(rs []Result) string {
	s := StatusHeld
	for _, r := range rs {
		switch {
		case r.Verdict == Violated:
			return StatusViolated
		case r.Incomplete:
			s = StatusIncomplete
		}
	}
	return s
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the verdict table, then the evidence of each violated
// or incomplete check (at most three pieces each: --format json has all).
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "CHECK\tVERDICT\tREQUESTS\tTIME\tWHY\n")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1fs\t%s\n", c.Name, c.Verdict, c.Requests, c.DurationMS/1000, c.Why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Checks {
		if len(c.Steps) > 0 {
			fmt.Fprintf(w, "\n%s: attempts per intent at the upstream, by the latency the proxy added\n", c.Name)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "  LATENCY\tINTENTS\tATTEMPTS\tAMPLIFICATION\t\n")
			for _, s := range c.Steps {
				flag := ""
				if s.Flagged {
					flag = "<- retries more than double the load"
				}
				fmt.Fprintf(tw, "  %gms\t%d\t%d\t%.2f\t%s\n", s.LatencyMS, s.Intents, s.Attempts, s.Amplification, flag)
			}
			tw.Flush()
		}
		if c.Verdict != Violated && !c.Incomplete {
			continue
		}
		fmt.Fprintf(w, "\n%s %s:\n", c.Name, c.Verdict)
		for i, e := range c.Evidence {
			if i == 3 {
				fmt.Fprintf(w, "  ... %d more in --format json\n", len(c.Evidence)-3)
				break
			}
			fmt.Fprintf(w, "  - %s\n", e.Note)
			if e.Other != nil {
				writeIntent(w, e.Other)
			}
			if e.Intent != nil {
				writeIntent(w, e.Intent)
			}
		}
	}
	fmt.Fprintf(w, "\nstatus: %s\n", r.Status)
	return nil
}

// writeIntent writes an intent's attempts, one line each, with the
// proxy's fault line.
func writeIntent(w io.Writer, in *Intent) {
	tenant := ""
	if in.Tenant != "" {
		tenant = " tenant " + in.Tenant
	}
	effects := fmt.Sprintf("%d effects", in.Effects)
	if in.Effects < 0 {
		effects = "effects not counted"
	}
	fmt.Fprintf(w, "    key %s%s: %s\n", in.Key, tenant, effects)
	for _, a := range in.Attempts {
		ans := a.Error
		if a.Status != 0 {
			ans = fmt.Sprintf("%d %s", a.Status, oneLine(a.Answer))
		}
		px := ""
		if p := a.Proxy; p != nil {
			px = fmt.Sprintf(" | proxy: %s", p.Fault)
			if p.Drop != "" {
				px += " (" + p.Drop + ")"
			}
			if p.UpstreamStatus != 0 {
				px += fmt.Sprintf(", upstream %d", p.UpstreamStatus)
			}
			if p.ForwardedMS > 0 {
				px += fmt.Sprintf(", forwarded %.1fms", p.ForwardedMS)
			}
			if p.AnsweredMS > 0 {
				px += fmt.Sprintf(", answered %.1fms", p.AnsweredMS)
			}
		}
		to := fmt.Sprintf(" -> target %d", a.Target)
		if a.Target < 0 {
			to = "" // the load driver's balancer chose
		}
		fmt.Fprintf(w, "    %s #%d%s at %.1fms: %s%s\n", a.RequestID, a.Number, to, a.SentMS, ans, px)
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
