package main

import (
	"errors"
	"flag"
	"os"
)

// options are the manager's command-line settings. defaultOptions holds
// every default in one place.
type options struct {
	metricsAddr  string
	probeAddr    string
	probeWorkers int
	shardID      string
	dnsServer    string
}

func defaultOptions() options {
	return options{
		metricsAddr:  ":8080",
		probeAddr:    ":8081",
		probeWorkers: 64,
		shardID:      defaultShardID(),
	}
}

// defaultShardID is $POD_NAME, else the host name.
func defaultShardID() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	if host, err := os.Hostname(); err == nil {
		return host
	}
	return "webchecker"
}

func (o *options) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", o.metricsAddr, "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", o.probeAddr, "Address the /healthz and /readyz endpoints bind to.")
	fs.IntVar(&o.probeWorkers, "probe-workers", o.probeWorkers, "Maximum number of probes running at once.")
	fs.StringVar(&o.shardID, "shard-id", o.shardID, "Identity of this replica, written to status.shard (default: $POD_NAME, else the host name).")
	fs.StringVar(&o.dnsServer, "dns-server", o.dnsServer, "DNS server (host:port) that probes resolve host names with; empty uses the system resolver.")
}

func (o options) validate() error {
	var errs []error
	if o.probeWorkers < 1 {
		errs = append(errs, errors.New("--probe-workers must be at least 1"))
	}
	if o.shardID == "" {
		errs = append(errs, errors.New("--shard-id must not be empty"))
	}
	return errors.Join(errs...)
}
