package main

import (
	"os"

	"encoding/json"
	"github.com/lockbench/lockbench/report"
	"io"
)

// writeBenchFile writes Go benchmark lines for benchstat.
func writeBenchFile(path string, sums []report.Summary) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteBenchLines(f, sums); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func firstN[T any](xs []T, n int) []T {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
