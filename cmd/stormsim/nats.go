package main

import (
	"fmt"
	"net/url"

	"github.com/spf13/pflag"

	"github.com/stormsim/stormsim/broker"
	"github.com/stormsim/stormsim/load/driver"
)

// natsFlag is --nats: the NATS server (with JetStream) that runs a
// scenario's topics in serve and load SCENARIO, instead of one embedded
// in-process.
type natsFlag struct{ url string }

func (f *natsFlag) declare(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "nats", "", "run the scenario's topics on the NATS server with JetStream at `URL` (nats://host:port; loopback only unless --allow-remote) instead of one embedded in-process on 127.0.0.1")
}

// check validates the URL: a nats:// URL with a host, on loopback unless
// remote is allowed (tls:// is not supported: broker.Connect). Messages
// never show its credentials.
func (f *natsFlag) check(remote bool) error {
	if f.url == "" {
		return nil
	}
	u, err := url.Parse(f.url)
	if err != nil || u.Scheme != "nats" || u.Host == "" {
		return &exitError{exitUsage, fmt.Errorf("--nats: want nats://host:port, got %q", broker.Redact(f.url))}
	}
	if !remote {
		if err := driver.CheckLoopback(u.Host); err != nil {
			return &exitError{exitUsage, fmt.Errorf("--nats: %w (add --allow-remote)", err)}
		}
	}
	return nil
}
