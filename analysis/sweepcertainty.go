package analysis

import (
	"math"

	"github.com/stormsim/stormsim/metrics"
)

// measureColumn is one numeric measure of sweep.csv with its accessors.
type measureColumn = struct {
	name string
	get  func(*Measures) float64
	set  func(*Measures, float64)
}

// certaintyColumns are the convergence measures (metrics.Certainty) that
// follow measureColumns in sweep.csv and sweep-aggregate.csv when the
// scenario converges, as the JSON summary's certainty object does: the
// intents, their time to certainty (empty when none became certain), what
// resolved them, the alerts, the manual queue and the status queries. A row
// without certainty has no data there (empty cells).
var certaintyColumns = []measureColumn{
	certInt("intents", func(c *metrics.Certainty) *int64 { return &c.Intents }),
	certFloat("certainty_p50_ms", func(c *metrics.Certainty) *float64 { return &c.P50Ms }),
	certFloat("certainty_p99_ms", func(c *metrics.Certainty) *float64 { return &c.P99Ms }),
	certFloat("certainty_max_ms", func(c *metrics.Certainty) *float64 { return &c.MaxMs }),
	certInt("resolved_by_reply", func(c *metrics.Certainty) *int64 { return &c.ResolvedBy.Reply }),
	certInt("resolved_by_query", func(c *metrics.Certainty) *int64 { return &c.ResolvedBy.Query }),
	certInt("resolved_by_recovery", func(c *metrics.Certainty) *int64 { return &c.ResolvedBy.Recovery }),
	certInt("resolved_by_reconciliation", func(c *metrics.Certainty) *int64 { return &c.ResolvedBy.Reconciliation }),
	certInt("resolved_by_manual", func(c *metrics.Certainty) *int64 { return &c.ResolvedBy.Manual }),
	certInt("resolved_by_never", func(c *metrics.Certainty) *int64 { return &c.ResolvedBy.Never }),
	certInt("alerts", func(c *metrics.Certainty) *int64 { return &c.Alerts }),
	certInt("manual_queue_max", func(c *metrics.Certainty) *int64 { return &c.ManualQueueMax }),
	certInt("manual_queue_end", func(c *metrics.Certainty) *int64 { return &c.ManualQueueEnd }),
	certInt("queries", func(c *metrics.Certainty) *int64 { return &c.Queries }),
}

// certFloat and certInt make a certainty column of one field: NaN (an
// empty cell) for a run without certainty; setting a value marks the
// measures as having it.
func certFloat(name string, f func(*metrics.Certainty) *float64) measureColumn {
	return measureColumn{name,
		func(m *Measures) float64 {
			if !m.HasCertainty {
				return math.NaN()
			}
			return *f(&m.Certainty)
		},
		func(m *Measures, v float64) {
			if !math.IsNaN(v) {
				m.HasCertainty = true
			}
			*f(&m.Certainty) = v
		}}
}

func certInt(name string, f func(*metrics.Certainty) *int64) measureColumn {
	return measureColumn{name,
		func(m *Measures) float64 {
			if !m.HasCertainty {
				return math.NaN()
			}
			return float64(*f(&m.Certainty))
		},
		func(m *Measures, v float64) {
			if !math.IsNaN(v) {
				m.HasCertainty = true
				*f(&m.Certainty) = int64(v)
			}
		}}
}

// certaintyOf sets m's certainty from a summary's, if it has one: the
// times to certainty are no data (NaN) when no intent became certain, as
// a latency is when nothing succeeded.
func (m *Measures) certaintyOf(c *metrics.Certainty) {
	if c == nil {
		return
	}
	m.HasCertainty, m.Certainty = true, *c
	if c.Certain() == 0 {
		m.Certainty.P50Ms, m.Certainty.P99Ms, m.Certainty.MaxMs = math.NaN(), math.NaN(), math.NaN()
	}
}

// columnsOf are the measure columns of rows: measureColumns, and
// certaintyColumns when a row has certainty.
func columnsOf(rows []Row) []measureColumn {
	for i := range rows {
		if rows[i].HasCertainty {
			return withCertainty
		}
	}
	return measureColumns
}

// withCertainty is measureColumns then certaintyColumns.
var withCertainty = append(append([]measureColumn(nil), measureColumns...), certaintyColumns...)
