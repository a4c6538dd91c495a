// Package proxies holds the differential tests of the nginx and haproxy
// retry presets and of pasted nginx_conf and haproxy_cfg files against the
// real binaries: stormsim's emulated services (serve) as the upstream
// servers behind a real nginx or HAProxy on loopback, driven by stormsim's
// load driver, and the simulator's run of the same scenario with the
// preset or the very config file the proxy runs. The proxy's own log is
// the ground truth of what it did: nginx's $upstream_addr and
// $upstream_status, HAProxy's retries field (%rc).
//
// The binaries come from Debian's packages (`make proxy-tools`, which CI
// runs); without them the tests skip, except under CI=true, where they
// fail. The package has no non-test code.
package proxies
