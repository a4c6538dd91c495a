package paste

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/policies"
)

// HAProxy 2.6 defaults (doc/configuration.txt; src/backend.c).
const (
	haproxyRetries    = 3
	haproxyTurnAround = time.Second // the cap of min(timeout connect, 1 s)
)

// haproxyRetryOn maps retry-on's keywords to the classes they retry:
// conn-failure a failed connect (not_sent); empty-response and
// response-timeout a sent attempt with no answer (timeout); status codes
// as stormsim's servers answer them. junk-response, 0rtt-rejected, 401,
// 403 and 404 retry what stormsim's servers never answer: nothing.
var haproxyRetryOn = map[string][]policies.Outcome{
	"none":                 nil,
	"conn-failure":         {policies.NotSent},
	"empty-response":       {policies.Timeout},
	"junk-response":        nil,
	"response-timeout":     {policies.Timeout},
	"0rtt-rejected":        nil,
	"401":                  nil,
	"403":                  nil,
	"404":                  nil,
	"408":                  {policies.Timeout},
	"425":                  {policies.InProgress},
	"500":                  {policies.Error},
	"501":                  {policies.Error},
	"502":                  {policies.Error},
	"503":                  {policies.Unavailable},
	"504":                  {policies.Timeout},
	"all-retryable-errors": {policies.NotSent, policies.Timeout, policies.Error, policies.Unavailable},
}

// haproxySections are the keywords that open a section.
var haproxySections = []string{"global", "defaults", "frontend", "backend", "listen", "peers", "resolvers", "userlist",
	"mailers", "program", "http-errors", "ring", "cache"}

// haproxyRefused are a backend's keywords that change retries or queueing
// in ways stormsim does not model: problems with their line.
var haproxyRefused = map[string]string{
	"option abortonclose": "not modelled per edge (HAProxy's default, off, is stormsim's: a request whose client left is still served)",
	"option persist":      "persistence is not modelled",
	"cookie":              "persistence is not modelled",
	"stick":               "stickiness is not modelled",
	"stick-table":         "stickiness is not modelled",
	"fullconn":            "dynamic maxconn is not modelled",
	"timeout tarpit":      "tarpits are not modelled",
}

// HAProxyCfg reads an HAProxy configuration as deployed and returns the
// retry policy of one backend (or listen section; "" when the file has one):
// retries + 1 attempts (default 3 retries), retry-on (default
// conn-failure; a new retry-on replaces it), retries on the same server
// with option redispatch's interval (default −1: the last retry; every
// retry with balance roundrobin and more than one server, as HAProxy
// redispatches such retries at once), the turn-around min(timeout
// connect, 1 s) after a connect failure, timeout server as the attempt
// timeout, timeout connect, balance, the servers, and http-request
// disable-l7-retry (alone: only connect failures are retried; with "if
// METH_POST" or "if { method POST PUT }": writes of those methods are
// held), and the servers' maxconn (equal on every server, else refused
// with the line) with timeout queue (default: timeout connect's value) as
// a pool of maxconn per replica whose queue answers 503. The backend
// inherits its defaults section. Every other keyword is ignored and named
// in the note.
func HAProxyCfg(file string, data []byte, backend string) (Policies, error) {
	r := newConfReader(file)
	p := Policies{Retried: true}
	sections := r.haproxyParse(string(data))
	if sections == nil {
		return p, r.err()
	}
	var be *directive
	var defaults *directive
	var lastDefaults *directive
	named := map[string]*directive{}
	var candidates []*directive
	for _, s := range sections {
		switch s.name {
		case "defaults":
			lastDefaults = s
			if len(s.args) > 0 {
				named[s.args[0]] = s
			}
		case "backend", "listen":
			candidates = append(candidates, s)
			if (backend == "" || (len(s.args) > 0 && s.args[0] == backend)) && be == nil {
				be, defaults = s, lastDefaults
				if i := slices.Index(s.args, "from"); i >= 0 && i+1 < len(s.args) {
					defaults = named[s.args[i+1]]
				}
			}
		}
	}
	switch {
	case backend == "" && len(candidates) != 1:
		r.add(0, "", "%d backend or listen sections: name one with haproxy_backend", len(candidates))
		return p, r.err()
	case be == nil:
		r.add(0, "backend", "no backend or listen section named as haproxy_backend says")
		return p, r.err()
	}
	for _, s := range sections {
		if s != be && s != defaults {
			r.ignored[s.name+" section"] = true
		}
	}
	set := map[string]*directive{}
	var servers []*directive
	var defaultServer []*directive
	var disables []*directive
	for _, sec := range []*directive{defaults, be} {
		if sec == nil {
			continue
		}
		own := map[string]bool{}
		for _, d := range sec.children {
			key := haproxyKey(d)
			switch {
			case key == "server":
				if sec == be {
					servers = append(servers, d)
				}
			case key == "default-server":
				defaultServer = append(defaultServer, d)
			case key == "http-request disable-l7-retry":
				disables = append(disables, d)
				r.read[key] = true
			case haproxyRefused[key] != "":
				r.add(d.line, key, "not supported: %s", haproxyRefused[key])
			case slices.Contains([]string{"retries", "retry-on", "option redispatch", "timeout connect", "timeout server",
				"timeout queue", "balance"}, key):
				if own[key] {
					r.add(d.line, key, "given twice in one section")
				}
				own[key] = true
				set[key] = d
				r.read[key] = true
			default:
				r.ignored[key] = true
			}
		}
	}
	rc := policies.RetryConfig{MaxAttempts: haproxyRetries + 1, On: []policies.RetryClass{"not_sent"}, SameServer: true,
		TurnAround: haproxyTurnAround, Backoff: policies.BackoffConfig{Multiplier: 2}}
	if d := set["retries"]; d != nil {
		n, err := strconv.Atoi(first(d.args))
		if err != nil || n < 0 || n > 1000 || len(d.args) != 1 {
			r.add(d.line, "retries", "want a number of retries ≥ 0")
		} else {
			rc.MaxAttempts = n + 1
		}
	}
	if d := set["retry-on"]; d != nil {
		on := map[policies.Outcome]bool{}
		for _, a := range d.args {
			cl, ok := haproxyRetryOn[a]
			if !ok {
				r.add(d.line, "retry-on", "an unknown keyword (want none, conn-failure, empty-response, junk-response, response-timeout, 0rtt-rejected, a status among 401 403 404 408 425 500 501 502 503 504, or all-retryable-errors)")
				continue
			}
			if a == "none" && len(d.args) > 1 {
				r.add(d.line, "retry-on", "none stands alone")
			}
			for _, o := range cl {
				on[o] = true
			}
		}
		if len(d.args) == 0 {
			r.add(d.line, "retry-on", "needs a keyword")
		}
		rc.On = classes(on)
		if len(rc.On) == 0 {
			rc.MaxAttempts, rc.On = 1, []policies.RetryClass{"not_sent"}
		}
	}
	balance := "roundrobin"
	if d := set["balance"]; d != nil {
		balance = first(d.args)
		switch balance {
		case "roundrobin", "static-rr":
			p.Balance = "round_robin"
		case "leastconn":
			p.Balance = "least_request"
		case "random":
			p.Balance = "random"
			if len(d.args) > 1 && d.args[1] == "2" {
				p.Balance = "p2c"
			}
		default:
			r.add(d.line, "balance", "not supported: stormsim balances by round robin, least requests or at random, never by key")
		}
	}
	if d := set["timeout connect"]; d != nil {
		if t, ok := r.haproxyTime(d); ok {
			p.ConnectTimeout = t
			if t > 0 {
				rc.TurnAround = min(t, haproxyTurnAround)
			}
		}
	}
	if d := set["timeout server"]; d != nil {
		if t, ok := r.haproxyTime(d); ok {
			p.Timeout = t
		}
	}
	queue, queueSet := p.ConnectTimeout, false // timeout queue unset: timeout connect's value
	if d := set["timeout queue"]; d != nil {
		if t, ok := r.haproxyTime(d); ok {
			queue, queueSet = t, true
		}
	}
	maxconn := 0 // no limit
	for _, d := range defaultServer {
		if n, ok := r.haproxyServer(d, false); ok {
			maxconn = n
		}
	}
	var firstSrv *directive
	for _, d := range servers {
		n, ok := r.haproxyServer(d, true)
		if !ok {
			n = maxconn
		}
		switch {
		case firstSrv == nil:
			firstSrv, p.MaxConn = d, n
		case n != p.MaxConn:
			r.add(d.line, "server.maxconn", "%d, but the server at line %d has %d: stormsim's replicas share one pool.size (0: no limit)", n, firstSrv.line, p.MaxConn)
		}
	}
	if p.MaxConn > 0 {
		p.QueueTimeout = queue
	} else if queueSet {
		r.ignored["timeout queue (no server maxconn)"] = true
		delete(r.read, "timeout queue")
	}
	p.Servers = len(servers)
	if len(servers) > 0 {
		r.read["server"] = true
	}
	if d := set["option redispatch"]; d != nil {
		if d.name == "no" {
			rc.Redispatch = 0
		} else {
			rc.Redispatch = -1
			if len(d.args) > 1 {
				n, err := strconv.Atoi(d.args[1])
				if err != nil || n == 0 || len(d.args) > 2 {
					r.add(d.line, "option redispatch", "want a non-zero interval")
				}
				rc.Redispatch = n
			}
			if (balance == "roundrobin" || balance == "static-rr") && p.Servers > 1 {
				// stream_choose_redispatch: a non-persistent round-robin
				// stream redispatches every retry at once.
				rc.Redispatch = 1
			}
		}
	}
	for _, d := range disables {
		r.haproxyDisableL7(d, &rc, &p)
	}
	p.Retry = rc
	p.Note = r.note("backend " + first(be.args))
	return p, r.err()
}

// haproxyKey names a keyword line: "timeout server", "option redispatch"
// (also for "no option redispatch"), "http-request disable-l7-retry", or
// the first word.
func haproxyKey(d *directive) string {
	name, args := d.name, d.args
	if name == "no" && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "timeout", "option", "http-request", "http-response", "stick", "tcp-request", "tcp-response":
		if len(args) > 0 {
			return name + " " + args[0]
		}
	}
	return name
}

func (r *confReader) haproxyTime(d *directive) (time.Duration, bool) {
	args := d.args
	if d.name == "no" {
		args = args[1:]
	}
	if len(args) != 2 {
		r.add(d.line, haproxyKey(d), "want one time (\"5s\", \"500\" in ms)")
		return 0, false
	}
	t, ok := proxyDuration(args[1], time.Millisecond)
	if !ok {
		r.add(d.line, haproxyKey(d), "want a time (\"5s\", \"500\" in ms)")
	}
	return t, ok
}

// haproxyServer checks a server or default-server line's parameters and
// returns its maxconn, if it gives one (0: no limit).
func (r *confReader) haproxyServer(d *directive, isServer bool) (maxconn int, given bool) {
	args := d.args
	if isServer {
		if len(args) < 2 {
			r.add(d.line, "server", "want a name and an address")
			return 0, false
		}
		args = args[2:]
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "maxconn":
			n, err := strconv.Atoi(first(args[i+1:]))
			if err != nil || n < 0 || n > 1_000_000 {
				r.add(d.line, d.name+".maxconn", "want a number of connections ≥ 0")
			} else {
				maxconn, given = n, true
				r.read["server.maxconn"] = true
			}
			i++
		case "maxqueue", "minconn":
			r.add(d.line, d.name+"."+a, "not supported: the queue is unbounded and maxconn fixed (stormsim's pool.size per replica)")
			i++
		case "weight":
			if i+1 < len(args) && args[i+1] != "1" {
				r.add(d.line, d.name+".weight", "not supported: stormsim's replicas weigh the same")
			}
			i++
		case "backup", "disabled":
			r.add(d.line, d.name+"."+a, "not supported: stormsim's replicas are all in service")
		case "observe", "on-error", "error-limit", "on-marked-down", "on-marked-up":
			r.add(d.line, d.name+"."+a, "not supported: HAProxy's passive health is not modelled")
			i++
		case "check":
			r.ignored[d.name+".check"] = true // active checks: a dead server stays in rotation here
		default:
			r.ignored[d.name+" parameters"] = true
		}
	}
	return maxconn, given
}

// haproxyDisableL7 reads http-request disable-l7-retry: alone, only
// connect failures are retried; "if" with METH_X names or { method X Y }
// holds those methods' writes.
func (r *confReader) haproxyDisableL7(d *directive, rc *policies.RetryConfig, p *Policies) {
	cond := d.args[1:]
	if len(cond) == 0 {
		// Connect failures are not layer-7 retries: they stay, if retried.
		if !slices.Contains(rc.On, "not_sent") {
			rc.MaxAttempts = 1
		}
		rc.On = []policies.RetryClass{"not_sent"}
		return
	}
	bad := func() {
		r.add(d.line, "http-request disable-l7-retry", "only \"if METH_POST\" (METH_X names joined by or) or \"if { method POST PUT }\" is supported")
	}
	if cond[0] != "if" || len(cond) < 2 {
		bad()
		return
	}
	var methods []string
	rest := cond[1:]
	if rest[0] == "{" {
		if len(rest) < 4 || rest[1] != "method" || rest[len(rest)-1] != "}" {
			bad()
			return
		}
		methods = rest[2 : len(rest)-1]
	} else {
		for i, a := range rest {
			switch {
			case i%2 == 1 && (a == "or" || a == "||"):
			case i%2 == 0 && strings.HasPrefix(a, "METH_"):
				methods = append(methods, strings.TrimPrefix(a, "METH_"))
			default:
				bad()
				return
			}
		}
	}
	p.HoldMethods = append(p.HoldMethods, methods...)
}

// haproxyParse reads the file's sections: each keyword line belongs to the
// section opened above it.
func (r *confReader) haproxyParse(src string) []*directive {
	var out []*directive
	var cur *directive
	for i, line := range strings.Split(src, "\n") {
		words, msg := haproxyWords(line)
		if msg != "" {
			r.add(i+1, "", "%s", msg)
			continue
		}
		if len(words) == 0 {
			continue
		}
		d := &directive{name: words[0], args: words[1:], line: i + 1}
		if slices.Contains(haproxySections, d.name) {
			d.block = true
			out = append(out, d)
			cur = d
			continue
		}
		if cur == nil {
			r.add(i+1, "", "a keyword before any section")
			continue
		}
		cur.children = append(cur.children, d)
	}
	if len(r.probs) > 0 {
		return nil
	}
	return out
}

// haproxyWords splits one line into words: blanks separate, '#' starts a
// comment, quotes and backslashes escape.
func haproxyWords(line string) ([]string, string) {
	var words []string
	var b strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			b.WriteByte(c)
		case c == '\\' && i+1 < len(line):
			i++
			b.WriteByte(line[i])
			inWord = true
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == '#':
			i = len(line)
		case c == ' ' || c == '\t' || c == '\r':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, "a quote is not closed"
	}
	if inWord {
		words = append(words, b.String())
	}
	return words, ""
}
