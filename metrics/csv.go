package metrics

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// The first two CSV columns locate each row in time; the series' own
// columns follow.
const (
	csvTimeColumn     = ColTime
	csvIntervalColumn = ColInterval
	csvSigDigits      = 9
)

// WriteCSV writes the series as CSV: a header "t_s,interval_s,COLUMNS..."
// then one line per row with the row's start time and the interval in
// seconds. Values are printed with 9 significant digits: far more than any
// measurement carries, few enough that two computations of one quantity
// that differ in their last bits (a sum taken in another order, as when
// merging shards) print the same bytes.
func (ts *TimeSeries) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	rec := make([]string, 0, len(ts.Columns)+2)
	rec = append(rec, csvTimeColumn, csvIntervalColumn)
	rec = append(rec, ts.Columns...)
	if err := cw.Write(rec); err != nil {
		return fmt.Errorf("metrics: write csv: %w", err)
	}
	iv := formatSeconds(ts.Interval)
	for i, row := range ts.Rows {
		if len(row) != len(ts.Columns) {
			return fmt.Errorf("metrics: write csv: row %d has %d values for %d columns", i, len(row), len(ts.Columns))
		}
		rec = rec[:0]
		rec = append(rec, formatSeconds(ts.Start+time.Duration(i)*ts.Interval), iv)
		for _, v := range row {
			rec = append(rec, strconv.FormatFloat(v, 'g', csvSigDigits, 64))
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("metrics: write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("metrics: write csv: %w", err)
	}
	return nil
}

// ReadCSV reads a series written by WriteCSV. Rows must be consecutive
// intervals of one fixed length; errors name the line and column.
func ReadCSV(r io.Reader) (*TimeSeries, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("line 1: empty file, want a header")
	}
	if err != nil {
		return nil, err
	}
	if len(head) < 2 || head[0] != csvTimeColumn || head[1] != csvIntervalColumn {
		return nil, fmt.Errorf("line 1: header must start with %q,%q", csvTimeColumn, csvIntervalColumn)
	}
	ts := &TimeSeries{Columns: append([]string(nil), head[2:]...)}
	seen := make(map[string]bool, len(ts.Columns))
	for _, c := range ts.Columns {
		if c == "" || seen[c] {
			return nil, fmt.Errorf("line 1: empty or repeated column name %q", c)
		}
		seen[c] = true
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		t, err := parseSeconds(rec[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", line, csvTimeColumn, err)
		}
		iv, err := parseSeconds(rec[1])
		if err != nil || iv <= 0 {
			return nil, fmt.Errorf("line %d: %s: want a positive number of seconds, got %q", line, csvIntervalColumn, rec[1])
		}
		n := len(ts.Rows)
		if n == 0 {
			ts.Start, ts.Interval = t, iv
		} else if iv != ts.Interval {
			return nil, fmt.Errorf("line %d: %s: %v differs from the first row's %v", line, csvIntervalColumn, iv, ts.Interval)
		} else if want := ts.Start + time.Duration(n)*ts.Interval; t != want {
			return nil, fmt.Errorf("line %d: %s: row starts at %v, want %v (rows must be consecutive intervals)", line, csvTimeColumn, t, want)
		}
		row := make([]float64, len(ts.Columns))
		for i := range row {
			v, err := strconv.ParseFloat(rec[i+2], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: column %q: not a number: %q", line, ts.Columns[i], rec[i+2])
			}
			row[i] = v
		}
		ts.Rows = append(ts.Rows, row)
	}
	return ts, nil
}

// formatSeconds prints d in seconds, exactly (nanosecond digits kept).
func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// parseSeconds is the inverse of formatSeconds, rounding to the nanosecond.
func parseSeconds(s string) (time.Duration, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxInt64/1e9 {
		return 0, fmt.Errorf("want seconds, got %q", s)
	}
	return time.Duration(math.Round(v * 1e9)), nil
}
