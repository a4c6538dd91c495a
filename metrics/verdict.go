package metrics

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Verdict is a run's outcome in words, written at the top of the text
// summary and of report.html so that a reader sees the answer before the
// numbers: did the system recover from its trigger, and when; how much
// work did retries add at the worst moment and where; how many requests
// did users lose. It is computed from the result and its scenario
// (analysis.Assess) and is absent when nobody computed it.
type Verdict struct {
	// Recovery is "recovered", "recovered late" (after the bound),
	// "not recovered", "no trigger" (nothing to recover from) or
	// "not judged" (Note says why).
	Recovery string `json:"recovery"`
	// RecoveredAfterS is how long after the trigger's end goodput and
	// amplification were back at their baseline (recovered, recovered late).
	RecoveredAfterS *float64 `json:"recovered_after_s,omitempty"`
	// BoundS is the recovery bound the run was judged against.
	BoundS float64 `json:"bound_s,omitempty"`
	// Trigger says what the system had to recover from.
	Trigger string `json:"trigger,omitempty"`
	// Note qualifies Recovery: goodput at the end of a run that did not
	// recover, or why recovery could not be judged.
	Note string `json:"note,omitempty"`
	// PeakAmplification is the largest amplification of one interval at
	// one service: attempts that arrived at PeakService in the interval
	// starting at PeakAtS, divided by the logical requests offered in it.
	PeakAmplification float64 `json:"peak_amplification"`
	PeakService       string  `json:"peak_service,omitempty"`
	PeakAtS           float64 `json:"peak_at_s"`
	// Windows is the amplification during each fault window, beside the
	// whole run's (Summary.Amplification), which the drain after the
	// arrivals and the calm before the fault dilute.
	Windows []WindowAmplification `json:"fault_windows,omitempty"`
	// FailedShare and UnknownShare are the shares of offered logical
	// requests that failed or ended unknown.
	FailedShare  float64 `json:"failed_share"`
	UnknownShare float64 `json:"unknown_share"`

	// Outcome is the verdict in the fewest words, for a comparison's
	// table: one of the Outcome constants. It is Recovery, except that a
	// diverged run is OutcomeDiverged and an interrupted one that did not
	// recover in what it simulated OutcomeInterrupted (or OutcomeNotRun).
	Outcome string `json:"outcome,omitempty"`
	// Reason says in one line why the run did not recover, where the
	// result shows it (e.g. a callee whose queue wait exceeds its
	// caller's timeout); empty when it recovered or nothing explains it.
	Reason string `json:"reason,omitempty"`
	// WholeRunAmplification is Summary.Amplification, repeated beside the
	// peak so the two are read together: the busiest service's attempts
	// over the whole run per request offered in the whole run.
	WholeRunAmplification float64 `json:"whole_run_amplification"`
	// PeakBasis says what PeakAmplification divides by (PeakBasis when a
	// peak was measured): the requests offered in the peak's interval
	// only, so retries of requests offered earlier can lift it above the
	// product of the hops' attempts.
	PeakBasis string `json:"peak_amplification_basis,omitempty"`
}

// Outcomes of a Verdict, beside the Recovery values they extend.
const (
	OutcomeRecovered     = "recovered"
	OutcomeRecoveredLate = "recovered late"
	OutcomeNotRecovered  = "not recovered"
	OutcomeDiverged      = "diverged"
	OutcomeInterrupted   = "interrupted"
	OutcomeNotRun        = "not run"
	OutcomeNoTrigger     = "no trigger"
	OutcomeNotJudged     = "not judged"
)

// PeakBasis is what a Verdict's peak amplification is measured against.
const PeakBasis = "attempts in that interval per request offered in it"

// WindowAmplification is the amplification during one fault window: the
// attempts that arrived at the busiest service in the intervals inside the
// window, divided by the logical requests offered in them.
type WindowAmplification struct {
	Label         string  `json:"label"`
	AtS           float64 `json:"at_s"`
	ForS          float64 `json:"for_s"`
	Service       string  `json:"service"`
	Amplification float64 `json:"amplification"`
}

// OutcomeText is a run's verdict in the fewest words, for a table: its
// Verdict's Outcome with the time that goes with it ("recovered in 3 s",
// "diverged at 12.5 s", "interrupted at 20 s"), "not run" for an
// interrupted run that offered nothing after warm-up, and "-" for a run
// nobody assessed.
func OutcomeText(s *Summary) string {
	if s.Status == StatusInterrupted && s.Requests.Offered == 0 {
		return OutcomeNotRun
	}
	v := s.Verdict
	if v == nil {
		return "-"
	}
	at := strconv.FormatFloat(s.SimTimeS, 'f', 1, 64) + " s"
	switch v.Outcome {
	case OutcomeRecovered:
		return "recovered in " + secs(v.RecoveredAfterS)
	case OutcomeRecoveredLate:
		return "recovered late, in " + secs(v.RecoveredAfterS)
	case OutcomeDiverged:
		if s.Diverged != nil {
			at = strconv.FormatFloat(s.Diverged.AtS, 'f', 1, 64) + " s"
		}
		return "diverged at " + at
	case OutcomeInterrupted:
		return "interrupted at " + at
	case "":
		return v.Recovery
	}
	return v.Outcome
}

// Headline returns the verdict's first line: the recovery, in words, after
// "FAILED" when no request succeeded.
func (v *Verdict) Headline() string {
	var b strings.Builder
	if v.FailedShare+v.UnknownShare >= 1 {
		b.WriteString("FAILED: no request succeeded; ")
	}
	switch v.Recovery {
	case "recovered":
		fmt.Fprintf(&b, "recovered %s after the trigger ended", secs(v.RecoveredAfterS))
	case "recovered late":
		fmt.Fprintf(&b, "recovered %s after the trigger ended (beyond the %s bound)", secs(v.RecoveredAfterS), secs(&v.BoundS))
	case "not recovered":
		b.WriteString("NOT RECOVERED")
	case "no trigger":
		b.WriteString("no fault or load spike to recover from")
	default:
		b.WriteString("recovery not judged")
	}
	if v.Note != "" {
		fmt.Fprintf(&b, ": %s", v.Note)
	}
	if v.Trigger != "" {
		fmt.Fprintf(&b, " (trigger: %s)", v.Trigger)
	}
	return b.String()
}

// Bad reports a verdict a reader must not miss: no recovery, or no
// request succeeded.
func (v *Verdict) Bad() bool {
	return v.Recovery == "not recovered" || v.FailedShare+v.UnknownShare >= 1
}

// Amplification returns the verdict's line on amplification: the peak
// interval and each fault window.
func (v *Verdict) Amplification() string {
	if v.PeakService == "" {
		return "no amplification measured per interval"
	}
	whole := ""
	if v.WholeRunAmplification > 0 {
		whole = "; whole run " + num(v.WholeRunAmplification) + "×"
	}
	s := fmt.Sprintf("peak amplification %s× at %s in the interval from %s s (%s%s)", num(v.PeakAmplification), v.PeakService,
		strconv.FormatFloat(v.PeakAtS, 'f', -1, 64), PeakBasis, whole)
	for _, w := range v.Windows {
		s += fmt.Sprintf("; %s× at %s during the fault (%s)", num(w.Amplification), w.Service, w.Label)
	}
	return s
}

// Losses returns the verdict's line on the requests users lost.
func (v *Verdict) Losses() string {
	return fmt.Sprintf("%s of requests failed, %s unknown", share(v.FailedShare), share(v.UnknownShare))
}

// writeVerdict prints the verdict's lines under a "verdict" label.
func writeVerdict(w io.Writer, v *Verdict) {
	fmt.Fprintf(w, "verdict    %s\n", v.Headline())
	if v.Reason != "" {
		fmt.Fprintf(w, "           why: %s\n", v.Reason)
	}
	fmt.Fprintf(w, "           %s\n", v.Amplification())
	fmt.Fprintf(w, "           %s\n", v.Losses())
}

func secs(s *float64) string {
	if s == nil {
		return "-"
	}
	return strconv.FormatFloat(*s, 'f', -1, 64) + " s"
}

func share(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }
