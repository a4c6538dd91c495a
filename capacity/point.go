package capacity

import (
	"math"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/metrics"
)

// ServiceLoad is one service's load at a point, averaged over the
// steady-state replicas.
type ServiceLoad struct {
	Name          string  `json:"name"`
	Utilization   float64 `json:"utilization"`
	QueueMean     float64 `json:"queue_mean"`
	Amplification float64 `json:"amplification"`
}

// Replica is what one replica showed at a point.
type Replica struct {
	Replica int    `json:"replica"`
	Seed    uint64 `json:"seed"`
	// Status is the steady-state run's status; a diverged run fails.
	Status string `json:"status"`
	// Values are the SLO terms' metrics in the steady-state run.
	Values []float64 `json:"values"`
	// Recovery is the recovery run's verdict (nil without faults).
	Recovery *analysis.Verdict `json:"-"`
	// Recovered reports Recovery.Recovers (false when nil).
	Recovered bool `json:"recovered"`
	// FaultAmplification is the recovery run's amplification.
	FaultAmplification float64 `json:"fault_amplification,omitempty"`
	// RecoveryNote says why recovery could not be judged (a baseline too
	// noisy before the fault); the replica then counts as not recovered.
	RecoveryNote string `json:"recovery_note,omitempty"`

	// series is the recovery run as the detector read it, for plots.
	series *analysis.Series
}

// RecoverySeries returns the recovery run's goodput and amplification as
// the detector read them (nil without faults or for a diverged run).
func (r *Replica) RecoverySeries() *analysis.Series { return r.series }

// Point is the evaluation of one value of the parameter.
type Point struct {
	Value float64 `json:"value"`
	// Step is the search step that evaluated it (0 for the two ends).
	Step     int       `json:"step"`
	Replicas []Replica `json:"replicas"`
	// Terms judges each SLO term across the steady-state replicas.
	Terms []TermStat `json:"terms"`
	// Steady is the SLO's verdict in steady state: holds when every term
	// holds, fails when a term fails or a replica diverged.
	Steady Verdict `json:"steady"`
	// Recovery is the verdict after the faults: holds when every replica
	// recovered, fails when none or fewer than half did (always holds
	// without faults).
	Recovery Verdict `json:"recovery"`
	// Recovered counts the replicas that recovered.
	Recovered int `json:"recovered"`
	// Verdict combines both: holds when both hold, fails when either
	// fails.
	Verdict       Verdict       `json:"verdict"`
	Amplification float64       `json:"amplification"`
	Goodput       float64       `json:"goodput_rps"`
	Services      []ServiceLoad `json:"services"`
	// FaultServices are the same figures in the recovery runs (over the
	// whole run, fault included).
	FaultServices []ServiceLoad `json:"fault_services,omitempty"`
	// FaultAmplification is the mean amplification of the recovery runs.
	FaultAmplification float64 `json:"fault_amplification,omitempty"`
	// Failed, when not empty, says why a run of the point failed (the
	// first failing run, in run order): the point was not judged and
	// counts as failing the SLO, so the search goes on below it.
	Failed string `json:"failed,omitempty"`
}

// loadSum adds up services' figures over runs, keeping the services in
// the order first seen.
type loadSum struct {
	byName map[string]*ServiceLoad
	names  []string
}

// add adds each service's figures.
func (l *loadSum) add(svcs []metrics.ServiceSummary) {
	if l.byName == nil {
		l.byName = map[string]*ServiceLoad{}
	}
	for _, svc := range svcs {
		sl, ok := l.byName[svc.Name]
		if !ok {
			sl = &ServiceLoad{Name: svc.Name}
			l.byName[svc.Name] = sl
			l.names = append(l.names, svc.Name)
		}
		sl.Utilization += svc.Utilization
		sl.QueueMean += svc.QueueMean
		sl.Amplification += svc.Amplification
	}
}

// mean returns the summed figures divided by n (nil when none was added).
func (l *loadSum) mean(n float64) []ServiceLoad {
	var out []ServiceLoad
	for _, name := range l.names {
		sl := l.byName[name]
		out = append(out, ServiceLoad{Name: name, Utilization: sl.Utilization / n, QueueMean: sl.QueueMean / n, Amplification: sl.Amplification / n})
	}
	return out
}

// judge turns a point's runs into its verdicts. A point with a failed run
// is not judged on the others: it fails, with the first failure's reason.
func (e *evaluator) judge(step int, value float64, runs []runResult) Point {
	for _, r := range runs {
		if r.Error != "" {
			p := Point{Value: value, Step: step, Steady: Fails, Recovery: Holds, Verdict: Fails, Failed: r.Error}
			if e.faults {
				p.Recovery = Fails
			}
			return p
		}
	}
	p := Point{Value: value, Step: step, Steady: Holds, Recovery: Holds}
	byReplica := map[int]int{}
	var steady, faulty loadSum
	diverged := false
	for _, r := range runs {
		idx, ok := byReplica[r.spec.Replica]
		if !ok {
			idx = len(p.Replicas)
			p.Replicas = append(p.Replicas, Replica{Replica: r.spec.Replica, Seed: r.Seed})
			byReplica[r.spec.Replica] = idx
		}
		if r.spec.Faults {
			p.addRecoveryRun(&p.Replicas[idx], r.RunRecord)
			faulty.add(r.Summary.Services)
			continue
		}
		p.addSteadyRun(&p.Replicas[idx], &r.Summary, e.s.SLO)
		diverged = diverged || r.Summary.Status == metrics.StatusDiverged
		steady.add(r.Summary.Services)
	}
	n := float64(len(p.Replicas))
	p.Amplification /= n
	p.Goodput /= n
	p.Services = steady.mean(n)
	p.FaultServices = faulty.mean(n)
	p.Terms, p.Steady = judgeTerms(e.s, p.Replicas)
	if diverged {
		p.Steady = Fails
	}
	if e.faults {
		p.FaultAmplification /= n
		p.Recovery = recoveryVerdict(p.Recovered, len(p.Replicas))
	}
	switch {
	case p.Steady == Holds && p.Recovery == Holds:
		p.Verdict = Holds
	case p.Steady == Fails || p.Recovery == Fails:
		p.Verdict = Fails
	default:
		p.Verdict = Unsure
	}
	return p
}

// addSteadyRun records a steady-state run in its replica (the SLO terms'
// values) and adds its figures into the point's sums.
func (p *Point) addSteadyRun(rep *Replica, sum *metrics.Summary, slo SLO) {
	rep.Status = string(sum.Status)
	for _, t := range slo {
		v, err := t.Value(sum)
		if err != nil {
			v = math.NaN() // Check rejected absent services; a run may still drop one
		}
		rep.Values = append(rep.Values, v)
	}
	p.Amplification += sum.Amplification
	p.Goodput += sum.GoodputRPS
}

// addRecoveryRun records a recovery run in its replica and adds it into
// the point's count of recoveries and sum of amplification.
func (p *Point) addRecoveryRun(rep *Replica, r RunRecord) {
	rep.Recovery = r.Verdict
	rep.Recovered = r.Verdict != nil && r.Verdict.Recovers
	rep.FaultAmplification = r.Summary.Amplification
	rep.RecoveryNote = r.Note
	rep.series = r.Series
	if rep.Recovered {
		p.Recovered++
	}
	p.FaultAmplification += r.Summary.Amplification
}

// judgeTerms judges each SLO term across the replicas' steady-state
// values, each at the search's term level, and returns the steady-state
// verdict: fails when a term fails, unsure when a term is unsure.
func judgeTerms(s Search, reps []Replica) ([]TermStat, Verdict) {
	var terms []TermStat
	steady := Holds
	level := s.TermLevel()
	for i, t := range s.SLO {
		vals := make([]float64, len(reps))
		for j, rep := range reps {
			vals[j] = rep.Values[i]
		}
		ts := judgeTerm(t, vals, level)
		terms = append(terms, ts)
		switch {
		case ts.Verdict == Fails:
			steady = Fails
		case ts.Verdict == Unsure && steady == Holds:
			steady = Unsure
		}
	}
	return terms, steady
}

// recoveryVerdict is the verdict after the faults when recovered of n
// replicas recovered: holds when all did, fails when fewer than half did.
func recoveryVerdict(recovered, n int) Verdict {
	switch {
	case recovered == n:
		return Holds
	case 2*recovered < n:
		return Fails
	}
	return Unsure
}
