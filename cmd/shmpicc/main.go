// Command shmpicc compiles and links C programs against shmpi's MPI (the
// MPI 5.0 standard ABI, include/mpi.h, and ULFM's mpix.h and mpi-ext.h),
// as mpicc does:
//
//	shmpicc -O2 -o ring ring.c
//	shmrun -n 8 ./ring
//
// It runs the C compiler (cc, or $SHMPICC_CC) with the include path and,
// when it links, with the library libmpi_abi.so and an rpath to it. The
// library is built from this module's source on first use, and again
// whenever a source file is newer than it, with
// go build -buildmode=c-shared ./cabi; it lives beside the shmpicc binary
// (bin/libmpi_abi.so after go build -o bin/ ./...) or, if that directory
// is not writable, in $XDG_CACHE_HOME/shmpi. Invoked as shmpicxx (a link
// or a copy of this binary) it runs the C++ compiler (c++, or
// $SHMPICXX_CXX).
//
// Flags of its own: -show (or -showme) prints the command instead of
// running it; -shmpi-lib prints the library's path after making sure it
// is built.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

const libName = "libmpi_abi.so"

func main() {
	os.Exit(run(filepath.Base(os.Args[0]), os.Args[1:]))
}

// envBuilding marks the library's build: a shmpicc that runs inside it
// (as $CC) only compiles.
const envBuilding = "SHMPICC_BUILDING_LIB"

func run(name string, args []string) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "shmpicc: %v\n", err)
		return 1
	}
	cxx := strings.Contains(name, "cxx") || strings.Contains(name, "++")
	compiler := envOr("SHMPICC_CC", "cc")
	if cxx {
		compiler = envOr("SHMPICXX_CXX", "c++")
	}
	show := false
	var user []string
	for _, a := range args {
		switch a {
		case "-show", "-showme", "--showme":
			show = true
		case "-shmpi-lib":
			lib, err := ensureLib(root)
			if err != nil {
				fmt.Fprintf(os.Stderr, "shmpicc: %v\n", err)
				return 1
			}
			fmt.Println(lib)
			return 0
		default:
			user = append(user, a)
		}
	}
	if len(user) == 0 && !show {
		fmt.Fprintf(os.Stderr, "usage: %s [compiler flags] files... (runs %s with shmpi's MPI)\n", name, compiler)
		return 2
	}
	cmd := []string{compiler, "-I" + filepath.Join(root, "include")}
	cmd = append(cmd, user...)
	if links(user) && os.Getenv(envBuilding) == "" {
		var dir string
		if show {
			dir = libDir()
		} else {
			lib, err := ensureLib(root)
			if err != nil {
				fmt.Fprintf(os.Stderr, "shmpicc: %v\n", err)
				return 1
			}
			dir = filepath.Dir(lib)
		}
		cmd = append(cmd, "-L"+dir, "-Wl,-rpath,"+dir, "-lmpi_abi")
	}
	if show {
		fmt.Println(strings.Join(cmd, " "))
		return 0
	}
	path, err := exec.LookPath(compiler)
	if err != nil {
		fmt.Fprintf(os.Stderr, "shmpicc: no C compiler: %v (set SHMPICC_CC)\n", err)
		return 127
	}
	err = syscall.Exec(path, cmd, os.Environ())
	fmt.Fprintf(os.Stderr, "shmpicc: %v\n", err)
	return 126
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// links reports whether the compiler will link (no -c, -S, -E, -M...).
func links(args []string) bool {
	for _, a := range args {
		switch a {
		case "-c", "-S", "-E", "-M", "-MM", "-fsyntax-only", "--version", "-v", "-dumpversion", "-dumpmachine":
			return false
		}
	}
	return true
}

// moduleRoot finds shmpi's source: $SHMPI_ROOT, or the module this binary
// was built from (the path of this file when it was compiled).
func moduleRoot() (string, error) {
	if r := os.Getenv("SHMPI_ROOT"); r != "" {
		return r, checkRoot(r)
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot tell where shmpi's source is: set SHMPI_ROOT")
	}
	r := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	if err := checkRoot(r); err != nil {
		return "", fmt.Errorf("%v (set SHMPI_ROOT to shmpi's source)", err)
	}
	return r, nil
}

func checkRoot(r string) error {
	b, err := os.ReadFile(filepath.Join(r, "go.mod"))
	if err != nil || !strings.Contains(string(b), "module github.com/shmpi/shmpi\n") {
		return fmt.Errorf("%s is not shmpi's source", r)
	}
	if _, err := os.Stat(filepath.Join(r, "include", "mpi.h")); err != nil {
		return fmt.Errorf("%s has no include/mpi.h", r)
	}
	return nil
}

// libDir is where the library lives: $SHMPI_LIBDIR, the directory of
// this binary if writable, else $XDG_CACHE_HOME/shmpi.
func libDir() string {
	if d := os.Getenv("SHMPI_LIBDIR"); d != "" {
		return d
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			d := filepath.Dir(exe)
			if syscall.Access(d, 2 /* W_OK */) == nil {
				return d
			}
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "shmpi")
}

// sourceDirs are the parts of the module the library is built from.
var sourceDirs = []string{"cabi", "ranks", "coll", "ulfm", "win", "shm", "ring", "internal", "include"}

// newestSource is the latest modification time of the library's sources.
func newestSource(root string) (time.Time, error) {
	var newest time.Time
	consider := func(p string) {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
	}
	consider(filepath.Join(root, "go.mod"))
	consider(filepath.Join(root, "go.sum"))
	for _, d := range sourceDirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if e.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			n := e.Name()
			if strings.HasSuffix(n, "_test.go") {
				return nil
			}
			if strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".c") || strings.HasSuffix(n, ".h") || strings.HasSuffix(n, ".s") {
				consider(p)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return newest, err
		}
	}
	return newest, nil
}

// ensureLib builds the library if it is missing or older than its
// sources, under a lock so that parallel compilations build it once.
func ensureLib(root string) (string, error) {
	dir := libDir()
	lib := filepath.Join(dir, libName)
	newest, err := newestSource(root)
	if err != nil {
		return "", err
	}
	fresh := func() bool {
		fi, err := os.Stat(lib)
		return err == nil && !fi.ModTime().Before(newest)
	}
	if fresh() {
		return lib, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".libmpi_abi.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if fresh() {
		return lib, nil
	}
	// go build names the exports' header after the output, less its
	// extension.
	tmp := filepath.Join(dir, fmt.Sprintf(".libmpi_abi.%d.so", os.Getpid()))
	hdr := strings.TrimSuffix(tmp, ".so") + ".h"
	goBin := envOr("SHMPI_GO", "go")
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", tmp, "./cabi")
	cmd.Dir = root
	// cgo runs $CC, which a build system may have set to shmpicc itself:
	// the library is built with the real compilers.
	cmd.Env = append(os.Environ(), "CC="+envOr("SHMPICC_CC", "cc"), "CXX="+envOr("SHMPICXX_CXX", "c++"), envBuilding+"=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "shmpicc: building %s (go build -buildmode=c-shared ./cabi)\n", lib)
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		os.Remove(hdr)
		return "", fmt.Errorf("building %s: %v", libName, err)
	}
	os.Remove(hdr) // cgo's header of the exports: internal
	if err := os.Rename(tmp, lib); err != nil {
		return "", err
	}
	return lib, nil
}
