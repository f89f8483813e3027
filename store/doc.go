// Package store keeps a groupd node's durable state: its node ID, the
// group-number counter, the boot incarnation, the last group it was in,
// the highest leadership term it has seen and the quorum rule it last
// applied.
//
// The counter is what makes group numbers unique across crashes (design §1):
// before a node announces a new group number seq.id it saves a counter ≥ seq
// with [Store.Save], and only once Save has returned nil may the number be
// used. If Save returns an error, the caller must not use the number.
//
// # Files
//
// A data directory (created 0700 if missing) holds:
//
//	LOCK         flock'd by the running groupd; holds its PID for error messages
//	state.a      slot A (0600)
//	state.b      slot B (0600)
//	state.?.tmp  the slot being written; left over only if a Save was interrupted
//
// # Slot format (version 3)
//
// Each slot is exactly 88 bytes, big-endian:
//
//	offset  size  field
//	     0     4  magic "GRPD"
//	     4     4  format version, 3
//	     8     8  generation: 1 for the first Save, +1 for every Save
//	    16     8  node ID (never 0)
//	    24     8  counter: highest group-number Seq this node may have used
//	    32     8  boot incarnation
//	    40     8  last group: Seq
//	    48     8  last group: coordinator ID
//	    56     8  term: Seq (the highest leadership term seen)
//	    64     8  term: leader ID
//	    72     4  quorum rule: voters (0: as configured)
//	    76     8  quorum rule: tie-breaker
//	    84     4  CRC-32C (Castagnoli) of bytes 0..83
//
// Version 2, written before the quorum rule was saved, is the same up to
// the term, with its CRC at 72 (76 bytes); version 1, written before the
// leader lease, up to the last group, with its CRC at 56 (60 bytes). They
// load with zero for what they lack, and the next save writes version 3.
//
// A slot is valid when all of these hold: the length is that of its
// version, the magic and version match, the checksum matches, the
// generation is not 0, the node ID is not 0, and a last group created by
// this node (coordinator ID = node ID) has a Seq not above the counter.
//
// # Two slots
//
// Save writes the next generation over the older slot (or over the slot that
// is missing or invalid), so the slot holding the newest saved state is never
// touched while the next one is written. [Store.Load] reads both and takes the
// valid slot with the higher generation. Whatever happens to the write (a
// crash, a torn or lost write, a full disk), the state of the last Save that
// returned nil is still in one of the slots.
//
// # Why write, fsync, rename, fsync the directory
//
// Save writes the record to state.X.tmp, fsyncs that file, renames it over
// state.X, and fsyncs the directory. The file fsync makes the bytes durable
// before they get the slot's name, so after a power loss the slot holds
// either its old record or the complete new one. rename is atomic, so a crash
// never leaves a half-written slot. But a rename is a change to the
// directory, and only an fsync of the directory makes it durable: without it,
// a power loss after Save returned could bring back the old slot, and the
// node would reuse a group number it had already announced. Open likewise
// fsyncs the parent of a directory it creates.
//
// # Corruption
//
// Load never resets the counter on its own. If one slot is invalid and the
// other valid, it loads the valid one and reports the invalid one through
// [Store.Warnings] (the next Save overwrites it). If state files exist but
// neither is valid, Load returns a [*CorruptError] that names each file and
// why it was rejected, and it leaves the files as they are. The operator then
// either restores the files from a backup, or moves them out of the directory
// and restarts groupd with a counter above every group number this node has
// created (InitOptions.MinCounter, the --min-counter flag). Starting from
// counter 0 instead could reuse a group number the rest of the LAN still
// remembers, which breaks the protocol's safety (design §4, S1).
//
// A slot that cannot be read at all (an I/O or permission error, as opposed
// to bad content) makes Load fail with that error, without falling back to
// the other slot, which might be older.
//
// # Locking
//
// Open takes an exclusive, non-blocking flock(2) on LOCK, so two groupd
// processes never share a data directory. The kernel releases the lock when
// the process exits, even on SIGKILL; the file descriptor is close-on-exec,
// so hook commands do not inherit it.
package store
