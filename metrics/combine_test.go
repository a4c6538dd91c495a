package metrics

import (
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func TestMergeHistograms(t *testing.T) {
	hist := func(lo, hi int64, sig int, vs ...int64) *hdrhistogram.Histogram {
		h := hdrhistogram.New(lo, hi, sig)
		for _, v := range vs {
			if err := h.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
		return h
	}
	for _, c := range []struct {
		name   string
		in     []*hdrhistogram.Histogram
		count  int64
		max    int64 // the merged histogram's highest equivalent value
		errHas string
	}{
		{"none", nil, -1, 0, ""},
		{"all nil", []*hdrhistogram.Histogram{nil, nil}, -1, 0, ""},
		{"same geometry", []*hdrhistogram.Histogram{hist(1, 1e6, 3, 10, 20), hist(1, 1e6, 3, 30)}, 3, 30, ""},
		{"other geometry", []*hdrhistogram.Histogram{hist(1, 1e6, 3, 10), hist(1, 1e4, 2, 500)}, 2, 500, ""},
		{"out of the first's range", []*hdrhistogram.Histogram{hist(1, 1000, 3, 10), hist(1, 1e6, 3, 500000)}, 0, 0, "1 values out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := make([]int64, len(c.in))
			for i, h := range c.in {
				if h != nil {
					before[i] = h.TotalCount()
				}
			}
			h, err := MergeHistograms(c.in...)
			switch {
			case c.errHas != "":
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("err %v, want one containing %q", err, c.errHas)
				}
				return
			case err != nil:
				t.Fatal(err)
			case c.count < 0:
				if h != nil {
					t.Fatalf("got a histogram of %d values from none", h.TotalCount())
				}
				return
			}
			if h.TotalCount() != c.count || h.Max() != c.max {
				t.Errorf("count %d max %d, want %d and %d", h.TotalCount(), h.Max(), c.count, c.max)
			}
			for i, h := range c.in {
				if h != nil && h.TotalCount() != before[i] {
					t.Errorf("input %d changed: %d values, had %d", i, h.TotalCount(), before[i])
				}
			}
		})
	}
}
