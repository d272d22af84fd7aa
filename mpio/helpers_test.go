package mpio_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// envDir passes the test's temporary directory to its rank processes,
// which must not make their own: they end with syscall.Exit, so no
// cleanup of theirs would run.
const envDir = "MPIO_TEST_DIR"

// job runs body on o.N ranks with the test's temporary directory.
func job(t *testing.T, o ranktest.Options, body func(r *ranktest.R, dir string)) {
	t.Helper()
	dir := os.Getenv(envDir)
	if _, rank := os.LookupEnv(ranktest.EnvRun); !rank || dir == "" {
		dir = t.TempDir()
	}
	o.Env = append(o.Env, envDir+"="+dir)
	if o.N == 0 {
		o.N = 1
	}
	o.Quiet = true
	ranktest.RunOpts(t, o, func(r *ranktest.R) { body(r, dir) })
}

func wantClass(r *ranktest.R, err, class error, what string) {
	if !errors.Is(err, class) {
		r.Errorf("%s: %v, want %v", what, err, class)
	}
}

func open(r *ranktest.R, c *ranks.Comm, name string, amode int, info *ranks.Info) *mpio.File {
	f, err := mpio.Open(c, name, amode, info)
	r.Check(err, "Open "+filepath.Base(name))
	return f
}

// hints makes an Info with the collective buffering hints (0: default)
// and more keys and values.
func hints(aggs, buf int, kv ...string) *ranks.Info {
	in := ranks.NewInfo()
	for i := 0; i+1 < len(kv); i += 2 {
		in.Set(kv[i], kv[i+1])
	}
	if aggs > 0 {
		in.Set("cb_nodes", strconv.Itoa(aggs))
	}
	if buf > 0 {
		in.Set("cb_buffer_size", strconv.Itoa(buf))
	}
	return in
}

// pattern is the byte at global position i of the test data: no short
// period, so a piece in the wrong place shows.
func pattern(i int64) byte { return byte((uint64(i)*2654435761)>>13 ^ uint64(i)>>9) }

func patternBytes(from, n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern(from + int64(i))
	}
	return b
}

// sameFile compares file got with the bytes want; on a difference it
// says where the first one is.
func sameFile(r *ranktest.R, got string, want []byte, what string) {
	b, err := os.ReadFile(got)
	r.Check(err, "read "+got)
	if bytes.Equal(b, want) {
		return
	}
	if len(b) != len(want) {
		r.Errorf("%s: %d bytes, want %d", what, len(b), len(want))
	}
	for i := range min(len(b), len(want)) {
		if b[i] != want[i] {
			r.Errorf("%s: first difference at byte %d: %#x, want %#x", what, i, b[i], want[i])
			return
		}
	}
}

// fds counts this process's open descriptors.
func fds(r *ranktest.R) int {
	d, err := os.ReadDir("/proc/self/fd")
	r.Check(err, "read /proc/self/fd")
	return len(d)
}
