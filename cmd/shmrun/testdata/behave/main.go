// Command behave is a rank program for shmrun's integration tests; -mode
// picks what it does. It never sleeps: every wait is a message or a read.
//
// If SHMRUN_TEST_PIDDIR is set, each rank first creates an empty file
// named by its pid there, so the test can check afterwards that every
// rank process it caused is gone.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
	"github.com/shmpi/shmpi/ulfm"
)

func main() {
	mode := flag.String("mode", "hello", "hello|stdin|env|ft|die|abandon|finalize-exit1|block|catch-signals|neighbours|affinity|abort|spawn")
	how := flag.String("how", "exit", "for -mode die and finalize-exit1: how rank 1 ends, exit (os.Exit(3), or 1 after Finalize) or kill (SIGKILL); for -mode spawn: kill makes child 1 SIGKILL itself")
	after := flag.String("after", "report", "for -mode die: what survivors do once rank 1 is gone, report (print and finalize) or block (wait to be killed)")
	failures := flag.Int("failures", 1, "for -mode neighbours: how many failed ranks a survivor waits to know of")
	code := flag.Int("code", 7, "for -mode abort: the code of Abort")
	on := flag.String("on", "world", "for -mode abort: the communicator of Abort, world, dup, split (one of its own), revoked or freed (a dup)")
	flag.Parse()
	log.SetFlags(0)
	if dir := os.Getenv("SHMRUN_TEST_PIDDIR"); dir != "" {
		// Before Init, so that even a rank that fails in Init is checked.
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), nil, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	c := w.Comm()
	me, n := c.Rank(), c.Size()
	log.SetPrefix(fmt.Sprintf("behave rank %d: ", me))
	switch *mode {
	case "hello":
		hello(me)
	case "stdin":
		stdin(c, me, n)
	case "env":
		fmt.Printf("rank %d env %q\n", me, os.Getenv("SHMRUN_TEST_VAR"))
	case "ft":
		fmt.Printf("rank %d ft %v\n", me, w.FT())
	case "affinity":
		// After Init, which may have raised GOMAXPROCS.
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("rank %d cpus %v gomaxprocs %d\n", me, launch.CPUList(&set), runtime.GOMAXPROCS(0))
	case "die":
		die(c, me, n, *how, *after)
	case "neighbours":
		neighbours(c, me, n, *failures)
	case "abort":
		abort(w, c, me, n, *code, *on)
	case "spawn":
		spawn(w, c, me, *how, *after)
	case "abandon":
		os.Exit(0) // without Finalize: a failure despite the code
	case "finalize-exit1":
		w.Finalize()
		if me == 1 {
			if *how == "kill" {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				log.Fatal("survived SIGKILL")
			}
			os.Exit(1)
		}
		return
	case "block":
		// Every rank receives from its successor, which never sends: the
		// whole job blocks in Recv until it is killed.
		fmt.Printf("ready %d pid %d\n", me, os.Getpid())
		_, err := ranks.Recv(c, make([]byte, 1), (me+1)%n, 99)
		hang(err)
	case "catch-signals":
		// As "block", but SIGINT and SIGTERM do not end the rank: it says
		// it got them and goes on waiting, so only SIGKILL ends it.
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			for s := range sigs {
				fmt.Printf("rank %d caught %v\n", me, s)
			}
		}()
		fmt.Printf("ready %d pid %d\n", me, os.Getpid())
		_, err := ranks.Recv(c, make([]byte, 1), (me+1)%n, 99)
		hang(err)
	default:
		log.Fatalf("unknown mode %q", *mode)
	}
	if err := w.Finalize(); err != nil {
		log.Fatal(err)
	}
}

// hello writes lines to stdout and stderr in pieces (separate write
// calls), so that a launcher that tagged reads rather than lines would
// split them, and ends stdout with a line that has no newline.
func hello(me int) {
	for i := range 50 {
		os.Stdout.WriteString("hello ")
		os.Stdout.WriteString(fmt.Sprintf("from %d line %d\n", me, i))
	}
	os.Stderr.WriteString("err ")
	os.Stderr.WriteString(fmt.Sprintf("from %d\n", me))
	os.Stdout.WriteString(fmt.Sprintf("tail from %d", me))
}

// stdin: ranks other than 0 read their standard input to the end and tell
// rank 0 how many bytes they got; only then does rank 0 announce that it
// waits for input (the test writes it only after that line, so the other
// ranks must have seen EOF while shmrun's stdin was still open). Rank 0
// then reads its stdin and sends it to every other rank.
func stdin(c *ranks.Comm, me, n int) {
	if me != 0 {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			log.Fatal(err)
		}
		if err := ranks.Send(c, []int64{int64(len(b))}, 0, 1); err != nil {
			log.Fatal(err)
		}
		buf := make([]byte, 4096)
		st, err := ranks.Recv(c, buf, 0, 2)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("rank %d stdin %q, from rank 0 %q\n", me, b, buf[:st.Bytes])
		return
	}
	for r := 1; r < n; r++ {
		got := []int64{-1}
		if _, err := ranks.Recv(c, got, r, 1); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("rank 0: rank %d read %d bytes to EOF\n", r, got[0])
	}
	fmt.Println("rank 0 waiting for stdin")
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rank 0 stdin %q\n", b)
	for r := 1; r < n; r++ {
		if err := ranks.Send(c, b, r, 2); err != nil {
			log.Fatal(err)
		}
	}
}

// hang is where a rank that must wait to be killed goes when its Recv
// returned after all, which it may only do because the peer failed: that
// happens while the launcher is killing the job, one rank after another.
// The rank must not exit by itself then (it would race with the end the
// test expects), so it waits on a pipe that never delivers.
func hang(err error) {
	if !errors.Is(err, ranks.ErrProcFailed) {
		log.Fatalf("Recv returned: %v", err)
	}
	r, w, perr := os.Pipe()
	if perr != nil {
		log.Fatal(perr)
	}
	r.Read(make([]byte, 1))
	runtime.KeepAlive(w) // a collected w would close the pipe
	log.Fatal("pipe read returned")
}

// die: rank 1 waits until every other rank has sent to it (so that they
// are about to block receiving from it), then dies without finalizing.
func die(c *ranks.Comm, me, n int, how, after string) {
	if me == 1 {
		for range n - 1 {
			if _, err := ranks.Recv(c, make([]byte, 1), ranks.AnySource, 1); err != nil {
				log.Fatal(err)
			}
		}
		if how == "kill" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			log.Fatal("survived SIGKILL")
		}
		os.Exit(3)
	}
	if err := ranks.Send(c, []byte{1}, 1, 1); err != nil {
		log.Fatal(err)
	}
	_, err := ranks.Recv(c, make([]byte, 1), 1, 2)
	if !errors.Is(err, ranks.ErrProcFailed) {
		fmt.Printf("rank %d got %v\n", me, err)
		os.Exit(1)
	}
	if after == "block" {
		// Without --ft shmrun must kill us: wait for a message from
		// another survivor that never comes.
		peer := 0
		if me == 0 {
			peer = n - 1
		}
		_, err := ranks.Recv(c, make([]byte, 1), peer, 98)
		hang(err)
	}
	fmt.Printf("rank %d got ErrProcFailed\n", me)
}

// neighbours: every rank exchanges small messages with its two
// neighbours on a ring, in a loop that only an error ends: the ranks
// that SHMPI_KILL names die in it (shmrun --kill). Each survivor says
// which error stopped it: ErrProcFailed from a neighbour that died, or
// ErrPeerFinalized from one that stopped and finalized before it. Then
// it waits, in blocking AnySource receives that nothing matches (each
// returns ErrProcFailed while a failure is unacknowledged), until it
// has acknowledged want failed ranks, and says which.
func neighbours(c *ranks.Comm, me, n, want int) {
	left, right := (me+n-1)%n, (me+1)%n
	in := []int64{0}
	var err error
	peer := -1
	for i := int64(0); err == nil; i++ {
		out := []int64{i}
		if err = ranks.Send(c, out, right, 1); err != nil {
			peer = right
		} else if err = ranks.Send(c, out, left, 2); err != nil {
			peer = left
		} else if _, err = ranks.Recv(c, in, left, 1); err != nil {
			peer = left
		} else if _, err = ranks.Recv(c, in, right, 2); err != nil {
			peer = right
		} else if in[0] != i {
			log.Fatalf("exchange %d: got %d from rank %d", i, in[0], right)
		}
	}
	switch {
	case errors.Is(err, ranks.ErrProcFailed):
		fmt.Printf("rank %d stopped: ErrProcFailed from rank %d\n", me, peer)
	case errors.Is(err, ranks.ErrPeerFinalized):
		fmt.Printf("rank %d stopped: ErrPeerFinalized from rank %d\n", me, peer)
	default:
		log.Fatalf("exchange with rank %d: %v", peer, err)
	}
	var acked []int
	for len(acked) < want {
		_, err := ranks.Recv(c, make([]byte, 1), ranks.AnySource, 77)
		if !errors.Is(err, ranks.ErrProcFailed) {
			log.Fatalf("AnySource Recv: %v, want ErrProcFailed", err)
		}
		if err := c.FailureAck(); err != nil {
			log.Fatal(err)
		}
		now, err := c.FailureGetAcked()
		if err != nil {
			log.Fatal(err)
		}
		if len(now) == len(acked) {
			// Every other rank has failed or finalized: no more
			// failures can come.
			break
		}
		acked = now
	}
	fmt.Printf("rank %d sees failed %v\n", me, acked)
}

// abort: the last rank calls Abort(code) on the communicator -on names
// once every other rank is blocked: rank 0 in a Recv from it, rank 1 in
// a barrier it never joins (with 3 or more ranks), the others asleep in
// time.Sleep. Abort must end them all. A singleton aborts at once.
func abort(w *ranks.World, c *ranks.Comm, me, n, code int, on string) {
	ac := c
	switch on {
	case "world":
	case "dup", "revoked", "freed":
		d, err := c.Dup()
		if err != nil {
			log.Fatal(err)
		}
		ac = d
	case "split":
		s, err := c.Split(me, 0)
		if err != nil {
			log.Fatal(err)
		}
		ac = s
	default:
		log.Fatalf("unknown -on %q", on)
	}
	aborter := n - 1
	fmt.Printf("ready %d pid %d\n", me, os.Getpid())
	switch {
	case me == aborter:
		// Wait until the ranks in Recv and Barrier sleep there (a wait
		// records itself only when it sleeps) and the others say they
		// go to sleep.
		for r := range n - 1 {
			if r >= 2 {
				if _, err := ranks.Recv(c, make([]byte, 1), r, 3); err != nil {
					log.Fatal(err)
				}
				continue
			}
			// Rank 0's Recv from us with tag 99, not one inside Dup or
			// Split.
			blocked := func(f ranks.Fate) bool {
				if r == 0 {
					return f.Blocked && f.Op == "Recv" && f.OpPeer == aborter && f.OpTag == 99
				}
				return f.Blocked && f.Op == "Barrier"
			}
			for !blocked(w.Fates()[r]) {
				runtime.Gosched()
			}
		}
		switch on {
		case "revoked":
			if err := ulfm.Revoke(ac); err != nil {
				log.Fatal(err)
			}
		case "freed":
			if err := ac.Free(); err != nil {
				log.Fatal(err)
			}
		}
		err := ac.Abort(code)
		log.Fatalf("Abort returned: %v", err)
	case me == 0:
		_, err := ranks.Recv(c, make([]byte, 1), aborter, 99)
		log.Fatalf("Recv returned: %v", err)
	case me == 1:
		err := coll.Barrier(c)
		log.Fatalf("Barrier returned: %v", err)
	default:
		if err := ranks.Send(c, []byte{1}, aborter, 3); err != nil {
			log.Fatal(err)
		}
		time.Sleep(time.Hour)
		log.Fatal("slept an hour")
	}
}

// spawn: the world's rank 0 spawns 3 children running this program
// (-mode spawn again); each child tells parent 0 its rank and
// disconnects. With -how kill, child 1 SIGKILLs itself first. A spawn
// past the universe prints ErrSpawn. With -after block, once parent 0
// has heard every child, every rank says "ready R pid P" (R: the world's
// rank, then 2 + the child's) and blocks until it is killed.
func spawn(w *ranks.World, c *ranks.Comm, me int, how, after string) {
	block := func(id int) {
		fmt.Printf("ready %d pid %d\n", id, os.Getpid())
		_, err := ranks.Recv(c, make([]byte, 1), (me+1)%c.Size(), 99)
		hang(err)
	}
	if p := w.Parent(); p != nil {
		if how == "kill" && me == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			log.Fatal("survived SIGKILL")
		}
		if err := ranks.Send(p, []int{me}, 0, 1); err != nil {
			log.Fatal(err)
		}
		if after == "block" {
			// After parent 0's go-ahead: it has heard every child.
			if _, err := ranks.Recv(p, make([]byte, 1), 0, 2); err != nil {
				log.Fatal(err)
			}
			block(p.RemoteSize() + me)
		}
		if err := p.Disconnect(); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("child %d of %d done\n", me, c.Size())
		return
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	ic, err := c.Spawn(exe, os.Args[1:], 3, 0)
	if errors.Is(err, ranks.ErrSpawn) {
		fmt.Printf("rank %d got ErrSpawn\n", me)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	if me == 0 {
		for child := range 3 {
			b := []int{-1}
			_, err := ranks.Recv(ic, b, child, 1)
			switch {
			case err == nil:
				fmt.Printf("rank 0 heard child %d\n", b[0])
			case errors.Is(err, ranks.ErrProcFailed):
				fmt.Printf("rank 0: child %d failed\n", child)
			default:
				log.Fatal(err)
			}
		}
	}
	if after == "block" {
		if me == 0 {
			for child := range 3 {
				if err := ranks.Send(ic, []byte{1}, child, 2); err != nil {
					log.Fatal(err)
				}
			}
		}
		block(me)
	}
	err = ic.Disconnect()
	switch {
	case err == nil:
		fmt.Printf("rank %d disconnected\n", me)
	case errors.Is(err, ranks.ErrProcFailed):
		fmt.Printf("rank %d disconnected: ErrProcFailed\n", me)
	default:
		log.Fatal(err)
	}
}
