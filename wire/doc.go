// Package wire defines the messages groupd nodes exchange and their binary
// encoding.
//
// Every packet is one UDP datagram: a fixed header (protocol version, message
// type, sender, sender's rank and boot incarnation, packet counter, sender's
// group number and state) followed by a type-specific body. The type enum is
// append-only: a value, once released, keeps its meaning forever.
//
// The algorithm packages (invitation, bully) only build and read the Go
// values defined here; the runtime encodes them with Encode/Decode, optionally
// seals them with a shared key, and rejects replays with a ReplayWindow.
package wire
