package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// checkDir checks, before anything runs, that dir (flag --name) is a
// folder lockbench can write in, or (unless mustExist) one it can create:
// its nearest existing parent is a writable folder. Nothing is left
// behind. A run that would only find out after minutes costs the user
// those minutes.
func checkDir(name, dir string, mustExist bool) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return badInputf("--%s %s: is a file, not a folder", name, dir)
	case err == nil:
		return writable(name, dir, dir)
	case !missing(err):
		return badInputf("--%s %s: %v", name, dir, err)
	case mustExist:
		return badInputf("--%s %s: no such folder", name, dir)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	for {
		fi, err := os.Stat(parent)
		switch {
		case err == nil && !fi.IsDir():
			return badInputf("--%s %s: %s is a file, not a folder", name, dir, parent)
		case err == nil:
			return writable(name, dir, parent)
		case !missing(err):
			return badInputf("--%s %s: %v", name, dir, err)
		}
		next := filepath.Dir(parent)
		if next == parent {
			return badInputf("--%s %s: no existing parent folder", name, dir)
		}
		parent = next
	}
}

// missing reports a Stat error that means "not there": no such file, or
// a file where a folder of the path should be (walk up to find it).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// checkFile checks, before anything runs, that the file path (flag
// --name) can be written: it is not a folder, and its folder exists and
// is writable. Nothing is left behind.
func checkFile(name, path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return badInputf("--%s %s: is a folder; give a file name", name, path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return badInputf("--%s %s: folder %s does not exist", name, path, dir)
	case err != nil:
		return badInputf("--%s %s: %v", name, path, err)
	case !fi.IsDir():
		return badInputf("--%s %s: %s is not a folder", name, path, dir)
	}
	return writable(name, path, dir)
}

// writable tries to create (and removes) a file in dir: the only test
// that is true for every user, root included, and every file system
// (/proc refuses even root).
func writable(name, value, dir string) error {
	f, err := os.CreateTemp(dir, ".lockbench-write-test-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return badInputf("--%s %s: cannot write in %s: %v", name, value, dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}
