package traces

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAttackImportLineNumbersAreLinear: numbering the documents of a file
// of JSON lines counts each byte once (numbering each from the file's
// start made import quadratic: 2.4 s, 12.4 s, over 60 s as the file
// doubled).
func TestAttackImportLineNumbersAreLinear(t *testing.T) {
	for _, n := range []int{1000, 4000} {
		var b bytes.Buffer
		for i := range n {
			fmt.Fprintf(&b, "{\"resourceSpans\":[],\"n\":%d}\n", i)
		}
		data := b.Bytes()
		docs := 0
		ln, err := eachDocumentCounted("lines.json", data, func(d document) error {
			docs++
			if d.line != docs {
				return fmt.Errorf("document %d numbered line %d", docs, d.line)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if docs != n {
			t.Fatalf("%d documents, want %d", docs, n)
		}
		if ln.scanned > len(data) {
			t.Errorf("%d lines: %d bytes scanned to number them, more than the file's %d", n, ln.scanned, len(data))
		}
	}
}

// chain returns a server span of service a and n client spans of a below
// it, each the parent of the next (layered instrumentation taken to the
// extreme); with cycle, n internal spans whose parents form a ring, and a
// client span below them.
func chain(n int, cycle bool) []Span {
	t0 := time.Unix(1700000000, 0)
	id := func(i int) string { return fmt.Sprintf("%016x", i+1) }
	spans := make([]Span, 0, n+1)
	if cycle {
		for i := range n {
			spans = append(spans, Span{TraceID: "t", SpanID: id(i), ParentID: id((i + n - 1) % n), Service: "a", Kind: Internal, Start: t0, End: t0.Add(time.Millisecond)})
		}
		return append(spans, Span{TraceID: "t", SpanID: id(n), ParentID: id(n - 1), Service: "a", Kind: Client, Start: t0, End: t0.Add(time.Millisecond)})
	}
	spans = append(spans, Span{TraceID: "t", SpanID: id(0), Service: "a", Kind: Server, Start: t0, End: t0.Add(time.Second)})
	for i := 1; i <= n; i++ {
		spans = append(spans, Span{TraceID: "t", SpanID: id(i), ParentID: id(i - 1), Service: "a", Kind: Client, Start: t0.Add(time.Duration(i)), End: t0.Add(time.Millisecond)})
	}
	return spans
}

// TestAttackImportChainsAndCyclesAreLinear: finding the attempt each
// client span was made from walks each span once, however long the chain
// of spans above it, and a parent cycle ends the walk (each span walked
// the whole chain: 59–89 s).
func TestAttackImportChainsAndCyclesAreLinear(t *testing.T) {
	for _, cycle := range []bool{false, true} {
		for _, n := range []int{1000, 4000} {
			ix := buildIndex(chain(n, cycle), &Model{})
			clients := 0
			for _, s := range ix.spans {
				if s.Kind != Client {
					continue
				}
				clients++
				o := ix.owner(s)
				switch {
				case cycle && o != nil:
					t.Fatalf("cycle of %d: span %s owned by %s, want none", n, s.SpanID, o.SpanID)
				case !cycle && (o == nil || o.Kind != Server):
					t.Fatalf("chain of %d: span %s owned by %v, want the server span", n, s.SpanID, o)
				}
			}
			if limit := 3 * (n + 1); ix.walked > limit {
				t.Errorf("cycle %v, %d spans, %d clients: %d steps, want at most %d", cycle, n, clients, ix.walked, limit)
			}
		}
	}
}

// TestAttackImportStopsOnSignal: an import whose context ends stops with
// its error, between documents.
func TestAttackImportStopsOnSignal(t *testing.T) {
	var b strings.Builder
	for range 100 {
		b.WriteString("{\"resourceSpans\":[]}\n")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := read(ctx, "lines.json", []byte(b.String()), MaxSpans)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the context's", err)
	}
}

// TestAttackImportRefusesTooManySpans: past the limit, the import is
// refused naming it, rather than holding every span.
func TestAttackImportRefusesTooManySpans(t *testing.T) {
	data := otlpLines(10, 10) // 10 lines of 10 traces of 4 spans
	_, _, err := read(context.Background(), "big.json", data, 99)
	if !errors.Is(err, ErrTooManySpans) || !strings.Contains(err.Error(), "more than 99") {
		t.Fatalf("err %v, want one naming the limit of 99 spans", err)
	}
	if spans, _, err := read(context.Background(), "big.json", data, 400); err != nil || len(spans) != 400 {
		t.Fatalf("at the limit: %d spans, %v", len(spans), err)
	}
}

// otlpLines returns JSON lines of OTLP: lines × per traces, each a client
// root of service c calling service a (server), which calls b.
func otlpLines(lines, per int) []byte {
	var buf bytes.Buffer
	span := func(trace, id, parent, name string, kind int, start, end int64) string {
		p := ""
		if parent != "" {
			p = `,"parentSpanId":"` + parent + `"`
		}
		return fmt.Sprintf(`{"traceId":"%s","spanId":"%s"%s,"name":"%s","kind":%d,"startTimeUnixNano":"%d","endTimeUnixNano":"%d"}`, trace, id, p, name, kind, start, end)
	}
	rs := func(service string, spans []string) string {
		return `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"` + service + `"}}]},"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}`
	}
	t0 := int64(1700000000000000000)
	for l := range lines {
		var c, a, b []string
		for i := range per {
			n := l*per + i
			tr := fmt.Sprintf("%032x", n+1)
			s := t0 + int64(n)*int64(time.Millisecond)
			c = append(c, span(tr, fmt.Sprintf("%016x", 4*n+1), "", "checkout", 3, s, s+int64(9*time.Millisecond)))
			a = append(a, span(tr, fmt.Sprintf("%016x", 4*n+2), fmt.Sprintf("%016x", 4*n+1), "GET /", 2, s+int64(time.Millisecond), s+int64(8*time.Millisecond)))
			a = append(a, span(tr, fmt.Sprintf("%016x", 4*n+3), fmt.Sprintf("%016x", 4*n+2), "GET b", 3, s+int64(2*time.Millisecond), s+int64(6*time.Millisecond)))
			b = append(b, span(tr, fmt.Sprintf("%016x", 4*n+4), fmt.Sprintf("%016x", 4*n+3), "GET /b", 2, s+int64(3*time.Millisecond), s+int64(5*time.Millisecond)))
		}
		buf.WriteString(`{"resourceSpans":[` + rs("client", c) + "," + rs("a", a) + "," + rs("b", b) + "]}\n")
	}
	return buf.Bytes()
}

// BenchmarkImport1MSpans reads and infers a million spans (250,000
// traces, JSON lines of 1,000 traces each).
func BenchmarkImport1MSpans(b *testing.B) {
	data := otlpLines(benchLines, 1000)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		spans, _, err := read(context.Background(), "1m.json", data, MaxSpans)
		if err != nil {
			b.Fatal(err)
		}
		if len(spans) != 4000*benchLines {
			b.Fatalf("%d spans", len(spans))
		}
		if m := infer(spans); m.Entry != "a" {
			b.Fatalf("entry %q: %v", m.Entry, m.Notes)
		}
	}
	b.StopTimer()
	n, kept, peak := importMemory(b, data)
	b.ReportMetric(kept, "kept-B/span")
	b.ReportMetric(peak/float64(n), "read-peak-B/span")
	b.ReportMetric(peak/1e6, "read-peak-MB")
	peakAll := float64(importPeak(b, data))
	b.ReportMetric(peakAll/1e6, "import-peak-MB")
	b.ReportMetric(peakAll/float64(len(data)), "import-peak/file")
}

// benchLines is BenchmarkImport1MSpans's lines of 1,000 traces (4,000
// spans) each.
var benchLines = 250

func init() {
	if s := os.Getenv("STORMSIM_BENCH_LINES"); s != "" {
		benchLines, _ = strconv.Atoi(s)
	}
}
