// Command shm_limits measures the hardware references the shmpi
// benchmarks are judged against, in the same process tree and session:
//
//   - the one-way hand-off of one cache line between two processes pinned
//     to different CPUs, spinning on one shared word (the floor for
//     small-message latency): the better of spinning with plain loads and
//     with a PAUSE in the loop, both printed;
//   - single-thread memcpy bandwidth (the reference for large messages):
//     the best of copying in 512 KiB pieces (regular stores, what a
//     tuned memcpy does for cache-sized data) and one copy() call (Go's
//     memmove switches to non-temporal stores above 1 MiB, much slower on
//     some machines); both are printed, and the best is the reference.
//
// It prints medians over several runs:
//
//	./shm_limits [-runs 7]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/klauspost/cpuid/v2"
	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/shm"
)

const envRole = "SHM_LIMITS_ROLE"

var (
	runs   = flag.Int("runs", 7, "runs per measurement (the median is reported)")
	trips  = flag.Int("trips", 200000, "round trips per cache-line run")
	noPin  = flag.Bool("nopin", false, "do not pin the two processes")
	cpuA   = flag.Int("cpu-a", 0, "CPU of the first process")
	cpuB   = flag.Int("cpu-b", 1, "CPU of the second process")
	verbos = flag.Bool("v", false, "print every run")
	only   = flag.Bool("handoff", false, "measure the cache-line hand-off only (a quick reference taken around another benchmark)")
)

func main() {
	flag.Parse()
	if role := os.Getenv(envRole); role != "" {
		child(role)
		return
	}
	seg, err := shm.Create(shm.Spec{Ranks: 2, Cores: runtime.NumCPU(), Areas: []shm.AreaSpec{{Count: 4, Stride: 64}}})
	if err != nil {
		log.Fatal(err)
	}
	defer seg.Close()
	fmt.Printf("# shm_limits: hardware references, median of %d runs\n", *runs)
	fmt.Printf("# cpus: %d, processes pinned: %v\n", runtime.NumCPU(), !*noPin)
	// cpuid's core counts are wrong in some VMs; its cache figures are not.
	fmt.Printf("# cpu: %s; cache line %d B, L1d %d KiB, L2 %d KiB, L3 %d KiB\n", cpuid.CPU.BrandName,
		cpuid.CPU.CacheLine, cpuid.CPU.Cache.L1D>>10, cpuid.CPU.Cache.L2>>10, max(cpuid.CPU.Cache.L3, 0)>>10)
	results := make(chan string, 2)
	procs := make([]*exec.Cmd, 2)
	// Start both from one locked thread whose affinity the child inherits.
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var orig unix.CPUSet
		unix.SchedGetaffinity(0, &orig)
		for i, cpu := range []int{*cpuA, *cpuB} {
			if !*noPin {
				var set unix.CPUSet
				set.Set(cpu)
				unix.SchedSetaffinity(0, &set)
			}
			cmd := exec.Command(os.Args[0], os.Args[1:]...)
			cmd.Env = append(os.Environ(), envRole+"="+strconv.Itoa(i), "SHM_LIMITS_JOB="+strconv.FormatUint(seg.JobID(), 16))
			cmd.ExtraFiles = []*os.File{seg.File()}
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				log.Fatal(err)
			}
			procs[i] = cmd
		}
		unix.SchedSetaffinity(0, &orig)
	}()
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			log.Fatal(err)
		}
	}
	close(results)
}

func child(role string) {
	job, _ := strconv.ParseUint(os.Getenv("SHM_LIMITS_JOB"), 16, 64)
	seg, err := shm.AttachFD(3, job)
	if err != nil {
		log.Fatal(err)
	}
	runtime.LockOSThread()
	a := seg.Area(0)
	word := seg.U64(a.Off)       // the line handed back and forth
	ready := seg.U64(a.Off + 64) // start barrier
	me := role == "0"
	var oneway, onewayPause []float64
	for run := 0; run < 2*(*runs+1); run++ { // runs 0 and 1 warm up
		pause := run%2 == 1
		base := uint64(run) * uint64(2**trips+2)
		// Barrier: both present before timing.
		ready.Add(1)
		for ready.Load() < uint64(2*(run+1)) {
		}
		start := time.Now()
		if me {
			for i := uint64(0); i < uint64(*trips); i++ {
				word.Store(base + 2*i + 1)
				for word.Load() != base+2*i+2 {
					if pause {
						spin.Pause()
					}
				}
			}
		} else {
			for i := uint64(0); i < uint64(*trips); i++ {
				for word.Load() != base+2*i+1 {
					if pause {
						spin.Pause()
					}
				}
				word.Store(base + 2*i + 2)
			}
		}
		el := time.Since(start)
		if run > 1 {
			ns := float64(el.Nanoseconds()) / float64(2**trips)
			if pause {
				onewayPause = append(onewayPause, ns)
			} else {
				oneway = append(oneway, ns)
			}
		}
		if me {
			for word.Load() != base+2*uint64(*trips) {
			}
			word.Store(base + uint64(2**trips+2))
		} else {
			for word.Load() != base+uint64(2**trips+2) {
			}
		}
	}
	if !me {
		return
	}
	if *verbos {
		fmt.Printf("# cacheline one-way runs (ns): %.1f; with PAUSE: %.1f\n", oneway, onewayPause)
	}
	fmt.Printf("%-28s %10.1f\n", "cacheline_oneway_ns", min(median(oneway), median(onewayPause)))
	fmt.Printf("%-28s %10.1f\n", "cacheline_oneway_plain_ns", median(oneway))
	fmt.Printf("%-28s %10.1f\n", "cacheline_oneway_pause_ns", median(onewayPause))
	if *only {
		return
	}
	for _, sz := range []int{64 << 10, 1 << 20, 4 << 20, 64 << 20} {
		one := memcpyGBps(sz, sz)
		pieces := memcpyGBps(sz, min(sz, 512<<10))
		fmt.Printf("%-28s %10.2f\n", fmt.Sprintf("memcpy_%s_GBps", human(sz)), max(one, pieces))
		fmt.Printf("%-28s %10.2f\n", fmt.Sprintf("memcpy_%s_onecall_GBps", human(sz)), one)
		fmt.Printf("%-28s %10.2f\n", fmt.Sprintf("memcpy_%s_pieces_GBps", human(sz)), pieces)
	}
}

// memcpyGBps is the median bandwidth of copying sz bytes between two
// buffers with copy() calls of piece bytes.
func memcpyGBps(sz, piece int) float64 {
	src := make([]byte, sz)
	dst := make([]byte, sz)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src)
	reps := max(1, (1<<30)/sz) // about 1 GiB per run
	var bw []float64
	for range *runs {
		start := time.Now()
		for range reps {
			for off := 0; off < sz; off += piece {
				copy(dst[off:off+piece], src[off:off+piece])
			}
		}
		bw = append(bw, float64(sz*reps)/time.Since(start).Seconds()/1e9)
	}
	if *verbos {
		fmt.Printf("# memcpy %s in %s pieces, runs (GB/s): %.2f\n", human(sz), human(piece), bw)
	}
	return median(bw)
}

func human(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
