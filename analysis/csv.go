package analysis

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/stormsim/stormsim/metrics"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// rowHeader is the fixed part of sweep.csv's header; the measures follow.
var rowHeader = []string{"unit", "point", "param", "value", "variant", "replica", "seed", "status"}

// formatFloat writes x exactly, and NaN (no data) as an empty cell.
func formatFloat(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// parseFloat reads a cell written by formatFloat.
func parseFloat(s string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("want a number or an empty cell (no data), got %q", s)
	}
	return v, nil
}

// WriteRows writes rows as CSV (sweep.csv): a header, then one line per
// row in the order given. The certainty columns follow the measures when a
// row has certainty (the scenario converges). Floats are written in their shortest exact form,
// so ReadRows gives back the same values and a merge of shard files is
// byte-identical to the unsharded file.
func WriteRows(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	header := append([]string(nil), rowHeader...)
	cols := columnsOf(rows)
	for _, c := range cols {
		header = append(header, c.name)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, len(header))
	for i := range rows {
		r := &rows[i]
		rec = rec[:0]
		rec = append(rec,
			strconv.Itoa(r.Index), strconv.Itoa(r.Point), r.Param, r.Value, r.VariantName,
			strconv.Itoa(r.Replica), strconv.FormatUint(r.Seed, 10), string(r.Status))
		for _, c := range cols {
			rec = append(rec, formatFloat(c.get(&r.Measures)))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadRows reads a CSV written by WriteRows; name labels errors
// ("shard0.csv:7: column seed: ..."). Rows keep their unit index, so rows
// read from shard files can be merged with MergeRows. The variant index of a
// unit is not recorded in the file and is left 0.
func ReadRows(name string, r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading header: %w", name, err)
	}
	cols := measureColumns
	if len(header) == len(rowHeader)+len(withCertainty) {
		cols = withCertainty
	}
	if want := len(rowHeader) + len(measureColumns); len(header) != len(rowHeader)+len(cols) || header[0] != "unit" {
		return nil, fmt.Errorf("%s:1: not a sweep CSV (want %d columns starting with unit, or %d with certainty, got %d)", name, want, want+len(certaintyColumns), len(header))
	}
	for i, c := range cols {
		if h := header[len(rowHeader)+i]; h != c.name {
			return nil, fmt.Errorf("%s:1: column %d is %q, want %q", name, len(rowHeader)+i+1, h, c.name)
		}
	}
	var rows []Row
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var row Row
		bad := func(col int, err error) error {
			return fmt.Errorf("%s:%d: column %s: %w", name, line, header[col], err)
		}
		ints := []*int{&row.Index, &row.Point}
		for i, p := range ints {
			if *p, err = strconv.Atoi(rec[i]); err != nil || *p < 0 {
				return nil, bad(i, fmt.Errorf("want a non-negative integer, got %q", rec[i]))
			}
		}
		row.Param, row.Value, row.VariantName = rec[2], rec[3], rec[4]
		if row.Replica, err = strconv.Atoi(rec[5]); err != nil || row.Replica < 0 {
			return nil, bad(5, fmt.Errorf("want a non-negative integer, got %q", rec[5]))
		}
		if row.Seed, err = strconv.ParseUint(rec[6], 10, 64); err != nil {
			return nil, bad(6, fmt.Errorf("want an unsigned integer, got %q", rec[6]))
		}
		row.Status = metrics.Status(rec[7])
		for i, c := range cols {
			col := len(rowHeader) + i
			v, err := parseFloat(rec[col])
			if err != nil {
				return nil, bad(col, err)
			}
			c.set(&row.Measures, v)
		}
		rows = append(rows, row)
	}
}

// MergeRows joins the rows of several shards of one sweep into unit order.
// A unit present twice is an error (the same shard merged twice, or shards
// of different sweeps).
func MergeRows(shards ...[]Row) ([]Row, error) {
	var all []Row
	for _, s := range shards {
		all = append(all, s...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Index < all[j].Index })
	for i := 1; i < len(all); i++ {
		if all[i].Index == all[i-1].Index {
			return nil, fmt.Errorf("merge: unit %d appears twice", all[i].Index)
		}
		if all[i].Param != all[0].Param {
			return nil, fmt.Errorf("merge: unit %d sweeps %s, unit %d sweeps %s: not shards of one sweep", all[0].Index, all[0].Param, all[i].Index, all[i].Param)
		}
		if all[i].HasCertainty != all[0].HasCertainty {
			return nil, fmt.Errorf("merge: unit %d has certainty columns and unit %d not (or the reverse): not shards of one sweep", all[0].Index, all[i].Index)
		}
	}
	return all, nil
}

// Stat is a measure's mean over replicas with a 95 % confidence interval.
// With one replica Lo and Hi are NaN (no interval can be given).
type Stat struct {
	Mean, Lo, Hi float64
}

// MeanCI returns the mean of xs and its 95 % confidence interval from
// Student's t distribution with n−1 degrees of freedom:
// mean ± t(0.975, n−1)·s/√n, s the sample standard deviation. The
// replicas of a sweep point are independent runs, so the interval covers the
// point's expected value with probability 0.95 when the measure is roughly
// normal across replicas.
func MeanCI(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{math.NaN(), math.NaN(), math.NaN()}
	}
	return meanCI(xs, tQuantile(len(xs)))
}

// tQuantile is t(0.975, n−1), or NaN for n < 2.
func tQuantile(n int) float64 {
	if n < 2 {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
}

func meanCI(xs []float64, t float64) Stat {
	mean, sd := stat.MeanStdDev(xs, nil)
	if len(xs) < 2 {
		return Stat{mean, math.NaN(), math.NaN()}
	}
	h := t * sd / math.Sqrt(float64(len(xs)))
	return Stat{mean, mean - h, mean + h}
}

// Aggregate is one (point, variant) of a sweep summarized over replicas.
type Aggregate struct {
	Point       int
	Param       string
	Value       string
	VariantName string
	// Replicas is the number of rows aggregated; Incomplete counts those
	// whose run did not complete (diverged or interrupted): stopped
	// part-way, they are left out of every Stat. NoLatency counts the
	// complete ones in which nothing succeeded: they have no latency, and
	// the latency Stats are over the others.
	Replicas   int
	Incomplete int
	NoLatency  int
	// Stats holds one Stat per measure, in measure order (see MeasureNames),
	// then one per certainty column when the rows have certainty.
	Stats []Stat
}

// MeasureNames returns the names of the measures in CSV order (without
// the certainty columns, which follow them when the runs converge).
func MeasureNames() []string {
	out := make([]string, len(measureColumns))
	for i, c := range measureColumns {
		out[i] = c.name
	}
	return out
}

// Stat returns the aggregate's Stat of the named measure.
func (a *Aggregate) Stat(measure string) (Stat, bool) {
	for i, c := range withCertainty {
		if c.name == measure && i < len(a.Stats) {
			return a.Stats[i], true
		}
	}
	return Stat{}, false
}

// AggregateRows groups rows by (point, variant) in the order the groups
// first appear and summarizes each measure over the replicas that
// completed and have it (a latency is no data where nothing succeeded). A
// measure no replica has is NaN.
func AggregateRows(rows []Row) []Aggregate {
	type key struct {
		point   int
		variant string
	}
	index := map[key]int{}
	cols := columnsOf(rows)
	var aggs []Aggregate
	var samples [][]Row
	for _, r := range rows {
		k := key{r.Point, r.VariantName}
		i, ok := index[k]
		if !ok {
			i = len(aggs)
			index[k] = i
			aggs = append(aggs, Aggregate{Point: r.Point, Param: r.Param, Value: r.Value, VariantName: r.VariantName})
			samples = append(samples, nil)
		}
		samples[i] = append(samples[i], r)
	}
	for i := range aggs {
		a := &aggs[i]
		a.Replicas = len(samples[i])
		var complete []*Row
		for j := range samples[i] {
			r := &samples[i][j]
			switch {
			case r.Status != metrics.StatusComplete:
				a.Incomplete++
			case r.Succeeded == 0:
				a.NoLatency++
				complete = append(complete, r)
			default:
				complete = append(complete, r)
			}
		}
		xs := make([]float64, 0, len(complete))
		ts := map[int]float64{} // t by sample size: the quantile is costly
		for _, c := range cols {
			xs = xs[:0]
			for _, r := range complete {
				if x := c.get(&r.Measures); !math.IsNaN(x) {
					xs = append(xs, x)
				}
			}
			if len(xs) == 0 {
				a.Stats = append(a.Stats, Stat{math.NaN(), math.NaN(), math.NaN()})
				continue
			}
			t, ok := ts[len(xs)]
			if !ok {
				t = tQuantile(len(xs))
				ts[len(xs)] = t
			}
			a.Stats = append(a.Stats, meanCI(xs, t))
		}
	}
	return aggs
}

// WriteAggregates writes aggregates as CSV (sweep-aggregate.csv): per
// measure its mean and the bounds of its 95 % confidence interval (empty
// with a single replica; all three empty when no replica has the measure).
func WriteAggregates(w io.Writer, aggs []Aggregate) error {
	cw := csv.NewWriter(w)
	header := []string{"point", "param", "value", "variant", "replicas", "incomplete", "no_latency"}
	cols := measureColumns
	if len(aggs) > 0 && len(aggs[0].Stats) == len(withCertainty) {
		cols = withCertainty
	}
	for _, c := range cols {
		header = append(header, c.name+"_mean", c.name+"_ci95_lo", c.name+"_ci95_hi")
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	num := func(x float64) string {
		if math.IsNaN(x) {
			return ""
		}
		return formatFloat(x)
	}
	for _, a := range aggs {
		rec := []string{strconv.Itoa(a.Point), a.Param, a.Value, a.VariantName,
			strconv.Itoa(a.Replicas), strconv.Itoa(a.Incomplete), strconv.Itoa(a.NoLatency)}
		for _, s := range a.Stats {
			rec = append(rec, num(s.Mean), num(s.Lo), num(s.Hi))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
