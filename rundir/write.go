package rundir

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes what render produces to path atomically: it renders
// into a temporary file beside path and renames it into place, so a reader
// never sees half a file and a failed render leaves any previous file
// alone. Every file of a run, suite or bench folder is written this way.
func WriteFile(path string, render func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := render(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v to path as indented JSON (people read these files
// too), atomically as WriteFile does.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// File is one file of a run folder: its name and how to render it.
type File struct {
	Name   string
	Render func(io.Writer) error
}

// JSONFile is a File that holds v as indented JSON.
func JSONFile(name string, v any) File {
	return File{Name: name, Render: func(w io.Writer) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}}
}

// Write writes a run folder named runID under parent holding files (the
// harness gives config.json, history.jsonl, summary.json and
// report.html). The files go into a hidden staging folder that is then
// renamed into place, so a run folder is either complete or absent, even
// when the process dies half way. It returns the run folder's path.
func Write(parent, runID string, files ...File) (string, error) {
	if runID == "" {
		return "", fmt.Errorf("write run folder under %s: the run has no id", parent)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	stage, err := os.MkdirTemp(parent, "."+runID+"-")
	if err != nil {
		return "", fmt.Errorf("create run folder: %w", err)
	}
	defer os.RemoveAll(stage) // a no-op once renamed
	for _, f := range files {
		if err := WriteFile(filepath.Join(stage, f.Name), f.Render); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return "", fmt.Errorf("run folder %s: %w", stage, err)
	}
	dir := filepath.Join(parent, runID)
	if err := os.Rename(stage, dir); err != nil {
		return "", fmt.Errorf("move run folder into place: %w", err)
	}
	return dir, nil
}
