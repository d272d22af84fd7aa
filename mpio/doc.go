// Package mpio is MPI-IO: files that the members of a communicator open
// together (Open, Close, Delete), read and write at
// explicit offsets (ReadAt, WriteAt), through each rank's file pointer
// (Read, Write, Seek) or the shared one (ReadShared, WriteShared,
// ReadOrdered, WriteOrdered, SeekShared), independently or collectively
// (ReadAtAll, WriteAtAll, ReadAll, WriteAll), blocking or not (IreadAt,
// IwriteAt, ... returning a *ranks.Request), through views
// (SetView: a displacement, an etype, a contiguous or strided filetype),
// in atomic mode or not (SetAtomicity); with SetSize, GetSize,
// Preallocate and Sync; and the ULFM chapter's file semantics: Revoke
// (MPI_File_revoke), ErrProcFailed when a member's failure stops a
// collective file call, and Close that completes after failures.
//
// Buffers are slices of plain types, as in the rest of shmpi; offsets,
// file pointers and counts are in etypes of the view (bytes until
// SetView says otherwise), and a buffer must hold a whole number of
// etypes. Every call returns a *ranks.Error whose class is one of this
// package's (ErrNoSuchFile, ErrAmode, ErrAccess...) or of package ranks'
// (ErrArg, ErrProcFailed, ErrRevoked...).
//
// Collective reads and writes go through shared memory that every member
// maps: the members copy their pieces into a staging buffer at the place
// of the file range they fall in, and a few aggregators write (or read)
// each range with one large pwrite (pread), with no message (collective.go).
// A block-distributed array is thus written with large contiguous writes
// whatever the pieces' sizes; benchmarks/io_write compares it with one
// process writing the same bytes, and with the members' own small writes.
//
// The members of a communicator that spans nodes (package node) share
// memory only with their node's: there the shared file pointer lives in a
// hidden file beside the file, under a byte-range lock, and collective
// accesses aggregate within each node (span.go). The file must then be on
// a file system that every node sees.
//
// # Failures
//
// A collective call whose member has failed returns ErrProcFailed (at
// once when the failure is known, else when the call waits for that
// member), and the file pointers are then undefined: Seek (SeekSet) and
// SeekShared put them back. Independent calls need no other member and
// go on working. Revoke, which is not collective, makes every later call
// on the file that is not local return ErrRevoked at every member, and
// ends the collective calls blocked on it. The advice of the ULFM
// chapter's 15.2.5 applies: Agree over a communicator of the file's
// group to learn whether a collective call completed everywhere; to
// carry on after a failure, Shrink that communicator, Close the file
// (which then returns the error and frees this rank's resources) and
// Open it again over the shrunk communicator. The chapter names no other
// file call (no get-failed for files): GetFailed of a communicator of
// the file's group (Group) answers it.
package mpio
