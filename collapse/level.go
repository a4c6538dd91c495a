package collapse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/sim"
)

// Kind is the quantity a level measures.
type Kind int

// The quantities a level expression can name.
const (
	// System is the attempts waiting or holding a worker at a service.
	System Kind = iota
	// Queue is the attempts waiting for a worker at a service.
	Queue
	// Inflight is the attempts arrived at any service and not yet answered.
	Inflight
	// AttemptsRate is the attempts arriving at a service per second, over
	// the trailing RateWindow.
	AttemptsRate
)

// RateWindow is the trailing window over which attempts_rate counts.
const RateWindow = time.Second

var kindNames = map[string]Kind{"system": System, "queue": Queue, "inflight": Inflight, "attempts_rate": AttemptsRate}

// String returns the name the expression language gives k.
func (k Kind) String() string {
	for n, v := range kindNames {
		if v == k {
			return n
		}
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Level is a parsed level expression such as system(db)>=500: the event
// "the quantity reached the threshold", whose probability collapse
// estimates.
type Level struct {
	Kind      Kind
	Service   string // empty for Inflight
	Threshold float64
}

// String returns the expression as ParseLevel reads it.
func (l Level) String() string {
	t := strconv.FormatFloat(l.Threshold, 'g', -1, 64)
	if l.Kind == Inflight {
		return "inflight>=" + t
	}
	return fmt.Sprintf("%s(%s)>=%s", l.Kind, l.Service, t)
}

// ParseLevel reads a level expression: QUANTITY>=NUMBER, where QUANTITY is
// system(S), queue(S), attempts_rate(S) or inflight. Spaces are ignored.
func ParseLevel(expr string) (Level, error) {
	s := strings.Join(strings.Fields(expr), "")
	lhs, rhs, ok := strings.Cut(s, ">=")
	if !ok {
		return Level{}, fmt.Errorf("level %q: want QUANTITY>=NUMBER, e.g. system(db)>=500", expr)
	}
	var l Level
	name, arg := lhs, ""
	if i := strings.IndexByte(lhs, '('); i >= 0 {
		if !strings.HasSuffix(lhs, ")") {
			return Level{}, fmt.Errorf("level %q: missing ) after the service name", expr)
		}
		name, arg = lhs[:i], lhs[i+1:len(lhs)-1]
	}
	k, ok := kindNames[name]
	if !ok {
		return Level{}, fmt.Errorf("level %q: unknown quantity %q (want system(S), queue(S), attempts_rate(S) or inflight)", expr, name)
	}
	l.Kind = k
	switch {
	case k == Inflight && arg != "":
		return Level{}, fmt.Errorf("level %q: inflight takes no service (it counts every service)", expr)
	case k == Inflight && strings.Contains(lhs, "("):
		return Level{}, fmt.Errorf("level %q: write inflight without parentheses", expr)
	case k != Inflight && arg == "":
		return Level{}, fmt.Errorf("level %q: %s needs a service, e.g. %s(db)", expr, name, name)
	}
	l.Service = arg
	v, err := strconv.ParseFloat(rhs, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return Level{}, fmt.Errorf("level %q: threshold %q is not a number", expr, rhs)
	}
	if v <= 0 {
		return Level{}, fmt.Errorf("level %q: threshold %g must be positive (the start is empty)", expr, v)
	}
	l.Threshold = v
	return l, nil
}

// gauge reads a level's quantity from a trajectory. The attempts_rate
// window is part of what it reads, so it travels with each snapshot.
type gauge struct {
	kind Kind
	svc  int
	win  []rateSample // attempts_rate: samples in the trailing window
}

type rateSample struct {
	at time.Duration
	n  int64
}

// newGauge binds l to the services of t's scenario.
func newGauge(l Level, t *sim.Trajectory) (gauge, error) {
	g := gauge{kind: l.Kind, svc: -1}
	if l.Kind != Inflight {
		if g.svc = t.Service(l.Service); g.svc < 0 {
			return g, fmt.Errorf("level %s: the scenario has no service %q", l, l.Service)
		}
	}
	return g, nil
}

// read returns the quantity now; call it after every step.
func (g *gauge) read(t *sim.Trajectory) float64 {
	switch g.kind {
	case System:
		return float64(t.System(g.svc))
	case Queue:
		return float64(t.Queue(g.svc))
	case Inflight:
		return float64(t.Inflight())
	}
	now, n := t.Now(), t.Attempts(g.svc)
	g.win = append(g.win, rateSample{now, n})
	i := 0
	for i < len(g.win)-1 && g.win[i+1].at <= now-RateWindow {
		i++
	}
	if i > 0 {
		g.win = append(g.win[:0], g.win[i:]...)
	}
	// Attempts counted since the window's start (the last sample at or
	// before it), over the window's length.
	return float64(n-g.win[0].n) / RateWindow.Seconds()
}

// clone returns a copy that shares nothing with g.
func (g gauge) clone() gauge {
	g.win = append([]rateSample(nil), g.win...)
	return g
}
