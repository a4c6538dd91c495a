// The charts of a stormsim run, drawn with uPlot. One module serves the
// live page (rows arrive one interval at a time) and report.html (every
// row at once), so what a user watched is what the report shows.
//
// A row is one object with the fields of timeseries.csv: t_s, interval_s
// and the columns ("offered", "goodput", "queue/db", ...). A point is one
// finished run of a sweep or a capacity search: {x, x_label, series,
// values: {name: number}}.
(function () {
  "use strict";

  var palette = ["#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#76b7b2", "#b07aa1",
    "#edc948", "#ff9da7", "#9c755f", "#bab0ac"];

  function num(v) {
    return typeof v === "number" && isFinite(v) ? v : null;
  }

  // perEntity returns the columns named "metric/entity", in their order.
  function perEntity(cols, metric) {
    var out = [];
    for (var i = 0; i < cols.length; i++) {
      if (cols[i].indexOf(metric + "/") === 0) {
        out.push(cols[i]);
      }
    }
    return out;
  }

  function entity(col) {
    return col.slice(col.indexOf("/") + 1);
  }

  // The interval charts. Each names its series from the row's columns;
  // a chart without series is not drawn.
  var specs = [
    {
      id: "throughput", title: "Offered vs goodput", unit: "req/s",
      series: function (cols) {
        var s = [];
        if (cols.indexOf("offered") >= 0) {
          s.push({ label: "offered", value: function (r) { return num(r.offered) === null ? null : r.offered / r.interval_s; } });
        }
        if (cols.indexOf("goodput") >= 0) {
          s.push({ label: "goodput", value: function (r) { return num(r.goodput); } });
        }
        return s;
      }
    },
    {
      id: "amplification", title: "Attempts per hop (per offered request)", unit: "attempts / request",
      // Without offered requests (stormsim serve, driven by someone
      // else) the hops' attempts per second.
      titleWithout: ["offered", "Attempts per hop", "attempts/s"],
      series: function (cols) {
        var perRequest = cols.indexOf("offered") >= 0;
        return perEntity(cols, "attempts").map(function (c) {
          return {
            label: entity(c), value: function (r) {
              var a = num(r[c]), o = num(r.offered);
              if (!perRequest) {
                return a === null ? null : a / r.interval_s;
              }
              return a === null || !o ? null : a / o;
            }
          };
        });
      }
    },
    {
      id: "queue", title: "Queue per service", unit: "waiting (time mean)",
      series: function (cols) {
        return perEntity(cols, "queue").map(function (c) {
          return { label: entity(c), value: function (r) { return num(r[c]); } };
        });
      }
    },
    {
      id: "latency", title: "Latency percentiles (succeeded requests)", unit: "ms",
      series: function (cols) {
        var s = [];
        // An interval where nothing succeeded has no latency: a gap, not
        // a 0 that would make a collapsed system look fast.
        [["latency_p50_ms", "p50"], ["latency_p99_ms", "p99"], ["latency_mean_ms", "mean"]].forEach(function (p) {
          if (cols.indexOf(p[0]) >= 0) {
            s.push({ label: p[1], value: function (r) { return r.succeeded === 0 ? null : num(r[p[0]]); } });
          }
        });
        return s;
      }
    },
    {
      id: "breaker", title: "Breaker state (0 closed, 1 open, 2 half-open)", unit: "state",
      series: function (cols) {
        return perEntity(cols, "breaker_state").map(function (c) {
          return { label: entity(c), value: function (r) { return num(r[c]); } };
        });
      }
    },
    {
      id: "budget", title: "Retry budget level", unit: "budget left",
      series: function (cols) {
        return perEntity(cols, "budget_level").map(function (c) {
          return { label: entity(c), value: function (r) { return num(r[c]); } };
        });
      }
    },
    {
      // Written only when the scenario follows its writes after UNKNOWN
      // (metrics.ColUnknownIntents, ColManualQueue).
      id: "unknown_intents", title: "Intents unknown over time (and the manual queue)", unit: "intents",
      series: function (cols) {
        var s = [];
        [["unknown_intents", "unknown intents"], ["manual_queue", "manual queue"]].forEach(function (p) {
          if (cols.indexOf(p[0]) >= 0) {
            s.push({ label: p[1], value: function (r) { return num(r[p[0]]); } });
          }
        });
        return s;
      }
    }
  ];

  // The titles and units of the values a point carries (live.PointOf).
  var pointTitles = {
    goodput_rps: ["Goodput (mean of replicas)", "req/s"],
    amplification: ["Largest amplification (mean of replicas)", "attempts / request"],
    latency_p99_ms: ["p99 latency of succeeded requests (mean of replicas)", "ms"],
    success_ratio: ["Share of requests that succeeded (mean of replicas)", "succeeded / offered"]
  };

  function width(root) {
    return Math.max(320, Math.min(1100, (root.clientWidth || 900) - 10));
  }

  // faultFill is the shading of a fault window, the static plots' own.
  var faultFill = "rgba(214, 39, 40, 0.15)", faultText = "#9b1c1c";

  // shadeFaults returns a uPlot hook that shades each fault window
  // ({at_s, for_s, label}) across the plot area, under the series, and
  // writes its label at the top, as the static plots do.
  function shadeFaults(faults) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox;
      ctx.save();
      faults.forEach(function (f, i) {
        var x0 = Math.max(u.valToPos(f.at_s, "x", true), b.left);
        var x1 = Math.min(u.valToPos(f.at_s + f.for_s, "x", true), b.left + b.width);
        if (!(x1 > x0)) {
          return;
        }
        ctx.fillStyle = faultFill;
        ctx.fillRect(x0, b.top, x1 - x0, b.height);
        ctx.fillStyle = faultText;
        ctx.font = Math.round(11 * devicePixelRatio) + "px sans-serif";
        ctx.textBaseline = "top";
        ctx.fillText(f.label || "fault", x0 + 3 * devicePixelRatio, b.top + (3 + 13 * (i % 3)) * devicePixelRatio);
      });
      ctx.restore();
      u.faultsDrawn = faults.length;
    };
  }

  // newPlot makes one chart. opts.colors maps a series label (a service,
  // an edge) to its colour, so a series has the colour the static plots
  // give it; opts.widths sets some labels' line widths, and the labels in
  // opts.dashed are drawn dashed; opts.faults are shaded on time charts.
  function newPlot(root, opts, id, title, xLabel, unit, labels, points) {
    var prefix = opts.prefix || "", colors = opts.colors || {};
    var box = document.createElement("div");
    box.className = "stormchart";
    box.id = "chart-" + prefix + id;
    root.appendChild(box);
    var series = [{ label: xLabel }];
    labels.forEach(function (l, i) {
      // Time series leave uPlot to show points where they are sparse (a
      // value between two gaps is a dot, not nothing).
      var s = { label: l, stroke: colors[l] || palette[i % palette.length], width: 1.5, spanGaps: !!points };
      if (opts.widths && l in opts.widths) {
        s.width = opts.widths[l];
      }
      if (opts.dashed && opts.dashed.indexOf(l) >= 0) {
        s.dash = [6, 4];
      }
      if (points) {
        s.points = { show: true };
      }
      series.push(s);
    });
    var data = [[]];
    labels.forEach(function () { data.push([]); });
    var uopts = {
      title: title, width: width(root), height: 240, series: series,
      scales: { x: { time: false } },
      axes: [{ label: xLabel }, { label: unit, size: 60 }]
    };
    if (!points && opts.faults && opts.faults.length) {
      uopts.hooks = { drawClear: [shadeFaults(opts.faults)] };
    }
    return { id: id, box: box, plot: new uPlot(uopts, data, box), data: data };
  }

  // StormCharts draws a run's charts into root. opts.onDraw(charts) is
  // called after each drawing; opts.prefix sets apart the element ids of
  // several StormCharts on one page; opts.colors ({label: "#rrggbb"})
  // gives series their colours; opts.faults ([{at_s, for_s, label}])
  // are shaded on the time charts.
  function StormCharts(root, opts) {
    this.root = root;
    this.opts = opts || {};
    this.charts = null; // interval charts, made from the first row
    this.rows = 0;
    this.pointCharts = {}; // by value name
    this.pointXs = []; // sorted x values of the points
    this.pointData = {}; // value name -> x -> series -> value
    this.pointSeries = []; // series names in arrival order
    this.pointLabel = "x";
    this.points = 0;
    this.drawnRows = 0; // the rows and points the last drawing showed
    this.drawnPoints = 0;
    this.pending = false;
    var self = this;
    window.addEventListener("resize", function () { self.resize(); });
  }

  // resize fits every chart to the element's width.
  StormCharts.prototype.resize = function () {
    var all = (this.charts || []).slice(), w = width(this.root);
    for (var id in this.pointCharts) {
      all.push(this.pointCharts[id]);
    }
    all.forEach(function (c) { c.plot.setSize({ width: w, height: 240 }); });
  };

  // add appends one interval row.
  StormCharts.prototype.add = function (row) {
    if (this.charts === null) {
      var cols = Object.keys(row), root = this.root;
      this.charts = [];
      for (var i = 0; i < specs.length; i++) {
        var s = specs[i].series(cols);
        if (s.length === 0) {
          continue;
        }
        var title = specs[i].title, unit = specs[i].unit, w = specs[i].titleWithout;
        if (w && cols.indexOf(w[0]) < 0) {
          title = w[1];
          unit = w[2];
        }
        var c = newPlot(root, this.opts, specs[i].id, title, "time (s)", unit,
          s.map(function (x) { return x.label; }), false);
        c.series = s;
        this.charts.push(c);
      }
    }
    for (var j = 0; j < this.charts.length; j++) {
      var ch = this.charts[j];
      ch.data[0].push(row.t_s);
      for (var k = 0; k < ch.series.length; k++) {
        ch.data[k + 1].push(ch.series[k].value(row));
      }
    }
    this.rows++;
    this.schedule();
  };

  // addPoint adds one finished point of a sweep or capacity search: one
  // chart per value name, x the swept value, one line per series.
  StormCharts.prototype.addPoint = function (p) {
    var x = num(p.x);
    if (x === null) {
      return;
    }
    var name = p.series || "run";
    if (this.pointSeries.indexOf(name) < 0) {
      this.pointSeries.push(name);
      // A new series changes every chart's lines: rebuild them.
      for (var id in this.pointCharts) {
        this.pointCharts[id].plot.destroy();
        this.root.removeChild(this.pointCharts[id].box);
      }
      this.pointCharts = {};
    }
    if (p.x_label) {
      this.pointLabel = p.x_label;
    }
    if (this.pointXs.indexOf(x) < 0) {
      this.pointXs.push(x);
      this.pointXs.sort(function (a, b) { return a - b; });
    }
    // Replicas of one point and line are averaged as they arrive.
    var names = Object.keys(p.values || {}).sort();
    for (var i = 0; i < names.length; i++) {
      var v = num(p.values[names[i]]);
      if (v === null) {
        continue;
      }
      var byX = this.pointData[names[i]] || (this.pointData[names[i]] = {});
      var byS = byX[x] || (byX[x] = {});
      var acc = byS[name] || (byS[name] = { sum: 0, n: 0 });
      acc.sum += v;
      acc.n++;
    }
    this.points++;
    this.schedule();
  };

  StormCharts.prototype.schedule = function () {
    if (this.pending) {
      return;
    }
    this.pending = true;
    var self = this;
    var raf = window.requestAnimationFrame || function (f) { return setTimeout(f, 16); };
    raf(function () { self.pending = false; self.draw(); });
  };

  // draw redraws every chart with the data so far.
  StormCharts.prototype.draw = function () {
    var i;
    for (i = 0; this.charts !== null && i < this.charts.length; i++) {
      this.charts[i].plot.setData(this.charts[i].data);
      this.charts[i].drawnXs = this.charts[i].data[0].length;
    }
    var names = Object.keys(this.pointData).sort(), self = this;
    for (i = 0; i < names.length; i++) {
      var n = names[i], c = this.pointCharts[n];
      if (!c) {
        var t = pointTitles[n] || [n, n];
        c = this.pointCharts[n] = newPlot(this.root, this.opts, "point-" + n.replace(/[^A-Za-z0-9_-]/g, "_"), t[0],
          this.pointLabel, t[1], this.pointSeries, true);
      }
      var data = [this.pointXs.slice()];
      this.pointSeries.forEach(function (s) {
        data.push(self.pointXs.map(function (x) {
          var v = self.pointData[n][x];
          return v && s in v ? v[s].sum / v[s].n : null;
        }));
      });
      c.data = data;
      c.plot.setData(data);
      c.drawnXs = data[0].length;
    }
    // What this drawing shows: rows and points may arrive before onDraw
    // runs, and state must describe the canvas, not the data since.
    this.drawnRows = this.rows;
    this.drawnPoints = this.points;
    if (this.opts.onDraw) {
      // uPlot paints in a microtask after setData: report after it.
      setTimeout(function () { self.opts.onDraw(self); }, 0);
    }
  };

  // state describes what is drawn, for tests: the rows and points of the
  // last drawing, and each chart's id, its number of x values and a digest
  // of its canvas pixels.
  StormCharts.prototype.state = function () {
    var out = [], all = (this.charts || []).slice();
    for (var id in this.pointCharts) {
      all.push(this.pointCharts[id]);
    }
    all.forEach(function (c) {
      var url = c.plot.ctx.canvas.toDataURL(), h = 0;
      for (var i = 0; i < url.length; i++) {
        h = (h * 31 + url.charCodeAt(i)) | 0;
      }
      out.push({ id: c.id, xs: c.drawnXs || 0, digest: h, faults: c.plot.faultsDrawn || 0 });
    });
    return { rows: this.drawnRows, points: this.drawnPoints, charts: out };
  };

  // fromSeries draws a whole time series at once: {start_s, interval_s,
  // columns: [...], rows: [[...], ...]}, as report.html embeds it.
  StormCharts.fromSeries = function (root, ts, opts) {
    var c = new StormCharts(root, opts);
    for (var i = 0; i < ts.rows.length; i++) {
      var row = { t_s: ts.start_s + i * ts.interval_s, interval_s: ts.interval_s };
      for (var j = 0; j < ts.columns.length; j++) {
        row[ts.columns[j]] = ts.rows[i][j];
      }
      c.add(row);
    }
    c.draw();
    return c;
  };

  // sameValues reports whether two value arrays are the same, null equal
  // to null.
  function sameValues(a, b) {
    if (a.length !== b.length) {
      return false;
    }
    for (var i = 0; i < a.length; i++) {
      if (a[i] !== b[i]) {
        return false;
      }
    }
    return true;
  }

  // compare overlays the variants of a comparison, as compare's report.html
  // embeds them: cmp is {charts: [{id, title, unit}], variants: [{name,
  // color, start_s, interval_s, values: {id: [...]}}]}. Each chart has a
  // line per variant in its colour over the longest variant's intervals
  // (variants share their arrivals, so their intervals line up); a line
  // identical to an earlier variant's is dashed and its legend says whose
  // it repeats, as the static overlays do. opts as for StormCharts.
  StormCharts.compare = function (root, cmp, opts) {
    var c = new StormCharts(root, opts), longest = null;
    cmp.variants.forEach(function (v) {
      var n = 0;
      for (var id in v.values) {
        n = Math.max(n, v.values[id].length);
      }
      v.n = n;
      if (longest === null || n > longest.n) {
        longest = v;
      }
    });
    c.charts = [];
    if (longest === null) {
      c.draw();
      return c;
    }
    var xs = [];
    for (var i = 0; i < longest.n; i++) {
      xs.push(longest.start_s + i * longest.interval_s);
    }
    cmp.charts.forEach(function (spec) {
      var vs = cmp.variants.filter(function (v) { return spec.id in v.values; });
      var lines = vs.map(function (v) {
        var ys = v.values[spec.id].slice();
        while (ys.length < xs.length) {
          ys.push(null);
        }
        return ys;
      });
      var labels = vs.map(function (v, k) {
        for (var j = 0; j < k; j++) {
          if (sameValues(lines[k], lines[j])) {
            return v.name + " = " + vs[j].name;
          }
        }
        return v.name;
      });
      var colors = {};
      vs.forEach(function (v, k) { colors[labels[k]] = v.color; });
      var o = {};
      for (var key in c.opts) {
        o[key] = c.opts[key];
      }
      o.colors = colors;
      o.dashed = labels.filter(function (l) { return l.indexOf(" = ") >= 0; });
      // Variants share their arrivals, so their lines often coincide: earlier
      // lines are drawn wider, so a later one over them leaves a halo of
      // their colour (the static overlays' rule).
      o.widths = {};
      labels.forEach(function (l, k) {
        o.widths[l] = vs.length < 2 ? 1.5 : 1.5 + 2 * (vs.length - 1 - k) / (vs.length - 1);
      });
      o.prefix = "cmp-";
      var ch = newPlot(root, o, spec.id, spec.title, "time (s)", spec.unit, labels, false);
      ch.data = [xs.slice()].concat(lines);
      c.charts.push(ch);
    });
    c.rows = xs.length;
    c.draw();
    return c;
  };

  window.StormCharts = StormCharts;
})();
