package load

import (
	"sort"
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// The live feed of a run (Options.OnRow): one row per interval while the
// run goes, built from the same counters as the final time series.

// rowSource adds columns to the driver's live rows: a scenario run's
// services, sampled each interval.
type rowSource interface {
	// row returns the columns and row i's values, waiting at most wait
	// for the sample due at the same instant as the driver's tick.
	row(i int, wait time.Duration) (columns []string, values []float64)
	// rows is how many rows there are; finish stops sampling, so that
	// the rows sent at the end are the result's.
	rows() int
	finish()
}

// liveServices is the sampler as a rowSource when the run has a live
// feed, nil otherwise.
func liveServices(sm *sampler, onRow func(time.Duration, []string, []float64)) rowSource {
	if onRow == nil {
		return nil
	}
	return sm
}

// ticked counts a sample and wakes whoever waits for it. sm.mu is held.
func (sm *sampler) ticked() {
	sm.n++
	close(sm.tick)
	sm.tick = make(chan struct{})
}

func (sm *sampler) row(i int, wait time.Duration) ([]string, []float64) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	sm.mu.Lock()
	for sm.n <= i {
		tick := sm.tick
		sm.mu.Unlock()
		select {
		case <-tick:
		case <-sm.done:
		case <-deadline.C:
		}
		sm.mu.Lock()
		if tick == sm.tick { // stopped or timed out: no sample i
			break
		}
	}
	defer sm.mu.Unlock()
	names := make([]string, 0, len(sm.cols))
	for k := range sm.cols {
		names = append(names, k)
	}
	sort.Strings(names) // the order of sampler.series
	vals := make([]float64, len(names))
	for j, k := range names {
		if i < len(sm.cols[k]) {
			vals[j] = sm.cols[k][i]
		}
	}
	return names, vals
}

func (sm *sampler) rows() int {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.n
}

func (sm *sampler) finish() { sm.stop() }

// due counts a counted request scheduled at at, for the live rows.
func (r *recorder) due(at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rowAt(at).due++
}

// liveRow returns row i of the run-wide columns as recorded so far, with
// the requests scheduled in it as offered: the result counts a request
// when it ends, which in a storm is long after its interval (every
// scheduled request ends, so the two agree once all have).
func (r *recorder) liveRow(i int) []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &row{}
	if i < len(r.rows) {
		w = &r.rows[i]
	}
	vals := r.rowValues(w, r.interval.Seconds())
	vals[0] = float64(max(w.due, w.offered)) // RunColumns: offered first
	return vals
}

func (r *recorder) rowCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.rows)
}

// startRows calls OnRow at the end of every interval until stop, which
// then sends the rows left: as many in all as the result's series has.
func (d *driver) startRows() (stop func()) {
	if d.opt.OnRow == nil {
		return func() {}
	}
	iv := d.opt.Interval
	next := 0
	emit := func(wait time.Duration) {
		cols := metrics.RunColumns()
		vals := d.rec.liveRow(next)
		if d.opt.services != nil {
			c, v := d.opt.services.row(next, wait)
			cols, vals = append(cols, c...), append(vals, v...)
		}
		d.opt.OnRow(time.Duration(next)*iv, cols, vals)
		next++
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t, tc := d.clk.NewTimer(iv - d.clk.Now())
		defer t.Stop()
		for {
			select {
			case <-tc:
				emit(iv / 2)
				t.Reset(time.Duration(next+1)*iv - d.clk.Now())
			case <-done:
				n := d.rec.rowCount()
				if d.opt.services != nil {
					d.opt.services.finish()
					n = max(n, d.opt.services.rows())
				}
				for next < n {
					emit(0)
				}
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// Watch calls onRow at the end of every interval, from one goroutine,
// with the services' columns of the time series a scenario run records
// (attempts, queue, utilization, breaker and budget state per service
// and edge), until stop: the live view of 'stormsim serve'.
func (cl *Cluster) Watch(interval time.Duration, onRow func(start time.Duration, columns []string, row []float64)) (stop func()) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	var sm sampler
	sm.start(cl, interval)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			if sm.waitFor(i) {
				return
			}
			cols, vals := sm.row(i, 0)
			onRow(time.Duration(i)*interval, cols, vals)
		}
	}()
	return func() { sm.stop(); <-done }
}

// waitFor waits until sample i is taken and reports whether the sampler
// stopped first.
func (sm *sampler) waitFor(i int) (stopped bool) {
	for {
		sm.mu.Lock()
		n, tick := sm.n, sm.tick
		sm.mu.Unlock()
		if n > i {
			return false
		}
		select {
		case <-tick:
		case <-sm.done:
			return true
		}
	}
}
