package tune

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// chain draws a three-hop chain whose latencies nest: db, orders = own +
// db, gateway = own + orders.
func chain(r *rand.Rand, n int, dbP50, dbP99 time.Duration) []Hop {
	db := newLognormal(dbP50, dbP99).draw(r, n)
	ordersOwn := newLognormal(2*time.Millisecond, 10*time.Millisecond).draw(r, n)
	gwOwn := newLognormal(time.Millisecond, 4*time.Millisecond).draw(r, n)
	orders := make([]time.Duration, n)
	gw := make([]time.Duration, n)
	for i := range n {
		orders[i] = ordersOwn[i] + db[i]
		gw[i] = gwOwn[i] + orders[i]
	}
	var hops []Hop
	for _, h := range []struct {
		name string
		d    []time.Duration
	}{{"gateway", gw}, {"orders", orders}, {"db", db}} {
		s, _ := NewSamples(h.d)
		hops = append(hops, Hop{Name: h.name, Samples: s})
	}
	return hops
}

// TestBudgetSplit checks, over random chains and deadlines, that no hop is
// given more than what remains after its caller's own work, that every
// timeout fits its hop's budget, and that the owner's retries fit too.
func TestBudgetSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	ran := 0
	for trial := range 25 {
		p50 := time.Duration(1+r.IntN(20)) * time.Millisecond
		hops := chain(r, 2000, p50, p50*time.Duration(2+r.IntN(30)))
		opt := Options{
			Deadline: time.Duration(20+r.IntN(2000)) * time.Millisecond,
			Response: time.Duration(r.IntN(3)) * time.Millisecond,
		}
		p, err := Recommend(hops, opt)
		if errors.Is(err, ErrDeadlineTooShort) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		ran++
		if p.Hops[0].Budget != opt.Deadline {
			t.Errorf("trial %d: top budget %v, deadline %v", trial, p.Hops[0].Budget, opt.Deadline)
		}
		for i, h := range p.Hops {
			if i > 0 {
				up := p.Hops[i-1]
				if h.Budget > up.Budget-up.OwnP99 {
					t.Errorf("trial %d: %s budget %v > caller %s budget %v − own %v", trial, h.Name, h.Budget, up.Name, up.Budget, up.OwnP99)
				}
			}
			if h.Timeout > h.Budget {
				t.Errorf("trial %d: %s timeout %v > budget %v", trial, h.Name, h.Timeout, h.Budget)
			}
			if time.Duration(h.Attempts)*h.Timeout > h.Budget {
				t.Errorf("trial %d: %s %d attempts × %v > budget %v", trial, h.Name, h.Attempts, h.Timeout, h.Budget)
			}
			if h.Attempts > 1 && i != p.Owner {
				t.Errorf("trial %d: %s retries but the owner is %d", trial, h.Name, p.Owner)
			}
			if i > 0 && i <= p.Owner && p.Hops[i-1].Timeout < time.Duration(h.Attempts)*h.Timeout {
				t.Errorf("trial %d: %s timeout %v cannot wait for %d attempts of %s at %v",
					trial, p.Hops[i-1].Name, p.Hops[i-1].Timeout, h.Attempts, h.Name, h.Timeout)
			}
		}
	}
	if ran < 12 {
		t.Fatalf("only %d of 25 trials had a feasible deadline", ran)
	}
}

func TestDeadlineTooShort(t *testing.T) {
	hops := chain(rand.New(rand.NewPCG(1, 1)), 5000, 10*time.Millisecond, 100*time.Millisecond)
	// The gateway's p99.9 is well above 60ms: not even one attempt fits.
	_, err := Recommend(hops, Options{Deadline: 60 * time.Millisecond})
	var de *DeadlineError
	if !errors.As(err, &de) || de.Hop != "gateway" || !errors.Is(err, ErrDeadlineTooShort) {
		t.Fatalf("got %v, want a deadline error naming gateway", err)
	}
	if !strings.Contains(err.Error(), `hop "gateway"`) {
		t.Errorf("error does not name the hop: %v", err)
	}
	// A deadline that fits the gateway's attempt but, after its own work,
	// not the orders' attempt names orders.
	p, err := Recommend(hops, Options{Deadline: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	g, o := p.Hops[0], p.Hops[1]
	d := g.Quantile + 1
	if d-g.OwnP99 >= o.Quantile {
		t.Fatalf("chain shape leaves room for orders at %v: pick other parameters", d)
	}
	_, err = Recommend(hops, Options{Deadline: d})
	if !errors.As(err, &de) || de.Hop != "orders" {
		t.Fatalf("deadline %v: got %v, want a deadline error naming orders", d, err)
	}
}

func TestRetryOwnerAndBudget(t *testing.T) {
	hops := chain(rand.New(rand.NewPCG(2, 2)), 5000, 5*time.Millisecond, 50*time.Millisecond)
	p, err := Recommend(hops, Options{Deadline: 2 * time.Second, MaxAmplification: 1.2})
	if err != nil {
		t.Fatal(err)
	}
	if p.Owner != 2 || p.Hops[2].Attempts != 3 {
		t.Errorf("owner %d with %d attempts, want db (2) with 3", p.Owner, p.Hops[p.Owner].Attempts)
	}
	if math.Abs(p.BudgetRatio-0.2) > 1e-12 {
		t.Errorf("single-layer ratio %v, want 0.2", p.BudgetRatio)
	}
	if got := math.Pow(1+p.BudgetRatioEveryHop, 3); math.Abs(got-1.2) > 1e-12 {
		t.Errorf("(1+r)^3 = %v, want 1.2", got)
	}
	// With a deadline that fits one attempt everywhere, nobody retries.
	p, err = Recommend(hops, Options{Deadline: p.Hops[0].Quantile + time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if p.Owner != -1 {
		t.Errorf("deadline of one attempt: owner %d, want none", p.Owner)
	}
	for _, h := range p.Hops {
		if h.Attempts != 1 {
			t.Errorf("%s: %d attempts", h.Name, h.Attempts)
		}
	}
}

func TestRecommendBadOptions(t *testing.T) {
	s := mustSamples(t, []time.Duration{time.Millisecond})
	hops := []Hop{{Name: "a", Samples: s}}
	for _, c := range []struct {
		opt  Options
		hops []Hop
		want string
	}{
		{Options{}, hops, "deadline: must be > 0"},
		{Options{Deadline: time.Second, Percentile: 1}, hops, "percentile: must be in (0, 1)"},
		{Options{Deadline: time.Second, MaxAmplification: 0.5}, hops, "max amplification: must be ≥ 1"},
		{Options{Deadline: time.Second}, nil, "no hops"},
		{Options{Deadline: time.Second}, []Hop{hops[0], hops[0]}, `hop "a" given twice`},
		{Options{Deadline: time.Second}, []Hop{{Name: "b"}}, `hop "b": no samples`},
		// Issue 17, item 4: the quantile of zeros divided the budget by 0.
		{Options{Deadline: time.Second}, []Hop{{Name: "z", Samples: mustSamples(t, make([]time.Duration, 100))}}, `hop "z": p99.9 of its 100 samples is 0`},
		{Options{Deadline: time.Second}, []Hop{hops[0], {Name: "z", Samples: mustSamples(t, append(make([]time.Duration, 999), time.Second))}}, `hop "z": p99.9 of its 1000 samples is 0`},
	} {
		_, err := Recommend(c.hops, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.opt, err, c.want)
		}
	}
}

func BenchmarkRecommend(b *testing.B) {
	hops := chain(rand.New(rand.NewPCG(1, 2)), 10000, 5*time.Millisecond, 50*time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Recommend(hops, Options{Deadline: time.Second}); err != nil {
			b.Fatal(err)
		}
	}
}
