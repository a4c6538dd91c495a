# Writes the hand-made trace files of the golden tests: three requests of
# a shop whose client calls frontend, which calls inventory and pricing at
# once, then payments. Known answers: request 1's first attempt times out
# at 200ms and is retried after 20ms; pricing answers 503 once in request
# 2 and is retried after 5ms; request 3 is clean. Run from this directory:
#   python3 gen_handwritten.py
import json

T0 = 1_700_000_000_000_000_000  # ns
MS = 1_000_000

spans = []  # (trace, span, parent, service, name, kind, start_ms, end_ms, http_status, status_err, msg, resend)

def add(tr, sid, parent, svc, kind, s, e, code=0, err=False, msg="", resend=None, name=None):
    spans.append(dict(trace=tr, span=sid, parent=parent, svc=svc, kind=kind, s=s, e=e, code=code, err=err, msg=msg, resend=resend, name=name or (svc + " " + kind)))

def request(n, t, timeout_first, pricing_fails):
    tr = "%032x" % (0xabc000 + n)
    sid = lambda k: "%016x" % (n * 256 + k)
    t_end = t + (260 if timeout_first else 40) + (7 if pricing_fails else 0)
    add(tr, sid(1), "", "shop-client", "internal", t, t_end, name="checkout")
    a = t
    if timeout_first:
        # attempt 1: gave up at 200ms; frontend still answered later
        add(tr, sid(2), sid(1), "shop-client", "client", a, a + 200, err=True, msg="context deadline exceeded", resend=0)
        add(tr, sid(3), sid(2), "frontend", "server", a + 1, a + 230, code=200)
        a = a + 200 + 20
        add(tr, sid(4), sid(1), "shop-client", "client", a, t_end, code=200, resend=1)
        srv = sid(5)
        add(tr, srv, sid(4), "frontend", "server", a + 1, t_end - 1, code=200)
    else:
        add(tr, sid(2), sid(1), "shop-client", "client", a, t_end, code=200, resend=0)
        srv = sid(3)
        add(tr, srv, sid(2), "frontend", "server", a + 1, t_end - 1, code=200)
    f = a + 3  # frontend's own work: 2ms, then the parallel group
    add(tr, sid(10), srv, "frontend", "client", f, f + 10, code=200, resend=0)
    add(tr, sid(11), sid(10), "inventory", "server", f + 1, f + 9, code=200)
    if pricing_fails:
        add(tr, sid(12), srv, "frontend", "client", f, f + 3, code=503, resend=0)
        add(tr, sid(13), sid(12), "pricing", "server", f + 1, f + 2, code=503, err=True)
        add(tr, sid(14), srv, "frontend", "client", f + 8, f + 15, code=200, resend=1)
        add(tr, sid(15), sid(14), "pricing", "server", f + 9, f + 14, code=200)
        g = f + 15
    else:
        add(tr, sid(12), srv, "frontend", "client", f, f + 6, code=200, resend=0)
        add(tr, sid(13), sid(12), "pricing", "server", f + 1, f + 5, code=200)
        g = f + 10
    add(tr, sid(20), srv, "frontend", "client", g, g + 20, code=200, resend=0)
    add(tr, sid(21), sid(20), "payments", "server", g + 1, g + 19, code=200)

request(1, 0, True, False)
request(2, 1000, False, True)
request(3, 2000, False, False)

KIND = {"internal": 1, "server": 2, "client": 3}

def otlp():
    by = {}
    for s in spans:
        by.setdefault(s["svc"], []).append(s)
    rs = []
    for svc, ss in by.items():
        out = []
        for s in ss:
            attrs = []
            if s["code"]:
                attrs.append({"key": "http.response.status_code", "value": {"intValue": str(s["code"])}})
            if s["resend"] is not None:
                attrs.append({"key": "http.request.resend_count", "value": {"intValue": str(s["resend"])}})
            sp = {"traceId": s["trace"], "spanId": s["span"], "name": s["name"], "kind": KIND[s["kind"]],
                  "startTimeUnixNano": str(T0 + s["s"] * MS), "endTimeUnixNano": str(T0 + s["e"] * MS), "attributes": attrs}
            if s["parent"]:
                sp["parentSpanId"] = s["parent"]
            if s["err"]:
                sp["status"] = {"code": 2, "message": s["msg"]}
            out.append(sp)
        rs.append({"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": svc}}]},
                   "scopeSpans": [{"scope": {"name": "handwritten"}, "spans": out}]})
    return {"resourceSpans": rs}

def jaeger():
    procs, pid = {}, {}
    for s in spans:
        if s["svc"] not in pid:
            pid[s["svc"]] = "p%d" % (len(pid) + 1)
            procs[pid[s["svc"]]] = {"serviceName": s["svc"], "tags": []}
    data = []
    for tr in sorted({s["trace"] for s in spans}):
        out = []
        for s in spans:
            if s["trace"] != tr:
                continue
            tags = [{"key": "span.kind", "type": "string", "value": s["kind"]}]
            if s["code"]:
                tags.append({"key": "http.status_code", "type": "int64", "value": s["code"]})
            if s["resend"] is not None:
                tags.append({"key": "http.request.resend_count", "type": "int64", "value": s["resend"]})
            if s["err"]:
                tags.append({"key": "error", "type": "bool", "value": True})
                if s["msg"]:
                    tags.append({"key": "otel.status_description", "type": "string", "value": s["msg"]})
            refs = [{"refType": "CHILD_OF", "traceID": tr, "spanID": s["parent"]}] if s["parent"] else []
            out.append({"traceID": tr, "spanID": s["span"], "operationName": s["name"], "references": refs,
                        "startTime": (T0 + s["s"] * MS) // 1000, "duration": (s["e"] - s["s"]) * 1000,
                        "tags": tags, "processID": pid[s["svc"]]})
        data.append({"traceID": tr, "spans": out, "processes": procs})
    return {"data": data}

with open("shop.otlp.json", "w") as f:
    json.dump(otlp(), f, indent=1)
    f.write("\n")
with open("shop.jaeger.json", "w") as f:
    json.dump(jaeger(), f, indent=1)
    f.write("\n")
