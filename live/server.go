package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"

	"github.com/stormsim/stormsim/charts"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/metrics"
)

// Defaults of Options.
const (
	DefaultLogEvents    = 4096
	DefaultLogBytes     = 8 << 20
	DefaultWriteTimeout = 10 * time.Second
	DefaultHeartbeat    = 15 * time.Second
	DefaultMaxViewers   = 32
	// IdleTimeout closes a viewer's connection idle between requests
	// (after the page, say), so that it holds no descriptor.
	IdleTimeout = 30 * time.Second
)

// Options configure a Server. Zero fields take the defaults above.
type Options struct {
	// Addr is the address to listen on, host:port; port 0 picks one.
	Addr string
	// AllowRemote permits an address off the loopback interface.
	AllowRemote bool
	// Title names the run on the page.
	Title string
	// LogEvents and LogBytes bound the shared event log: the oldest
	// events are dropped past either (defaults 4096 events, 8 MiB).
	LogEvents int
	LogBytes  int
	// WriteTimeout drops a viewer whose connection has not taken an
	// event for this long (default 10s).
	WriteTimeout time.Duration
	// Heartbeat is how often an idle stream gets a comment line, so
	// proxies keep it open and dead viewers are found (default 15s).
	Heartbeat time.Duration
	// MaxViewers bounds the event streams served at once (default 32);
	// one more is answered 503. The view accepts at most MaxViewers+4
	// connections at once (the rest wait in the kernel's backlog), so
	// viewers cannot take the descriptors of the services beside it.
	MaxViewers int
}

// Point is one finished point of a sweep or a capacity search.
type Point struct {
	// X is the point's value of the varied quantity, XLabel names it.
	X      float64 `json:"x"`
	XLabel string  `json:"x_label"`
	// Series names the line the point belongs to (a variant).
	Series string `json:"series"`
	// Values are the point's results by name (goodput_rps, latency_p99_ms, ...).
	Values map[string]float64 `json:"values"`
}

// Server is a running live view.
type Server struct {
	opt  Options
	ln   net.Listener
	srv  *http.Server
	page []byte
	log  eventLog
	// viewers counts the /events handlers running, for Close; streams
	// those streaming, against MaxViewers.
	viewers sync.WaitGroup
	// vmu orders a handler's viewers.Add before Close's Wait: closing
	// set, no handler adds (a WaitGroup must not gain a count once its
	// Wait may have begun at zero).
	vmu     sync.Mutex
	closing bool
	streams atomic.Int64
	served  chan struct{}
	// viewed is closed when the first viewer connects to /events.
	viewed     chan struct{}
	viewedOnce sync.Once
}

// Start listens on opt.Addr and serves the live view until Close.
func Start(opt Options) (*Server, error) {
	if opt.Addr == "" {
		return nil, errors.New("live: no listen address")
	}
	if _, _, err := net.SplitHostPort(opt.Addr); err != nil {
		return nil, fmt.Errorf("live: address %q: want host:port: %w", opt.Addr, err)
	}
	if !opt.AllowRemote {
		if err := driver.CheckLoopback(opt.Addr); err != nil {
			return nil, fmt.Errorf("live: address %w", err)
		}
	}
	if opt.LogEvents <= 0 {
		opt.LogEvents = DefaultLogEvents
	}
	if opt.LogBytes <= 0 {
		opt.LogBytes = DefaultLogBytes
	}
	if opt.WriteTimeout <= 0 {
		opt.WriteTimeout = DefaultWriteTimeout
	}
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = DefaultHeartbeat
	}
	if opt.MaxViewers <= 0 {
		opt.MaxViewers = DefaultMaxViewers
	}
	page, err := renderPage(opt.Title)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opt.Addr)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	s := &Server{opt: opt, ln: ln, page: page, served: make(chan struct{}), viewed: make(chan struct{})}
	s.log.init(opt.LogEvents, opt.LogBytes)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.HandleFunc("GET /events", s.serveEvents)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: IdleTimeout}
	limited := netutil.LimitListener(ln, opt.MaxViewers+4)
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(limited)
	}()
	return s, nil
}

// URL is the page's address.
func (s *Server) URL() string {
	if s == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String() + "/"
}

// Handler returns the server's handler (the page and /events), to mount
// beside other routes.
func (s *Server) Handler() http.Handler {
	if s == nil {
		return http.NotFoundHandler()
	}
	return s.srv.Handler
}

// Row publishes one interval of the time series: the row starting at
// start, of the given width, with one value per column. It copies what it
// needs and never waits for a viewer.
func (s *Server) Row(start, width time.Duration, columns []string, row []float64) {
	if s == nil {
		return
	}
	s.log.append(encodeRow("", start, width, columns, row))
}

// RunRow publishes one interval of one of several runs going at once (the
// variants of a comparison): Row's event with a first field "run" naming
// the run. The page draws each run's charts apart.
func (s *Server) RunRow(run string, start, width time.Duration, columns []string, row []float64) {
	if s == nil {
		return
	}
	s.log.append(encodeRow(run, start, width, columns, row))
}

// Point publishes one finished point of a sweep or capacity search.
func (s *Server) Point(p Point) {
	if s == nil {
		return
	}
	for k, v := range p.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			delete(p.Values, k)
		}
	}
	s.log.append(frame("point", marshal(p)))
}

// End tells every viewer the run is over: each gets what it has not yet
// seen, then an "end" event, and its stream closes.
func (s *Server) End() {
	if s == nil {
		return
	}
	s.log.end()
}

// Close ends the run (End), gives viewers until ctx is done to receive the
// end, then stops the server.
func (s *Server) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.End()
	s.vmu.Lock()
	s.closing = true
	s.vmu.Unlock()
	done := make(chan struct{})
	go func() { s.viewers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	err := s.srv.Close()
	<-s.served
	return err
}

// WaitViewer waits until a viewer has connected to /events, or ctx is
// done, and reports whether one has: a run can then start with someone
// watching from its first interval.
func (s *Server) WaitViewer(ctx context.Context) bool {
	if s == nil {
		return false
	}
	select {
	case <-s.viewed:
		return true
	case <-ctx.Done():
		return false
	}
}

// Dropped returns how many events viewers have skipped in all, having
// fallen behind the log.
func (s *Server) Dropped() int64 {
	if s == nil {
		return 0
	}
	return s.log.droppedTotal()
}

func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:")
	_, _ = w.Write(s.page)
}

// serveEvents streams the log to one viewer from its oldest event: the run
// so far, as far as the log reaches back, then what follows; a browser
// reconnecting resumes after the last event it received.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	s.vmu.Lock()
	if s.closing {
		s.vmu.Unlock()
		http.Error(w, "live: the view is closing", http.StatusServiceUnavailable)
		return
	}
	s.viewers.Add(1)
	s.vmu.Unlock()
	defer s.viewers.Done()
	if n := s.streams.Add(1); n > int64(s.opt.MaxViewers) {
		s.streams.Add(-1)
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("live: %d viewers already, the limit", s.opt.MaxViewers), http.StatusServiceUnavailable)
		return
	}
	defer s.streams.Add(-1)
	s.viewedOnce.Do(func() { close(s.viewed) })
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b ...[]byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(s.opt.WriteTimeout)); err != nil {
			return false
		}
		for _, f := range b {
			if _, err := w.Write(f); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}
	// Tell the browser how long to wait before reconnecting.
	if !write([]byte("retry: 2000\n\n")) {
		return
	}
	beat := time.NewTicker(s.opt.Heartbeat)
	defer beat.Stop()
	cur := s.log.oldest()
	if id, err := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64); err == nil {
		cur = s.log.after(id) // a browser reconnecting
	}
	var batch [][]byte
	for {
		var wake <-chan struct{}
		var skipped int64
		var ended bool
		batch, skipped, ended, wake = s.log.read(&cur, batch[:0])
		if skipped > 0 && !write(frame("skipped", []byte(`{"events":`+strconv.FormatInt(skipped, 10)+`}`))) {
			return
		}
		if len(batch) > 0 {
			if !write(batch...) {
				return
			}
			clear(batch)
			continue
		}
		if ended {
			write(frame("end", []byte("{}")))
			return
		}
		select {
		case <-wake:
		case <-beat.C:
			if !write([]byte(": ping\n\n")) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// plain reports whether a name is its own JSON string body: printable
// ASCII without quotes or backslashes, as every column name is.
func plain(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// marshal writes v as JSON, leaving <, > and & as they are
// ("gateway->db", not "gateway-\u003edb"). v holds only strings and
// finite numbers, which always encode.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// frame is one server-sent event.
func frame(event string, data []byte) []byte {
	b := make([]byte, 0, len(event)+len(data)+16)
	b = append(b, "event: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// encodeRow writes an interval as an "interval" event: one JSON object
// with the fields of timeseries.csv, in its column order (after "run",
// when run is not empty); values that are not finite numbers are null.
func encodeRow(run string, start, width time.Duration, columns []string, row []float64) []byte {
	b := make([]byte, 0, 64+24*len(columns))
	b = append(b, "event: interval\ndata: {"...)
	if run != "" {
		b = append(b, `"run":`...)
		b = append(b, marshal(run)...)
		b = append(b, ',')
	}
	b = appendField(b, metrics.ColTime, start.Seconds())
	b = append(b, ',')
	b = appendField(b, metrics.ColInterval, width.Seconds())
	for i, c := range columns {
		v := math.NaN()
		if i < len(row) {
			v = row[i]
		}
		b = append(b, ',')
		b = appendField(b, c, v)
	}
	return append(b, "}\n\n"...)
}

func appendField(b []byte, name string, v float64) []byte {
	if plain(name) {
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"')
	} else {
		b = append(b, marshal(name)...)
	}
	b = append(b, ':')
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

var pageTmpl = template.Must(template.New("live").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stormsim live: {{.Title}}</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; color: #222; margin: 1.5em auto; max-width: 1100px; padding: 0 1em; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.5em; border-bottom: 1px solid #ddd; }
#status { color: #666; }
#status.ended { color: #2a7a2a; }
#status.lost { color: #b22; }
{{.Style}}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p id="status">waiting for the first interval…</p>
<div id="charts"></div>
<div id="runs"></div>
<script>{{.Script}}</script>
<script>
(function () {
  "use strict";
  var status = document.getElementById("status");
  var probe = /[?&]probe\b/.test(location.search);
  var skipped = 0;
  var runs = {}, runCount = 0;
  function report(c) {
    var what = c.points > 0 ? c.points + " points" : c.rows + " intervals";
    if (runCount > 0) {
      what = runCount + " runs";
    }
    if (status.className !== "ended") {
      status.textContent = what + (skipped ? " (" + skipped + " skipped: this page fell behind)" : "");
    }
    if (probe) {
      var st = c.state();
      st.runs = runCount;
      fetch("probe", { method: "POST", body: JSON.stringify(st) });
    }
  }
  var charts = new StormCharts(document.getElementById("charts"), { onDraw: report });
  // chartsOf returns the charts of a row's run: the page's own, or, for
  // the runs of a comparison, a section per run.
  function chartsOf(row) {
    if (row.run === undefined) {
      return charts;
    }
    var c = runs[row.run];
    if (!c) {
      var sec = document.createElement("section"), h = document.createElement("h2");
      h.textContent = row.run;
      sec.appendChild(h);
      document.getElementById("runs").appendChild(sec);
      runCount++;
      c = runs[row.run] = new StormCharts(sec, { onDraw: report, prefix: "run" + runCount + "-" });
    }
    return c;
  }
  var es = new EventSource("events");
  es.addEventListener("interval", function (e) { var row = JSON.parse(e.data); chartsOf(row).add(row); });
  es.addEventListener("point", function (e) { charts.addPoint(JSON.parse(e.data)); });
  es.addEventListener("skipped", function (e) { skipped += JSON.parse(e.data).events; });
  es.addEventListener("end", function () {
    es.close();
    status.className = "ended";
    status.textContent = "run ended: " + (runCount > 0 ? runCount + " runs" :
      charts.points > 0 ? charts.points + " points" : charts.rows + " intervals");
    if (probe) {
      fetch("probe?end", { method: "POST", body: JSON.stringify(charts.state()) });
    }
  });
  es.onerror = function () {
    if (status.className !== "ended") {
      status.className = "lost";
      status.textContent = "connection lost; retrying…";
    }
  };
})();
</script>
</body>
</html>
`))

func renderPage(title string) ([]byte, error) {
	if title == "" {
		title = "stormsim"
	}
	var buf bytes.Buffer
	err := pageTmpl.Execute(&buf, struct {
		Title  string
		Style  template.CSS
		Script template.JS
	}{title, charts.Style(), charts.Script()})
	if err != nil {
		return nil, fmt.Errorf("live: page: %w", err)
	}
	return buf.Bytes(), nil
}

// PointOf is the point of one finished run: at x (named xLabel) on the
// line series, the run's goodput, largest amplification, p99 latency of
// succeeded requests (absent when none succeeded: a collapsed system is
// not fast) and share of offered requests that succeeded (absent when
// none were offered).
func PointOf(x float64, xLabel, series string, s *metrics.Summary) Point {
	v := map[string]float64{
		"goodput_rps":   s.GoodputRPS,
		"amplification": s.Amplification,
	}
	if s.Requests.Succeeded > 0 {
		v["latency_p99_ms"] = s.LatencyMs.P99
	}
	if s.Requests.Offered > 0 {
		v["success_ratio"] = float64(s.Requests.Succeeded) / float64(s.Requests.Offered)
	}
	return Point{X: x, XLabel: xLabel, Series: series, Values: v}
}
