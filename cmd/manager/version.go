package main

// version and revision identify the build, as webchecker_build_info's
// labels: the release (the chart's appVersion) and the commit. The Makefile
// and the Dockerfile set them with
// -ldflags "-X main.version=<appVersion> -X main.revision=<commit>"; left
// empty (a plain go build), they come from the build information Go
// records in the binary (see metrics.ReadBuildInfo).
var version, revision string
