package mpio_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shmpi/shmpi/internal/examplejob"
	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
)

// The examples below are programs of several ranks, run as jobs by
// startJob under go test (package internal/examplejob); a program that
// shmrun starts needs no such line.
var startJob = examplejob.Start

func init() { examplejob.Serve(ExampleWriteAtAll, ExampleFile_SetView) }

// name is a file name that every rank of a job computes alike (the
// launcher is their parent).
func name(what string) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("mpio-example-%s-%d", what, os.Getppid()))
}

// Four ranks write their blocks of an array with one collective call;
// each then reads the next rank's block back.
func ExampleWriteAtAll() {
	if startJob(4) {
		return
	}
	world, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	comm := world.Comm()
	me := comm.Rank()

	f, err := mpio.Open(comm, name("blocks"), mpio.ModeCreate|mpio.ModeRdwr|mpio.ModeDeleteOnClose, nil)
	if err != nil {
		log.Fatal(err)
	}
	block := []int32{int32(10 * me), int32(10*me + 1), int32(10*me + 2)}
	// Offsets count bytes until SetView says otherwise.
	if _, err := mpio.WriteAtAll(f, int64(me*len(block)*4), block); err != nil {
		log.Fatal(err)
	}
	next := (me + 1) % comm.Size()
	got := make([]int32, 3)
	if _, err := mpio.ReadAtAll(f, int64(next*len(block)*4), got); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rank %d read %v\n", me, got)
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// rank 0 read [10 11 12]
	// rank 1 read [20 21 22]
	// rank 2 read [30 31 32]
	// rank 3 read [0 1 2]
}

// Three ranks write a block-cyclic array of float64 (blocks of two):
// each sees its blocks only, through a strided view, and writes them
// with one call; the shared file pointer then appends one value per
// rank in rank order.
func ExampleFile_SetView() {
	if startJob(3) {
		return
	}
	world, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	comm := world.Comm()
	me, p := comm.Rank(), comm.Size()

	f, err := mpio.Open(comm, name("cyclic"), mpio.ModeCreate|mpio.ModeRdwr|mpio.ModeDeleteOnClose, nil)
	if err != nil {
		log.Fatal(err)
	}
	esize := mpio.Etype[float64]()
	if err := f.SetView(int64(me*2*esize), esize, mpio.Filetype{Block: 2, Stride: 2 * p}); err != nil {
		log.Fatal(err)
	}
	// Blocks me, me+p, me+2p... of the array 0, 1, 2, ...
	mine := make([]float64, 4)
	for i := range mine {
		mine[i] = float64((i/2*p+me)*2 + i%2)
	}
	if _, err := mpio.WriteAll(f, mine); err != nil {
		log.Fatal(err)
	}
	// Back to a view of the whole file, in float64s.
	if err := f.SetView(0, esize, mpio.Contiguous); err != nil {
		log.Fatal(err)
	}
	if err := f.SeekShared(0, mpio.SeekEnd); err != nil {
		log.Fatal(err)
	}
	if _, err := mpio.WriteOrdered(f, []float64{float64(100 + me)}); err != nil {
		log.Fatal(err)
	}
	if me == 0 {
		all := make([]float64, 15)
		n, err := mpio.ReadAt(f, 0, all)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(all[:n])
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// [0 1 2 3 4 5 6 7 8 9 10 11 100 101 102]
}
