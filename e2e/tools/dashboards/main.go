package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "", "directory the dashboards' JSON files are written to (or checked in, with -check)")
	check := flag.Bool("check", false, "do not write: fail when the files in -out differ from what the generator produces")
	flag.Parse()
	if err := run(*out, *check); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(dir string, check bool) error {
	if dir == "" {
		return fmt.Errorf("-out is required")
	}
	files, err := Generate()
	if err != nil {
		return err
	}
	if check {
		return Check(dir, files)
	}
	return Write(dir, files)
}
