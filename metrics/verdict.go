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
}

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
	s := fmt.Sprintf("peak amplification %s× at %s in the interval from %s s", num(v.PeakAmplification), v.PeakService,
		strconv.FormatFloat(v.PeakAtS, 'f', -1, 64))
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
