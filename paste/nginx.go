package paste

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// nginx 1.22 defaults (ngx_http_proxy_module, ngx_http_upstream_module).
const (
	nginxReadTimeout = 60 * time.Second
	nginxMaxFails    = 1
	nginxFailTimeout = 10 * time.Second
	nginxMaxDepth    = 32
)

// nginxNextUpstream maps proxy_next_upstream's conditions to the classes
// they retry: error is a connect error (not_sent; an error after sending
// is a lost reply, which stormsim's callers see as timeout); http_500 and
// http_502 the error class stormsim's servers answer 500 for; http_503
// and http_429 unavailable; http_504 timeout. invalid_header, http_403
// and http_404 retry what stormsim's servers never answer: nothing.
var nginxNextUpstream = map[string][]policies.Outcome{
	"error":          {policies.NotSent},
	"timeout":        {policies.Timeout},
	"invalid_header": nil,
	"http_500":       {policies.Error},
	"http_502":       {policies.Error},
	"http_503":       {policies.Unavailable},
	"http_504":       {policies.Timeout},
	"http_429":       {policies.Unavailable},
	"http_403":       nil,
	"http_404":       nil,
	"non_idempotent": nil,
	"off":            nil,
}

// nginxRead are the directives that set the edge, where they may stand.
var nginxRead = []string{"proxy_pass", "proxy_next_upstream", "proxy_next_upstream_tries", "proxy_next_upstream_timeout",
	"proxy_read_timeout", "proxy_connect_timeout", "proxy_send_timeout"}

// nginxRefused are directives that change what the proxy retries in ways
// stormsim does not model: refused with their line rather than ignored.
var nginxRefused = map[string]string{
	"include":                   "not followed: paste the included directives into the file",
	"proxy_request_buffering":   "an unbuffered body is never passed on once sent; not modelled",
	"proxy_ignore_client_abort": "not modelled per edge",
	"proxy_cache":               "a cache answers without the upstream; not modelled",
	"proxy_store":               "not modelled",
	"grpc_pass":                 "use grpc_service_config for gRPC retries",
	"fastcgi_pass":              "only proxy_pass is read",
	"uwsgi_pass":                "only proxy_pass is read",
}

// NginxConf reads an nginx configuration (nginx.conf syntax, the whole
// file or a conf.d snippet) as deployed and returns the retry policy nginx
// applies to the requests of one location (its args as written, "/api/"
// or "= /x") or, with location "", to an upstream block by name: the
// nginx preset's rules with the file's proxy_next_upstream (default error
// timeout), proxy_next_upstream_tries (default 0: every server) and
// proxy_next_upstream_timeout (retry.retry_window), proxy_read_timeout as
// the attempt timeout (default 60 s), proxy_connect_timeout, the
// upstream's balancing, servers and max_fails/fail_timeout (outlier
// detection). Directives are inherited from http to server to location,
// the innermost winning. Every other directive is ignored and named in the
// note; those that change retries in ways stormsim cannot model are
// problems with their line.
func NginxConf(file string, data []byte, location, upstream string) (Policies, error) {
	r := newConfReader(file)
	p := Policies{Retried: true}
	root := r.nginxParse(string(data))
	if root == nil {
		return p, r.err()
	}
	httpBlock := root
	for _, d := range root.children {
		if d.name == "http" && d.block {
			httpBlock = d
		}
	}
	if httpBlock != root {
		for _, d := range root.children {
			if d != httpBlock {
				r.ignored[d.name] = true // main-context directives: processes, logs, events
			}
		}
	}
	upstreams := map[string]*directive{}
	for _, d := range httpBlock.children {
		if d.name == "upstream" && d.block && len(d.args) == 1 {
			upstreams[d.args[0]] = d
		}
	}
	chain, ok := r.nginxSelect(httpBlock, location, upstream)
	if !ok {
		return p, r.err()
	}
	loc := chain[len(chain)-1]
	isLoc := loc.name == "location"
	set := map[string]*directive{}
	for _, level := range chain {
		for _, d := range level.children {
			switch {
			case d.block:
			case slices.Contains(nginxRead, d.name):
				if d.line > 0 && set[d.name] != nil && slices.Contains(level.children, set[d.name]) {
					r.add(d.line, d.name, "given twice in one block (nginx refuses the file)")
				}
				set[d.name] = d
				r.read[d.name] = true
			case nginxRefused[d.name] != "":
				r.add(d.line, d.name, "not supported: %s", nginxRefused[d.name])
			default:
				r.ignored[d.name] = true
			}
		}
	}
	target := upstream
	if d := set["proxy_pass"]; d != nil && isLoc {
		host := strings.TrimPrefix(strings.TrimPrefix(first(d.args), "http://"), "https://")
		host, _, _ = strings.Cut(host, "/")
		switch {
		case upstreams[host] != nil && upstream != "" && host != upstream:
			r.add(d.line, "proxy_pass", "passes to another upstream than nginx_upstream names")
		case upstreams[host] != nil:
			target = host
		case upstream != "":
			r.add(d.line, "proxy_pass", "does not pass to the upstream nginx_upstream names")
		default:
			p.Servers = 1 // one address: a one-server upstream
		}
	} else if isLoc {
		r.add(loc.line, "proxy_pass", "the location passes nothing on: it needs proxy_pass")
	}
	rc := policies.RetryConfig{On: []policies.RetryClass{"not_sent", "timeout"}, EachServerOnce: true,
		Backoff: policies.BackoffConfig{Multiplier: 2}}
	p.HoldMethods = slices.Clone(policies.NginxHeldMethods)
	if d := set["proxy_next_upstream"]; d != nil {
		r.nginxNext(d, &rc, &p)
	}
	if d := set["proxy_next_upstream_tries"]; d != nil {
		if n, err := strconv.Atoi(first(d.args)); err != nil || n < 0 || n > 1000 || len(d.args) != 1 {
			r.add(d.line, d.name, "want a number of tries ≥ 0 (0: every server)")
		} else if rc.MaxAttempts != 1 { // off keeps one
			rc.MaxAttempts = n
		}
	}
	p.Timeout = nginxReadTimeout
	for _, k := range []string{"proxy_next_upstream_timeout", "proxy_read_timeout", "proxy_connect_timeout", "proxy_send_timeout"} {
		d := set[k]
		if d == nil {
			continue
		}
		t, ok := proxyDuration(first(d.args), time.Second)
		if !ok || len(d.args) != 1 {
			r.add(d.line, k, "want one nginx time (\"30s\", \"500ms\", \"1m\")")
			continue
		}
		switch k {
		case "proxy_next_upstream_timeout":
			rc.RetryWindow = t
		case "proxy_read_timeout":
			p.Timeout = t
		case "proxy_connect_timeout":
			p.ConnectTimeout = t
		}
	}
	p.Retry = rc
	if target != "" {
		u := upstreams[target]
		if u == nil {
			r.add(0, "upstream", "no upstream block named as nginx_upstream says")
		} else {
			r.nginxUpstream(u, &p)
		}
	}
	what := "location " + strings.Join(loc.args, " ")
	if !isLoc {
		what = "upstream " + target
	}
	p.Note = r.note(what)
	return p, r.err()
}

func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// nginxSelect returns the blocks whose directives apply, outermost first:
// http, server, the locations down to the one named; or http alone for an
// upstream. With neither named, the one location that proxies is chosen.
func (r *confReader) nginxSelect(httpBlock *directive, location, upstream string) ([]*directive, bool) {
	if location == "" && upstream != "" {
		return []*directive{httpBlock}, true
	}
	type found struct {
		chain []*directive
		line  int
	}
	var all, proxying []found
	var walk func(d *directive, chain []*directive)
	walk = func(d *directive, chain []*directive) {
		for _, c := range d.children {
			if !c.block || (c.name != "server" && c.name != "location") {
				continue
			}
			next := append(slices.Clone(chain), c)
			if c.name == "location" {
				if strings.Join(c.args, " ") == location {
					all = append(all, found{next, c.line})
				}
				if slices.ContainsFunc(c.children, func(x *directive) bool { return x.name == "proxy_pass" }) {
					proxying = append(proxying, found{next, c.line})
				}
			}
			walk(c, next)
		}
	}
	walk(httpBlock, []*directive{httpBlock})
	if location == "" {
		if len(proxying) != 1 {
			r.add(0, "", "%d locations use proxy_pass: name one with nginx_location (its arguments as written) or the upstream with nginx_upstream", len(proxying))
			return nil, false
		}
		return proxying[0].chain, true
	}
	switch len(all) {
	case 0:
		r.add(0, "location", "no location with the arguments nginx_location gives")
		return nil, false
	case 1:
		return all[0].chain, true
	}
	r.add(all[1].line, "location", "the location nginx_location names appears more than once (first at line %d)", all[0].line)
	return nil, false
}

// nginxNext reads proxy_next_upstream's conditions.
func (r *confReader) nginxNext(d *directive, rc *policies.RetryConfig, p *Policies) {
	on := map[policies.Outcome]bool{}
	for _, a := range d.args {
		cl, ok := nginxNextUpstream[a]
		switch {
		case !ok:
			r.add(d.line, d.name, "an unknown condition (want error, timeout, invalid_header, http_500, http_502, http_503, http_504, http_403, http_404, http_429, non_idempotent or off)")
			return
		case a == "off" && len(d.args) > 1:
			r.add(d.line, d.name, "off stands alone")
			return
		case a == "off":
			rc.MaxAttempts = 1
		case a == "non_idempotent":
			p.HoldMethods = []string{}
		}
		for _, o := range cl {
			on[o] = true
		}
	}
	if len(d.args) == 0 {
		r.add(d.line, d.name, "needs at least one condition")
	}
	rc.On = classes(on)
	if len(rc.On) == 0 {
		rc.MaxAttempts = 1
		rc.On = []policies.RetryClass{"not_sent"} // nothing stormsim's servers answer is retried
	}
}

// nginxUpstream reads an upstream block: its servers, balancing and
// passive health.
func (r *confReader) nginxUpstream(u *directive, p *Policies) {
	maxFails, failTimeout := -1, time.Duration(-1)
	for _, d := range u.children {
		switch d.name {
		case "server":
			p.Servers++
			mf, ft := nginxMaxFails, nginxFailTimeout
			for _, a := range d.args[min(1, len(d.args)):] {
				k, v, _ := strings.Cut(a, "=")
				switch k {
				case "max_fails":
					n, err := strconv.Atoi(v)
					if err != nil || n < 0 {
						r.add(d.line, "server.max_fails", "want a number ≥ 0")
					}
					mf = n
				case "fail_timeout":
					t, ok := proxyDuration(v, time.Second)
					if !ok {
						r.add(d.line, "server.fail_timeout", "want an nginx time")
					}
					ft = t
				case "weight":
					if v != "1" {
						r.add(d.line, "server.weight", "not supported: stormsim's replicas weigh the same")
					}
				case "backup", "down", "max_conns", "resolve", "service", "route", "slow_start", "drain":
					r.add(d.line, "server."+k, "not supported: stormsim's replicas are all in service, unlimited and equal")
				default:
					r.add(d.line, "server", "a parameter stormsim does not know")
				}
			}
			if maxFails >= 0 && (mf != maxFails || ft != failTimeout) {
				r.add(d.line, "server", "max_fails and fail_timeout differ between servers; stormsim's outlier detection is one per edge")
			}
			maxFails, failTimeout = mf, ft
			r.read["upstream.server"] = true
		case "least_conn":
			p.Balance = "least_request"
			r.read["upstream.least_conn"] = true
		case "random":
			p.Balance = "random"
			if slices.Contains(d.args, "two") {
				p.Balance = "p2c"
			}
			r.read["upstream.random"] = true
		case "hash", "ip_hash", "sticky":
			r.add(d.line, "upstream."+d.name, "not supported: stormsim's balancers do not hash by key")
		case "keepalive":
			// A failure on a cached connection is retried for free; stormsim's
			// servers never close one under a request (docs/policies.md).
			r.read["upstream.keepalive"] = true
		default:
			r.ignored["upstream."+d.name] = true
		}
	}
	if p.Servers == 0 {
		r.add(u.line, "upstream", "lists no server")
	}
	if maxFails < 0 {
		maxFails, failTimeout = nginxMaxFails, nginxFailTimeout
	}
	if maxFails > 0 && p.Servers > 1 {
		// nginx never marks the only server of an upstream down.
		p.Outlier = &Outlier{ConsecutiveFailures: maxFails, Interval: time.Second, BaseEjectionTime: max(failTimeout, time.Second),
			MaxEjectionTime: max(failTimeout, time.Second), MaxEjectionPercent: 100}
	}
}

// nginxParse reads nginx.conf syntax into a root block: statements end in
// ';', blocks are '{ ... }', '#' starts a comment, quotes group words.
func (r *confReader) nginxParse(src string) *directive {
	t := &nginxLexer{src: src, line: 1}
	root := &directive{block: true}
	if !r.nginxBlock(t, root, 0) {
		return nil
	}
	return root
}

func (r *confReader) nginxBlock(t *nginxLexer, into *directive, depth int) bool {
	if depth > nginxMaxDepth {
		r.add(t.line, "", "blocks nested more than %d deep", nginxMaxDepth)
		return false
	}
	var cur *directive
	for {
		tok, kind, err := t.next()
		if err != "" {
			r.add(t.line, "", "%s", err)
			return false
		}
		switch kind {
		case tokEOF:
			if cur != nil {
				r.add(cur.line, cur.name, "unexpected end of file: want ';'")
				return false
			}
			if depth > 0 {
				r.add(t.line, into.name, "unexpected end of file: the block opened at line %d is not closed", into.line)
				return false
			}
			return true
		case tokWord:
			if cur == nil {
				cur = &directive{name: tok, line: t.line}
			} else {
				cur.args = append(cur.args, tok)
			}
		case tokSemi:
			if cur == nil {
				r.add(t.line, "", "unexpected ';'")
				return false
			}
			into.children = append(into.children, cur)
			cur = nil
		case tokOpen:
			if cur == nil {
				r.add(t.line, "", "unexpected '{'")
				return false
			}
			cur.block = true
			if !r.nginxBlock(t, cur, depth+1) {
				return false
			}
			into.children = append(into.children, cur)
			cur = nil
		case tokClose:
			if cur != nil {
				r.add(cur.line, cur.name, "want ';' before '}'")
				return false
			}
			if depth == 0 {
				r.add(t.line, "", "unexpected '}'")
				return false
			}
			return true
		}
	}
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokWord
	tokSemi
	tokOpen
	tokClose
)

// nginxLexer splits nginx.conf syntax into words and punctuation,
// counting lines.
type nginxLexer struct {
	src  string
	pos  int
	line int
}

func (t *nginxLexer) next() (string, tokKind, string) {
	for t.pos < len(t.src) {
		c := t.src[t.pos]
		switch {
		case c == '\n':
			t.line++
			t.pos++
		case c == ' ' || c == '\t' || c == '\r':
			t.pos++
		case c == '#':
			for t.pos < len(t.src) && t.src[t.pos] != '\n' {
				t.pos++
			}
		case c == ';':
			t.pos++
			return "", tokSemi, ""
		case c == '{':
			t.pos++
			return "", tokOpen, ""
		case c == '}':
			t.pos++
			return "", tokClose, ""
		case c == '"' || c == '\'':
			start := t.line
			t.pos++
			var b strings.Builder
			for t.pos < len(t.src) && t.src[t.pos] != c {
				if t.src[t.pos] == '\\' && t.pos+1 < len(t.src) {
					t.pos++
				}
				if t.src[t.pos] == '\n' {
					t.line++
				}
				b.WriteByte(t.src[t.pos])
				t.pos++
			}
			if t.pos >= len(t.src) {
				return "", tokEOF, fmt.Sprintf("a quote opened at line %d is not closed", start)
			}
			t.pos++
			return b.String(), tokWord, ""
		default:
			start := t.pos
			for t.pos < len(t.src) {
				c := t.src[t.pos]
				if c == '$' && t.pos+1 < len(t.src) && t.src[t.pos+1] == '{' {
					end := strings.IndexByte(t.src[t.pos:], '}')
					if end < 0 {
						return "", tokEOF, "a ${ is not closed"
					}
					t.pos += end + 1
					continue
				}
				if c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '{' || c == '}' || c == '"' || c == '\'' || c == '#' {
					break
				}
				t.pos++
			}
			return t.src[start:t.pos], tokWord, ""
		}
	}
	return "", tokEOF, ""
}
