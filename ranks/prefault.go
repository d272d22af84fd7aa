package ranks

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// prefaultImage maps every page of the program's own file (code and
// read-only data) into this process's page tables at Init. Pages of the
// binary are in the page cache, but each first touch still costs a minor
// fault (several µs here, with page-table isolation), and the paths that
// run rarely (a failure's error, a deadline report) would pay dozens of
// them at the moment that matters most. Best effort: errors are ignored.
func prefaultImage() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// lo-hi perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != exe || f[1][0] != 'r' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || b <= a {
			continue
		}
		unix.Syscall(unix.SYS_MADVISE, uintptr(a), uintptr(b-a), unix.MADV_POPULATE_READ)
	}
}

// warmErrors runs once what a program's first errors.Is on a failure's
// error would run for the first time: the runtime records each pair of a
// type and an interface it was asserted to in a table, in fresh memory.
// In ulfm_recovery (errors.Is(err, ErrProcFailed)) that was 2 page faults
// per survivor, 126 of the 370 in the 5 ms after a kill at 64 ranks
// (perf, 2026-11-27), on the CPUs the survivors take turns on.
func warmErrors() {
	var err error = &Error{Class: ErrProcFailed, Rank: -1}
	if errors.Is(err, ErrRevoked) {
		panic("ranks: a failure's error is a revocation")
	}
}
