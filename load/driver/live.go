package driver

import (
	"time"

	"github.com/stormsim/stormsim/metrics"
)

// The live feed of a run (Options.OnRow): one row per interval while the
// run goes, built from the same counters as the final time series.

// RowSource adds columns to the driver's live rows: a scenario run's
// services, sampled each interval.
type RowSource interface {
	// Row returns the columns and row i's values, waiting at most wait
	// for the sample due at the same instant as the driver's tick.
	Row(i int, wait time.Duration) (columns []string, values []float64)
	// Rows is how many rows there are; Finish stops sampling, so that
	// the rows sent at the end are the result's.
	Rows() int
	Finish()
}

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
		if d.opt.Services != nil {
			c, v := d.opt.Services.Row(next, wait)
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
				if d.opt.Services != nil {
					d.opt.Services.Finish()
					n = max(n, d.opt.Services.Rows())
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
