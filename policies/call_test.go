package policies

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// step is one line of a time script: at instant at, op happens to the call,
// and the call must answer want.
type step struct {
	at   time.Duration
	op   string // start, answer, timeout, waitout, wake, abort
	k    int
	o    Outcome
	ra   time.Duration
	dr   bool
	want Action
}

func runScript(t *testing.T, e *Edge, opt CallOptions, script []step) *Call {
	t.Helper()
	var c Call
	for i, s := range script {
		var got Action
		switch s.op {
		case "start":
			got = c.Start(s.at, e, opt)
		case "answer":
			got = c.Answered(s.at, s.k, s.o, s.ra, s.dr)
		case "timeout":
			got = c.TimedOut(s.at, s.k)
		case "waitout":
			got = c.WaitTimedOut(s.at, s.k)
		case "wake":
			got = c.Wake(s.at)
		case "abort":
			got = c.Abort(s.at)
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		require.Equal(t, s.want, got, "step %d (%s at %v)", i, s.op, s.at)
	}
	return &c
}

func newTestEdge(t *testing.T, c EdgeConfig) *Edge {
	t.Helper()
	e, err := NewEdge(c, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	return e
}

func send(k int, timeout time.Duration) Action {
	return Action{Kind: Send, Attempt: k, Timeout: timeout}
}
func waitUntil(at time.Duration) Action     { return Action{Kind: Wait, Wake: true, WakeAt: at} }
func finish(o Outcome, r CallResult) Action { return Action{Kind: Finish, Outcome: o, Result: r} }

var waitNothing = Action{Kind: Wait}

func TestCallScripts(t *testing.T) {
	expo := RetryConfig{MaxAttempts: 3, Backoff: BackoffConfig{Initial: 10 * ms, Multiplier: 2}}
	tests := []struct {
		name   string
		cfg    EdgeConfig
		opt    CallOptions
		script []step
		stats  EdgeStats
	}{
		{
			name: "retries with exponential backoff until attempts run out",
			cfg:  EdgeConfig{Retry: expo},
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 5 * ms, op: "answer", k: 1, o: Unavailable, want: waitUntil(15 * ms)},
				{at: 15 * ms, op: "wake", want: send(2, 0)},
				{at: 20 * ms, op: "answer", k: 2, o: Unavailable, want: waitUntil(40 * ms)},
				{at: 30 * ms, op: "wake", want: waitUntil(40 * ms)}, // early wake is ignored
				{at: 40 * ms, op: "wake", want: send(3, 0)},
				{at: 41 * ms, op: "answer", k: 3, o: Unavailable, want: finish(Unavailable, Failed)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 3, Retries: 2, Failed: 1},
		},
		{
			name: "success ends the call; late answers are ignored",
			cfg:  EdgeConfig{Retry: expo, Timeout: 100 * ms},
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 100*ms)},
				{at: 100 * ms, op: "timeout", k: 1, want: waitUntil(110 * ms)},
				{at: 110 * ms, op: "wake", want: send(2, 100*ms)},
				{at: 120 * ms, op: "answer", k: 2, o: OK, want: finish(OK, Succeeded)},
				{at: 130 * ms, op: "answer", k: 1, o: OK, want: waitNothing},
			},
			stats: EdgeStats{Calls: 1, Attempts: 2, Retries: 1, Succeeded: 1},
		},
		{
			name: "a timed-out attempt makes a later failure unknown",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 2}, Timeout: 100 * ms},
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 100*ms)},
				{at: 100 * ms, op: "timeout", k: 1, want: send(2, 100*ms)}, // zero backoff: at once
				{at: 150 * ms, op: "answer", k: 2, o: Error, want: finish(Error, Unknown)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 2, Retries: 1, Unknown: 1},
		},
		{
			name: "errors are not retried by default",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 5}},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: Error, want: finish(Error, Failed)},
			},
		},
		{
			name: "retry classes are configurable",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 2, On: []RetryClass{"error"}}},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: Unavailable, want: finish(Unavailable, Failed)},
			},
		},
		{
			name: "timeouts are bounded by the deadline and no retry is scheduled past it",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 5, Backoff: BackoffConfig{Initial: 100 * ms, Multiplier: 1}}, Timeout: 100 * ms},
			opt:  CallOptions{Counted: true, HasDeadline: true, Deadline: 250 * ms},
			script: []step{
				{at: 0, op: "start", want: send(1, 100*ms)},
				{at: 100 * ms, op: "timeout", k: 1, want: waitUntil(200 * ms)},
				{at: 200 * ms, op: "wake", want: send(2, 50*ms)},
				{at: 250 * ms, op: "timeout", k: 2, want: finish(Timeout, Unknown)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 2, Retries: 1, RetriesDeadline: 1, Unknown: 1},
		},
		{
			name: "a call started after its deadline sends nothing",
			cfg:  EdgeConfig{},
			opt:  CallOptions{Counted: true, HasDeadline: true, Deadline: 10 * ms},
			script: []step{
				{at: 10 * ms, op: "start", want: finish(Timeout, Failed)},
			},
			stats: EdgeStats{Calls: 1, Failed: 1},
		},
		{
			name: "honoured pushback waits, is capped and resets the backoff count",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 5, Backoff: BackoffConfig{Initial: 10 * ms, Multiplier: 2}}, HonorPushback: true, MaxPushback: time.Second},
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 0, op: "answer", k: 1, o: Unavailable, want: waitUntil(10 * ms)},
				{at: 10 * ms, op: "wake", want: send(2, 0)},
				{at: 10 * ms, op: "answer", k: 2, o: Unavailable, ra: 5 * time.Second, want: waitUntil(1010 * ms)},
				{at: 1010 * ms, op: "wake", want: send(3, 0)},
				// backoff restarts at retry 1 (10ms), not retry 3 (40ms)
				{at: 1010 * ms, op: "answer", k: 3, o: Unavailable, want: waitUntil(1020 * ms)},
				{at: 1020 * ms, op: "wake", want: send(4, 0)},
				{at: 1020 * ms, op: "answer", k: 4, o: Unavailable, dr: true, want: finish(Unavailable, Failed)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 4, Retries: 3, PushbackWaits: 1, Failed: 1},
		},
		{
			name: "pushback is ignored unless honoured",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 2, Backoff: BackoffConfig{Initial: 10 * ms}}},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 0, op: "answer", k: 1, o: Unavailable, ra: time.Second, dr: true, want: waitUntil(10 * ms)},
			},
		},
		{
			name: "in-progress is retried after its retry-after",
			cfg:  EdgeConfig{Retry: RetryConfig{MaxAttempts: 2}},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 0, op: "answer", k: 1, o: InProgress, ra: 100 * ms, want: waitUntil(100 * ms)},
				{at: 100 * ms, op: "wake", want: send(2, 0)},
				{at: 101 * ms, op: "answer", k: 2, o: Conflict, want: finish(Conflict, Failed)},
			},
		},
		{
			name: "abort during backoff after definite failures is a failure",
			cfg:  EdgeConfig{Retry: expo},
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: Unavailable, want: waitUntil(11 * ms)},
				{at: 5 * ms, op: "abort", want: finish(Unavailable, Failed)},
				{at: 11 * ms, op: "wake", want: waitNothing},
			},
			stats: EdgeStats{Calls: 1, Attempts: 1, Failed: 1},
		},
		{
			name: "abort with an attempt in flight is unknown",
			cfg:  EdgeConfig{Retry: expo},
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 5 * ms, op: "abort", want: finish(Timeout, Unknown)},
				{at: 6 * ms, op: "answer", k: 1, o: OK, want: waitNothing},
			},
			stats: EdgeStats{Calls: 1, Attempts: 1, Unknown: 1},
		},
		{
			name: "uncounted calls leave the stats alone",
			cfg:  EdgeConfig{Retry: expo},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 1 * ms, op: "answer", k: 1, o: OK, want: finish(OK, Succeeded)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEdge(t, tt.cfg)
			runScript(t, e, tt.opt, tt.script)
			require.Equal(t, tt.stats, e.Stats)
		})
	}
}

// fakeBreaker is open between opens and closes, and records what it saw.
type fakeBreaker struct {
	open    bool
	dones   []Outcome
	cancels int
}

func (b *fakeBreaker) Allow(time.Duration) (uint64, bool) { return 7, !b.open }
func (b *fakeBreaker) Done(_ time.Duration, ticket uint64, o Outcome, _ time.Duration) {
	if ticket != 7 {
		panic("wrong ticket")
	}
	b.dones = append(b.dones, o)
}
func (b *fakeBreaker) State(time.Duration) BreakerState {
	if b.open {
		return Open
	}
	return Closed
}
func (b *fakeBreaker) Opens() int64 { return 0 }
func (b *fakeBreaker) Cancel(_ time.Duration, ticket uint64) {
	if ticket != 7 {
		panic("wrong ticket")
	}
	b.cancels++
}

// fakeBudget admits retries while allow > 0 and logs every call.
type fakeBudget struct {
	allow int
	log   []string
}

func (b *fakeBudget) OnRequest(time.Duration) { b.log = append(b.log, "request") }
func (b *fakeBudget) TryRetry(_ time.Duration, cause Outcome) bool {
	b.log = append(b.log, "try:"+cause.String())
	if b.allow > 0 {
		b.allow--
		return true
	}
	return false
}
func (b *fakeBudget) OnResult(_ time.Duration, r Report) {
	if r.Cancelled {
		b.log = append(b.log, fmt.Sprintf("cancelled:%v:%v", r.Outcome, r.Retry))
		return
	}
	b.log = append(b.log, fmt.Sprintf("result:%v:%v", r.Outcome, r.Retry))
}
func (b *fakeBudget) OnRequestDone(time.Duration) { b.log = append(b.log, "done") }
func (b *fakeBudget) Level(time.Duration) float64 { return float64(b.allow) }

func TestCallBreakerFastFails(t *testing.T) {
	t.Run("not retried unless listed", func(t *testing.T) {
		e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{MaxAttempts: 3}})
		b := &fakeBreaker{open: true}
		e.Breaker = b
		runScript(t, e, CallOptions{Counted: true}, []step{
			{at: 0, op: "start", want: finish(BreakerOpen, Failed)},
		})
		require.Equal(t, EdgeStats{Calls: 1, BreakerFastFail: 1, Failed: 1}, e.Stats)
		require.Empty(t, b.dones, "a fast fail is not a result the breaker counts")
	})
	t.Run("retried when listed, and results reach the breaker", func(t *testing.T) {
		e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{MaxAttempts: 3, On: []RetryClass{"breaker_open", "unavailable"}, Backoff: BackoffConfig{Initial: 10 * ms, Multiplier: 1}}})
		b := &fakeBreaker{}
		e.Breaker = b
		c := runScript(t, e, CallOptions{Counted: true}, []step{
			{at: 0, op: "start", want: send(1, 0)},
			{at: 1 * ms, op: "answer", k: 1, o: Unavailable, want: waitUntil(11 * ms)},
		})
		b.open = true
		require.Equal(t, waitUntil(21*ms), c.Wake(11*ms)) // attempt 2 fails fast, retried in 10ms
		b.open = false
		require.Equal(t, send(3, 0), c.Wake(21*ms))
		require.Equal(t, finish(OK, Succeeded), c.Answered(22*ms, 3, OK, 0, false))
		require.Equal(t, []Outcome{Unavailable, OK}, b.dones)
		require.Equal(t, EdgeStats{Calls: 1, Attempts: 2, Retries: 1, BreakerFastFail: 1, Succeeded: 1}, e.Stats)
	})
}

func TestCallBudget(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{MaxAttempts: 3}})
	b := &fakeBudget{allow: 1}
	e.Budget = b
	runScript(t, e, CallOptions{Counted: true}, []step{
		{at: 0, op: "start", want: send(1, 0)},
		{at: 1 * ms, op: "answer", k: 1, o: Timeout, want: send(2, 0)},
		{at: 2 * ms, op: "answer", k: 2, o: Unavailable, want: finish(Unavailable, Unknown)},
	})
	require.Equal(t, []string{"request", "result:timeout:false", "try:timeout", "result:unavailable:true", "try:unavailable", "done"}, b.log)
	require.Equal(t, EdgeStats{Calls: 1, Attempts: 2, Retries: 1, RetriesDenied: 1, Unknown: 1}, e.Stats)
}

func TestCallMaxAttemptsBoundsAttempts(t *testing.T) {
	for k := 1; k <= 6; k++ {
		e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{MaxAttempts: k, On: []RetryClass{"error"}}})
		var c Call
		a := c.Start(0, e, CallOptions{Counted: true})
		sent := 0
		for a.Kind == Send {
			sent++
			a = c.Answered(0, a.Attempt, Error, 0, false)
		}
		require.Equal(t, finish(Error, Failed), a)
		require.Equal(t, k, sent)
		require.EqualValues(t, k, e.Stats.Attempts)
	}
}

func TestCallDoesNotAllocate(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{Timeout: 100 * ms, Retry: RetryConfig{MaxAttempts: 3, Backoff: BackoffConfig{Initial: ms, Jitter: "full"}}})
	var c Call
	now := time.Duration(0)
	allocs := testing.AllocsPerRun(1000, func() {
		a := c.Start(now, e, CallOptions{Counted: true, HasDeadline: true, Deadline: now + time.Second})
		a = c.TimedOut(now+100*ms, a.Attempt)
		a = c.Wake(a.WakeAt)
		c.Answered(a.WakeAt+ms, a.Attempt, OK, 0, false)
		now += time.Second
	})
	require.Zero(t, allocs)
}

func TestNewEdgeRejectsBadConfig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []EdgeConfig{
		{Timeout: -1},
		{Retry: RetryConfig{MaxAttempts: -2}},
		{Retry: RetryConfig{On: []RetryClass{"bogus"}}},
		{Retry: RetryConfig{Backoff: BackoffConfig{Jitter: "wild"}}},
		{MaxPushback: -1},
	} {
		_, err := NewEdge(c, r)
		require.Error(t, err, "%+v", c)
	}
	_, err := NewEdge(EdgeConfig{}, nil)
	require.Error(t, err)
}

func ExampleCall() {
	e, _ := NewEdge(EdgeConfig{
		Timeout: 100 * ms,
		Retry:   RetryConfig{MaxAttempts: 3, Backoff: BackoffConfig{Initial: 10 * ms}},
	}, rand.New(rand.NewPCG(1, 1)))
	var c Call
	a := c.Start(0, e, CallOptions{})
	fmt.Println(a.Kind, a.Attempt, a.Timeout)
	a = c.TimedOut(100*ms, 1) // no answer in time
	fmt.Println(a.Kind, a.WakeAt)
	a = c.Wake(a.WakeAt) // backoff over: retry
	fmt.Println(a.Kind, a.Attempt)
	a = c.Answered(150*ms, 2, OK, 0, false)
	fmt.Println(a.Kind, a.Outcome, a.Result)
	// Output:
	// send 1 100ms
	// wait 110ms
	// send 2
	// finish ok succeeded
}

func TestCallHedging(t *testing.T) {
	hedge := &HedgeConfig{Delay: 20 * ms, MaxAttempts: 3, CancelOthers: true}
	hedgeSend := func(k int) Action { return Action{Kind: Send, Attempt: k, Hedge: true} }
	sendWake := func(k int, hedge bool, at time.Duration) Action {
		return Action{Kind: Send, Attempt: k, Hedge: hedge, Wake: true, WakeAt: at}
	}
	tests := []struct {
		name   string
		opt    CallOptions
		budget *fakeBudget
		script []step
		stats  EdgeStats
	}{
		{
			name: "hedges go out every delay and the first OK wins",
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: sendWake(1, false, 20*ms)},
				{at: 20 * ms, op: "wake", want: sendWake(2, true, 40*ms)},
				{at: 40 * ms, op: "wake", want: hedgeSend(3)},
				{at: 45 * ms, op: "answer", k: 2, o: OK, want: Action{Kind: Finish, Outcome: OK, Result: Succeeded, CancelOthers: true}},
			},
			stats: EdgeStats{Calls: 1, Attempts: 3, HedgesSent: 2, HedgesWon: 1, Succeeded: 1},
		},
		{
			name: "an early answer stops hedging",
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: sendWake(1, false, 20*ms)},
				{at: 10 * ms, op: "answer", k: 1, o: OK, want: Action{Kind: Finish, Outcome: OK, Result: Succeeded, CancelOthers: true}},
				{at: 20 * ms, op: "wake", want: waitNothing},
			},
			stats: EdgeStats{Calls: 1, Attempts: 1, Succeeded: 1},
		},
		{
			name: "a retryable failure sends the next attempt at once",
			opt:  CallOptions{Counted: true},
			script: []step{
				{at: 0, op: "start", want: sendWake(1, false, 20*ms)},
				{at: 5 * ms, op: "answer", k: 1, o: Unavailable, want: sendWake(2, false, 25*ms)}, // a retry: nothing else in flight
				{at: 25 * ms, op: "wake", want: hedgeSend(3)},
				{at: 30 * ms, op: "answer", k: 3, o: Unavailable, want: waitNothing},
				{at: 31 * ms, op: "answer", k: 2, o: Unavailable, want: finish(Unavailable, Failed)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 3, Retries: 1, HedgesSent: 1, Failed: 1},
		},
		{
			name: "writes are not hedged",
			opt:  CallOptions{Counted: true, Write: true},
			script: []step{
				{at: 0, op: "start", want: send(1, 0)},
				{at: 50 * ms, op: "answer", k: 1, o: OK, want: finish(OK, Succeeded)},
			},
			stats: EdgeStats{Calls: 1, Attempts: 1, Succeeded: 1},
		},
		{
			name:   "hedges need the budget",
			opt:    CallOptions{Counted: true},
			budget: &fakeBudget{allow: 0},
			script: []step{
				{at: 0, op: "start", want: sendWake(1, false, 20*ms)},
				{at: 20 * ms, op: "wake", want: waitNothing},
				{at: 50 * ms, op: "answer", k: 1, o: OK, want: Action{Kind: Finish, Outcome: OK, Result: Succeeded, CancelOthers: true}},
			},
			stats: EdgeStats{Calls: 1, Attempts: 1, RetriesDenied: 1, Succeeded: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEdge(t, EdgeConfig{Hedge: hedge})
			if tt.budget != nil {
				e.Budget = tt.budget
			}
			runScript(t, e, tt.opt, tt.script)
			require.Equal(t, tt.stats, e.Stats)
		})
	}
	t.Run("forced hedging covers writes", func(t *testing.T) {
		h := *hedge
		h.Force = true
		e := newTestEdge(t, EdgeConfig{Hedge: &h})
		runScript(t, e, CallOptions{Write: true}, []step{
			{at: 0, op: "start", want: sendWake(1, false, 20*ms)},
		})
	})
}

func TestCallReportsEveryAttemptOnce(t *testing.T) {
	t.Run("abandoned attempts reach breaker and budget as timeouts", func(t *testing.T) {
		e := newTestEdge(t, EdgeConfig{Hedge: &HedgeConfig{Delay: 10 * ms, MaxAttempts: 2}})
		br, bu := &fakeBreaker{}, &fakeBudget{allow: 5}
		e.Breaker, e.Budget = br, bu
		var c Call
		c.Start(0, e, CallOptions{})
		c.Wake(10 * ms) // hedge
		a := c.Abort(15 * ms)
		require.Equal(t, finish(Timeout, Unknown), a)
		require.Equal(t, []Outcome{Timeout, Timeout}, br.dones)
		require.Equal(t, []string{"request", "try:ok", "result:timeout:false", "result:timeout:true", "done"}, bu.log)
	})
	t.Run("a breaker fast fail reaches the budget", func(t *testing.T) {
		e := newTestEdge(t, EdgeConfig{})
		br, bu := &fakeBreaker{open: true}, &fakeBudget{}
		e.Breaker, e.Budget = br, bu
		var c Call
		require.Equal(t, finish(BreakerOpen, Failed), c.Start(0, e, CallOptions{}))
		require.Equal(t, []string{"request", "result:breaker_open:false", "done"}, bu.log)
		require.Empty(t, br.dones)
	})
	t.Run("a hedge winner leaves the loser cancelled", func(t *testing.T) {
		e := newTestEdge(t, EdgeConfig{Hedge: &HedgeConfig{Delay: 10 * ms, MaxAttempts: 2}})
		br := &fakeBreaker{}
		e.Breaker = br
		var c Call
		c.Start(0, e, CallOptions{})
		c.Wake(10 * ms)
		require.Equal(t, finish(OK, Succeeded), c.Answered(12*ms, 2, OK, 0, false))
		require.Equal(t, []Outcome{OK}, br.dones)
		require.Equal(t, 1, br.cancels, "the losing first attempt is cancelled, not failed")
	})
}

func TestCallThrottle(t *testing.T) {
	// K=1: after requests with no accepts the rejection probability rises.
	e := newTestEdge(t, EdgeConfig{Throttle: &ThrottleConfig{K: 1, Window: time.Minute}, Retry: RetryConfig{MaxAttempts: 1}})
	var c Call
	throttled := 0
	for i := range 200 {
		now := time.Duration(i) * ms
		a := c.Start(now, e, CallOptions{Counted: true})
		if a.Kind == Finish {
			require.Equal(t, Throttled, a.Outcome)
			throttled++
			continue
		}
		c.Answered(now, a.Attempt, Unavailable, 0, false) // the backend rejects everything
	}
	require.Greater(t, throttled, 150, "a throttle facing only rejections sheds most calls")
	require.EqualValues(t, throttled, e.Stats.Throttled)
	require.EqualValues(t, 200-throttled, e.Stats.Attempts)
}

// FuzzCall drives a Call with arbitrary answers, timeouts, wake-ups and
// aborts, and checks its invariants: it never sends more attempts than its
// limit, never sends an attempt past the deadline, finishes exactly once,
// and its Finish result agrees with what it was told.
func FuzzCall(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, uint8(3), uint8(0), true)
	f.Add([]byte{9, 9, 9, 1, 1, 1, 2, 2}, uint8(5), uint8(3), false)
	f.Fuzz(func(t *testing.T, ops []byte, maxAttempts, hedge uint8, honor bool) {
		cfg := EdgeConfig{
			Timeout:       20 * ms,
			Retry:         RetryConfig{MaxAttempts: int(maxAttempts%6) + 1, On: []RetryClass{"unavailable", "timeout"}, Backoff: BackoffConfig{Initial: ms, Jitter: "full"}},
			HonorPushback: honor,
		}
		if hedge%4 >= 2 {
			cfg.Hedge = &HedgeConfig{Delay: 5 * ms, MaxAttempts: int(hedge%4) + 1}
		}
		if hedge >= 128 {
			cfg.SendRate = &RateLimitConfig{MaxTokens: 1, FillInterval: 3 * ms}
		}
		e, err := NewEdge(cfg, rand.New(rand.NewPCG(uint64(len(ops)), 1)))
		if err != nil {
			t.Fatal(err)
		}
		// Every attempt must be reported once: the concurrency budget ends
		// a finished call with nothing active, and the breaker hears of
		// each admitted attempt once.
		budget := &concurrencyBudget{percent: 20, min: 100}
		e.Budget = budget
		breaker := &countingBreaker{}
		e.Breaker = breaker
		limit := max(e.MaxAttempts, e.HedgeMax)
		deadline := 100 * ms
		var c Call
		now := time.Duration(0)
		a := c.Start(now, e, CallOptions{HasDeadline: true, Deadline: deadline, Counted: true})
		live := map[int]bool{}
		wakeAt, wake := time.Duration(0), false
		finished := 0
		sawTimeout := false
		track := func(a Action) {
			switch a.Kind {
			case Send:
				if a.Attempt > limit {
					t.Fatalf("attempt %d beyond limit %d", a.Attempt, limit)
				}
				if now >= deadline {
					t.Fatalf("attempt sent at %v, deadline %v", now, deadline)
				}
				if a.Timeout <= 0 || now+a.Timeout > deadline {
					t.Fatalf("timeout %v at %v overruns the deadline", a.Timeout, now)
				}
				live[a.Attempt] = true
			case Finish:
				finished++
				if a.Result == Failed && (sawTimeout || len(live) > 0) {
					t.Fatalf("failed although an attempt may have done the work")
				}
				if a.Result == Succeeded && a.Outcome != OK {
					t.Fatalf("succeeded with %v", a.Outcome)
				}
			}
			// A wake-up already asked for may be restated late; a new
			// one is never in the past.
			if a.Wake && (a.WakeAt != wakeAt || !wake) && a.WakeAt < now {
				t.Fatalf("wake at %v is in the past (%v)", a.WakeAt, now)
			}
		}
		track(a)
		wakeAt, wake = a.WakeAt, a.Wake
		for _, op := range ops {
			if finished > 0 {
				break
			}
			now += time.Duration(op%7) * ms
			var k int
			for k = range live {
				break
			}
			switch {
			case op%5 == 0 && wake && now >= wakeAt:
				a = c.Wake(now)
			case op%5 == 1 && k > 0:
				delete(live, k)
				a = c.Answered(now, k, Outcome(op/5%4), time.Duration(op%3)*ms, op%11 == 0)
			case op%5 == 2 && k > 0:
				delete(live, k)
				sawTimeout = true
				a = c.TimedOut(now, k)
			case op%5 == 3 && op%13 == 0:
				a = c.Abort(now)
			default:
				continue
			}
			track(a)
			if a.Kind != Finish {
				wakeAt, wake = a.WakeAt, a.Wake
			}
		}
		if finished > 1 {
			t.Fatalf("finished %d times", finished)
		}
		if finished == 1 {
			if budget.active != 0 || budget.retry != 0 {
				t.Fatalf("finished call left %d attempts and %d retries active in the budget", budget.active, budget.retry)
			}
			if breaker.allowed != breaker.reported {
				t.Fatalf("breaker admitted %d attempts, heard of %d", breaker.allowed, breaker.reported)
			}
		}
		if e.Stats.Attempts > int64(limit) {
			t.Fatalf("%d attempts, limit %d", e.Stats.Attempts, limit)
		}
	})
}

// BenchmarkCall measures one logical call that succeeds at its first
// attempt: the state machine's cost per call in the simulator's hot path.
func BenchmarkCall(b *testing.B) {
	e, err := NewEdge(EdgeConfig{Timeout: 100 * ms, Retry: RetryConfig{MaxAttempts: 3}}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	var c Call
	now := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		a := c.Start(now, e, CallOptions{Counted: true, HasDeadline: true, Deadline: now + time.Second})
		c.Answered(now+ms, a.Attempt, OK, 0, false)
		now += ms
	}
}

// TestNewEdgeRetryPreset: a Go caller naming a retry preset gets the
// preset's policy (gRPC: 4 attempts on unavailable, 100ms initial backoff),
// expanded by the same RetryConfig.Resolve the scenario loader uses, with
// its own non-zero keys winning.
func TestNewEdgeRetryPreset(t *testing.T) {
	e := newTestEdge(t, EdgeConfig{Retry: RetryConfig{Preset: "grpc"}})
	want, err := RetryPreset("grpc")
	if err != nil {
		t.Fatal(err)
	}
	if e.MaxAttempts != want.MaxAttempts || e.MaxAttempts != 4 {
		t.Errorf("MaxAttempts = %d, want the grpc preset's %d", e.MaxAttempts, want.MaxAttempts)
	}
	if e.RetryOn != DefaultRetryOn&^(1<<Timeout) || !e.RetryOn.Has(Unavailable) {
		t.Errorf("RetryOn = %b, want only unavailable", e.RetryOn)
	}
	if e.Backoff.Initial != 100*time.Millisecond || e.Backoff.Jitter != ProportionalJitter {
		t.Errorf("Backoff = %+v, want the grpc preset's", e.Backoff)
	}
	e = newTestEdge(t, EdgeConfig{Retry: RetryConfig{Preset: "grpc", MaxAttempts: 2}})
	if e.MaxAttempts != 2 || e.Backoff.Initial != 100*time.Millisecond {
		t.Errorf("grpc with max_attempts 2: %d attempts, initial %v", e.MaxAttempts, e.Backoff.Initial)
	}
	_, err = NewEdge(EdgeConfig{Retry: RetryConfig{Preset: "grpcc"}}, rand.New(rand.NewPCG(1, 2)))
	if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != "retry.preset" {
		t.Errorf("unknown preset: error %v, want a FieldError on retry.preset", err)
	}
}

// countingBreaker admits everything and counts admissions and reports.
type countingBreaker struct{ allowed, reported int }

func (b *countingBreaker) Allow(time.Duration) (uint64, bool) { b.allowed++; return 0, true }
func (b *countingBreaker) Done(time.Duration, uint64, Outcome, time.Duration) {
	b.reported++
}
func (b *countingBreaker) Cancel(time.Duration, uint64)     { b.reported++ }
func (b *countingBreaker) State(time.Duration) BreakerState { return Closed }
func (b *countingBreaker) Opens() int64                     { return 0 }
