package policies

import (
	"slices"
	"testing"
	"time"
)

// scriptedCall is one logical call of a time script: it starts at start, and
// its attempt k ends after lat[k−1] with out[k−1] (the last entry of either
// list stands for every later attempt).
type scriptedCall struct {
	start time.Duration
	out   []Outcome
	lat   []time.Duration
	opt   CallOptions
}

func (s scriptedCall) attempt(k int) (Outcome, time.Duration) {
	return s.out[min(k, len(s.out))-1], s.lat[min(k, len(s.lat))-1]
}

// driven is what drive observed of each call.
type driven struct {
	attempts []int // attempts sent (fast fails excluded)
	results  []CallResult
	outcomes []Outcome
	ended    []time.Duration
	// sendTimes lists, per call, when each attempt was sent.
	sendTimes [][]time.Duration
}

type driveEvent struct {
	at   time.Duration
	seq  int
	call int
	kind int // 0 start, 1 answer, 2 timeout, 3 wake
	k    int
	gen  int // wake generation, to drop superseded wake-ups
}

// drive runs calls over one edge as a discrete-event loop, the way the
// simulator drives a Call: answers at their latency, per-attempt timeouts,
// wake-ups at WakeAt. Simultaneous events run in the order they were
// scheduled. onFinish, if set, sees each call end.
func drive(t *testing.T, e *Edge, calls []scriptedCall) driven {
	t.Helper()
	n := len(calls)
	d := driven{attempts: make([]int, n), results: make([]CallResult, n), outcomes: make([]Outcome, n),
		ended: make([]time.Duration, n), sendTimes: make([][]time.Duration, n)}
	cs := make([]Call, n)
	wakeGen := make([]int, n)
	var q []driveEvent
	seq := 0
	push := func(ev driveEvent) {
		ev.seq = seq
		seq++
		q = append(q, ev)
	}
	for i, c := range calls {
		push(driveEvent{at: c.start, call: i})
	}
	apply := func(now time.Duration, i int, a Action) {
		switch a.Kind {
		case Send:
			d.attempts[i]++
			d.sendTimes[i] = append(d.sendTimes[i], now)
			o, lat := calls[i].attempt(a.Attempt)
			if a.Timeout > 0 && lat >= a.Timeout {
				push(driveEvent{at: now + a.Timeout, call: i, kind: 2, k: a.Attempt})
			} else {
				push(driveEvent{at: now + lat, call: i, kind: 1, k: a.Attempt})
				_ = o
			}
		case Finish:
			d.results[i], d.outcomes[i], d.ended[i] = a.Result, a.Outcome, now
		}
		if a.Kind != Finish && a.Wake {
			wakeGen[i]++
			push(driveEvent{at: a.WakeAt, call: i, kind: 3, gen: wakeGen[i]})
		}
	}
	for steps := 0; len(q) > 0; steps++ {
		if steps > 1_000_000 {
			t.Fatal("drive: runaway script")
		}
		j := 0
		for i := range q {
			if q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq) {
				j = i
			}
		}
		ev := q[j]
		q = slices.Delete(q, j, j+1)
		c := &cs[ev.call]
		switch ev.kind {
		case 0:
			apply(ev.at, ev.call, c.Start(ev.at, e, calls[ev.call].opt))
		case 1:
			o, _ := calls[ev.call].attempt(ev.k)
			apply(ev.at, ev.call, c.Answered(ev.at, ev.k, o, 0, false))
		case 2:
			apply(ev.at, ev.call, c.TimedOut(ev.at, ev.k))
		case 3:
			if ev.gen == wakeGen[ev.call] {
				apply(ev.at, ev.call, c.Wake(ev.at))
			}
		}
	}
	for i := range cs {
		if cs[i].Result() == Pending {
			t.Fatalf("drive: call %d never finished", i)
		}
	}
	return d
}

// same returns n copies of a call starting every gap from start.
func same(n int, start, gap time.Duration, c scriptedCall) []scriptedCall {
	s := make([]scriptedCall, n)
	for i := range s {
		s[i] = c
		s[i].start = start + time.Duration(i)*gap
	}
	return s
}
