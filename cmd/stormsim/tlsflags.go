package main

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/inputfile"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/serve"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
)

// tlsFlags are serve's and load's TLS flags: serve over TLS with a
// self-signed certificate made at start, write that certificate out, and
// trust it when driving a --target.
type tlsFlags struct {
	on      bool
	certOut string
	ca      string
}

func (f *tlsFlags) serveFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "tls", false, "serve every service over TLS with a self-signed certificate for 127.0.0.1 made at start")
	fs.StringVar(&f.certOut, "tls-cert", "", "with --tls, write the certificate (PEM) to `FILE`, for `load --tls-ca`")
}

func (f *tlsFlags) loadFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "tls", false, "SCENARIO mode: serve the services over TLS (a self-signed certificate made at start)")
	fs.StringVar(&f.ca, "tls-ca", "", "--target mode: trust the certificate (PEM) in `FILE`, as `serve --tls-cert` writes it")
}

// writeCert writes a TLS cluster's certificate where --tls-cert asks.
func (f *tlsFlags) writeCert(pem []byte) error {
	if f.certOut == "" {
		return nil
	}
	if !f.on {
		return &exitError{exitUsage, fmt.Errorf("--tls-cert needs --tls")}
	}
	return metrics.WriteFileAtomic(f.certOut, func(w io.Writer) error { _, err := w.Write(pem); return err })
}

// maxCAFile bounds --tls-ca: a bundle of certificates is kilobytes.
const maxCAFile = 1 << 20

// client is the HTTP client trusting --tls-ca for target, or nil without
// it. --tls-ca with a target that is not https:// is a usage error: it
// would be ignored.
func (f *tlsFlags) client(target string, conns, workers int) (*http.Client, error) {
	if f.ca == "" {
		return nil, nil
	}
	if !strings.HasPrefix(strings.ToLower(target), "https://") {
		return nil, &exitError{exitUsage, fmt.Errorf("--tls-ca applies to an https:// --target, not %q", target)}
	}
	pem, err := inputfile.Read(f.ca, maxCAFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	cfg, err := serve.ClientTLS(pem)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca %s: %w", f.ca, err)
	}
	tr := transport.NewHTTPTransport(cmp.Or(conns, workers, driver.DefaultWorkers))
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}
