package main

/*
#include "cabi.h"
*/
import "C"

import (
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Dynamic processes: spawn, the parent, ports, names and join, over the Go
// API (ranks/spawn.go, ranks/ports.go). Info arguments are checked and
// their keys ignored (MPI lets an implementation ignore the reserved keys
// wdir, host, path, file, arch and soft): children run in the parent's
// directory on this node.

var (
	parentMu sync.Mutex
	// parentHandle is the handle MPI_Comm_get_parent gives, made at the
	// first call: every call returns the same one until the program
	// disconnects or frees it (MPI 4.0 §11.8.2).
	parentHandle handle
	parentGone   bool
)

// cStrings reads a NULL-terminated array of C strings (argv).
func cStrings(p unsafe.Pointer) []string {
	if p == nil {
		return nil
	}
	var out []string
	for a := (*[1 << 20]*C.char)(p); a[len(out)] != nil; {
		out = append(out, C.GoString(a[len(out)]))
	}
	return out
}

// fillErrcodes writes code into the first n entries of errcodes (NULL is
// MPI_ERRCODES_IGNORE).
func fillErrcodes(errcodes *C.int, n int, code int) {
	if errcodes == nil || n <= 0 {
		return
	}
	codes := unsafe.Slice(errcodes, n)
	for i := range codes {
		codes[i] = C.int(code)
	}
}

// spawnDone registers the intercommunicator of a spawn and fills the error
// codes: one per spawned process, MPI_SUCCESS (Spawn starts all of them
// or none), or the error's class for the maxprocs this rank was given.
func spawnDone(comm C.uintptr_t, o *commObj, c *ranks.Comm, err error, intercomm *C.uintptr_t, errcodes *C.int, maxprocs int, fname string) C.int {
	if err != nil {
		*intercomm = MPI_COMM_NULL
		fillErrcodes(errcodes, maxprocs, classOf(err))
		return fail(handle(comm), err, fname)
	}
	fillErrcodes(errcodes, c.RemoteSize(), MPI_SUCCESS)
	*intercomm = C.uintptr_t(newComm(c, o))
	return 0
}

// spawnArgs checks what every member of a spawn checks; bad arguments at
// the root are left to ranks' Spawn, which tells the other members.
func spawnArgs(comm C.uintptr_t, root C.int, intercomm *C.uintptr_t, fname string) (*commObj, C.int) {
	o, r := commArg(comm, fname)
	if o == nil {
		return nil, r
	}
	if intercomm == nil {
		return nil, failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if o.c.IsInter() {
		return nil, failCode(handle(comm), MPI_ERR_COMM, fname)
	}
	if root < 0 || int(root) >= o.c.Size() {
		return nil, failCode(handle(comm), MPI_ERR_ROOT, fname)
	}
	return o, 0
}

//export shmpi_MPI_Comm_spawn
func shmpi_MPI_Comm_spawn(command *C.char, argv unsafe.Pointer, maxprocs C.int, info C.uintptr_t, root C.int, comm C.uintptr_t, intercomm *C.uintptr_t, errcodes *C.int) C.int {
	const fname = "MPI_Comm_spawn"
	o, r := spawnArgs(comm, root, intercomm, fname)
	if o == nil {
		return r
	}
	// Command, argv, maxprocs and info matter at the root only.
	var cmd string
	var args []string
	if o.c.Rank() == int(root) {
		if _, r := infoArg(info, fname); r != 0 {
			return r
		}
		if command != nil {
			cmd = C.GoString(command)
		}
		args = cStrings(argv)
	}
	c, err := o.c.Spawn(cmd, args, int(maxprocs), int(root))
	return spawnDone(comm, o, c, err, intercomm, errcodes, int(maxprocs), fname)
}

//export shmpi_MPI_Comm_spawn_multiple
func shmpi_MPI_Comm_spawn_multiple(count C.int, commands unsafe.Pointer, argvs unsafe.Pointer, maxprocs *C.int, infos *C.uintptr_t, root C.int, comm C.uintptr_t, intercomm *C.uintptr_t, errcodes *C.int) C.int {
	const fname = "MPI_Comm_spawn_multiple"
	o, r := spawnArgs(comm, root, intercomm, fname)
	if o == nil {
		return r
	}
	var cmds []ranks.SpawnCmd
	total := 0
	if o.c.Rank() == int(root) && count > 0 && commands != nil && maxprocs != nil {
		cs := unsafe.Slice((**C.char)(commands), int(count))
		mp := unsafe.Slice(maxprocs, int(count))
		for i := range int(count) {
			if infos != nil {
				if _, r := infoArg(unsafe.Slice(infos, int(count))[i], fname); r != 0 {
					return r
				}
			}
			sc := ranks.SpawnCmd{MaxProcs: int(mp[i])}
			if cs[i] != nil {
				sc.Command = C.GoString(cs[i])
			}
			if argvs != nil {
				sc.Args = cStrings(unsafe.Slice((*unsafe.Pointer)(argvs), int(count))[i])
			}
			cmds = append(cmds, sc)
			total += int(mp[i])
		}
	}
	c, err := o.c.SpawnMultiple(cmds, int(root))
	return spawnDone(comm, o, c, err, intercomm, errcodes, total, fname)
}

//export shmpi_MPI_Comm_get_parent
func shmpi_MPI_Comm_get_parent(parent *C.uintptr_t) C.int {
	const fname = "MPI_Comm_get_parent"
	if parent == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	parentMu.Lock()
	defer parentMu.Unlock()
	*parent = MPI_COMM_NULL
	if parentHandle != 0 && getComm(parentHandle) != nil {
		*parent = C.uintptr_t(parentHandle)
		return 0
	}
	pc := world.Parent()
	if pc == nil || parentGone {
		return 0
	}
	parentHandle = newComm(pc, getComm(MPI_COMM_WORLD))
	*parent = C.uintptr_t(parentHandle)
	return 0
}

// forgetParent notes that h, if it is the parent's handle, was freed or
// disconnected: MPI_Comm_get_parent then returns MPI_COMM_NULL.
func forgetParent(h handle) {
	parentMu.Lock()
	if h == parentHandle {
		parentHandle, parentGone = 0, true
	}
	parentMu.Unlock()
}

//export shmpi_MPI_Comm_disconnect
func shmpi_MPI_Comm_disconnect(comm *C.uintptr_t) C.int {
	const fname = "MPI_Comm_disconnect"
	if comm == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	h := handle(*comm)
	o, r := commArg(*comm, fname)
	if o == nil {
		return r
	}
	if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
		return failCode(h, MPI_ERR_COMM, fname)
	}
	// Disconnect frees the communicator itself, also when it fails.
	o.deleteAllAttrs(h)
	publishGen(&commEnt(comms.slotOf(h)).gen, 0)
	unpinComm(o, commEnt(comms.slotOf(h)))
	comms.remove(h)
	forgetParent(h)
	*comm = MPI_COMM_NULL
	if err := o.c.Disconnect(); err != nil {
		// The handle is gone: the world's handler stands in for it.
		return fail(MPI_COMM_WORLD, err, fname)
	}
	return 0
}

// copyPort writes s into a C buffer of MPI_MAX_PORT_NAME bytes.
func copyPort(dst *C.char, s string) {
	b := unsafe.Slice((*byte)(unsafe.Pointer(dst)), MPI_MAX_PORT_NAME)
	n := copy(b[:MPI_MAX_PORT_NAME-1], s)
	b[n] = 0
}

//export shmpi_MPI_Open_port
func shmpi_MPI_Open_port(info C.uintptr_t, port *C.char) C.int {
	const fname = "MPI_Open_port"
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	if port == nil {
		return failCode(MPI_COMM_WORLD, MPI_ERR_ARG, fname)
	}
	if _, r := infoArg(info, fname); r != 0 {
		return r
	}
	name, err := world.OpenPort()
	if err != nil {
		return fail(MPI_COMM_WORLD, err, fname)
	}
	copyPort(port, name)
	return 0
}

//export shmpi_MPI_Close_port
func shmpi_MPI_Close_port(port *C.char) C.int {
	const fname = "MPI_Close_port"
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	if port == nil {
		return failCode(MPI_COMM_WORLD, MPI_ERR_ARG, fname)
	}
	if err := world.ClosePort(C.GoString(port)); err != nil {
		return fail(MPI_COMM_WORLD, err, fname)
	}
	return 0
}

func acceptConnect(port *C.char, info C.uintptr_t, root C.int, comm C.uintptr_t, newcomm *C.uintptr_t, accept bool, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if newcomm == nil || o.c.IsInter() {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if root < 0 || int(root) >= o.c.Size() {
		return failCode(handle(comm), MPI_ERR_ROOT, fname)
	}
	var name string
	timeout := time.Duration(-1)
	if o.c.Rank() == int(root) {
		in, r := infoArg(info, fname)
		if r != 0 {
			return r
		}
		// MPICH's key: the connector's wait for an accept, in seconds
		// (a value that is not a number of seconds is ignored, as a
		// hint).
		if v, ok, _ := in.Get("timeout"); ok {
			if sec, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && sec >= 0 && sec < 1e9 {
				timeout = time.Duration(sec * float64(time.Second))
			}
		}
		if port != nil {
			name = C.GoString(port)
		}
	}
	var c *ranks.Comm
	var err error
	switch {
	case accept:
		c, err = o.c.Accept(name, int(root))
	case timeout >= 0:
		c, err = o.c.ConnectTimeout(name, int(root), timeout)
	default:
		c, err = o.c.Connect(name, int(root))
	}
	if err != nil {
		*newcomm = MPI_COMM_NULL
		return fail(handle(comm), err, fname)
	}
	*newcomm = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Comm_accept
func shmpi_MPI_Comm_accept(port *C.char, info C.uintptr_t, root C.int, comm C.uintptr_t, newcomm *C.uintptr_t) C.int {
	return acceptConnect(port, info, root, comm, newcomm, true, "MPI_Comm_accept")
}

//export shmpi_MPI_Comm_connect
func shmpi_MPI_Comm_connect(port *C.char, info C.uintptr_t, root C.int, comm C.uintptr_t, newcomm *C.uintptr_t) C.int {
	return acceptConnect(port, info, root, comm, newcomm, false, "MPI_Comm_connect")
}

func nameArgs(service *C.char, info C.uintptr_t, port *C.char, fname string) (string, C.int) {
	if !live() {
		return "", failNone(MPI_ERR_OTHER, fname)
	}
	if service == nil || port == nil {
		return "", failCode(MPI_COMM_WORLD, MPI_ERR_ARG, fname)
	}
	if _, r := infoArg(info, fname); r != 0 {
		return "", r
	}
	return C.GoString(service), 0
}

//export shmpi_MPI_Publish_name
func shmpi_MPI_Publish_name(service *C.char, info C.uintptr_t, port *C.char) C.int {
	const fname = "MPI_Publish_name"
	s, r := nameArgs(service, info, port, fname)
	if r != 0 {
		return r
	}
	if err := world.PublishName(s, C.GoString(port)); err != nil {
		return fail(MPI_COMM_WORLD, err, fname)
	}
	return 0
}

//export shmpi_MPI_Lookup_name
func shmpi_MPI_Lookup_name(service *C.char, info C.uintptr_t, port *C.char) C.int {
	const fname = "MPI_Lookup_name"
	s, r := nameArgs(service, info, port, fname)
	if r != 0 {
		return r
	}
	name, err := world.LookupName(s)
	if err != nil {
		return fail(MPI_COMM_WORLD, err, fname)
	}
	copyPort(port, name)
	return 0
}

//export shmpi_MPI_Unpublish_name
func shmpi_MPI_Unpublish_name(service *C.char, info C.uintptr_t, port *C.char) C.int {
	const fname = "MPI_Unpublish_name"
	s, r := nameArgs(service, info, port, fname)
	if r != 0 {
		return r
	}
	if err := world.UnpublishName(s, C.GoString(port)); err != nil {
		return fail(MPI_COMM_WORLD, err, fname)
	}
	return 0
}

//export shmpi_MPI_Comm_join
func shmpi_MPI_Comm_join(fd C.int, intercomm *C.uintptr_t) C.int {
	const fname = "MPI_Comm_join"
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	if intercomm == nil {
		return failCode(MPI_COMM_WORLD, MPI_ERR_ARG, fname)
	}
	c, err := world.Join(int(fd))
	if err != nil {
		*intercomm = MPI_COMM_NULL
		return fail(MPI_COMM_WORLD, err, fname)
	}
	// A peer that went away gives no communicator and no error (ULFM).
	*intercomm = C.uintptr_t(newComm(c, getComm(MPI_COMM_WORLD)))
	return 0
}
